// The catalogue of known causes (docs/workflow.md, "Known causes"): precision differences
// between graph mode and eager that experience explains, each with where it applies, how it is
// detected and its fix. A cause is detected from what a run recorded (the plugin's status.json,
// the dump's statistics) or by an A/B experiment: the compiled run again with one thing flipped.
#pragma once

#include "steps/layer.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "orchestrator/workflow/diagnostics.h"
#include "runspec/plugin_status.h"

namespace diagnose {

// A run of this invocation as the detectors read it.
struct RecordedRun {
  std::string name;      // "<step>/<run>"
  PluginStatus status;   // the plugin's status.json (its spec says mode, backend, device, dtype)
  std::string dump_dir;  // "" when the run dumped nothing
  std::string command;   // the command that reproduces it
  std::string run_dir;   // its directory (outputs/ holds its final outputs)
};

// The run's mode as its spec says: "eager" or "compiled" ("" when its status.json does not say).
std::string run_mode(const RecordedRun& run);

// What a detector saw: the evidence in words; decisive when the cause alone makes graph mode
// and eager differ, whatever else is wrong.
struct Detection {
  std::string evidence;
  bool decisive = false;
  std::string op;  // the op it points at, if any
};

// What an A/B experiment changes in the compiled run: a merge patch on the run spec
// (switches.inductor keys, deterministic...), environment variables, arguments appended.
struct CauseFlip {
  RunSpec spec;
  std::map<std::string, std::string> env;
  std::vector<std::string> args;
};

struct KnownCause {
  std::string name;
  std::string checks;  // what it checks, in words
  // Where it applies; empty: anywhere. Device "cuda" also matches "cuda:1".
  std::vector<std::string> backends, devices, dtypes;
  // Configuration or dump detector: what `run` shows of the cause, nullopt when nothing.
  std::function<std::optional<Detection>(const RecordedRun& run)> detect;
  // An A/B experiment, run when the compiled graph fails; `wanted` says whether the runs so far
  // make it worth a process (empty: always).
  std::optional<CauseFlip> flip;
  std::function<bool(const std::vector<RecordedRun>& runs)> wanted;
  std::string fix;
};

// The built-in catalogue, detectors first, then the experiments.
const std::vector<KnownCause>& known_causes();

// Whether `cause` applies to runs with this backend, device and dtype ("" dtype: float32).
bool cause_applies(const KnownCause& cause, const std::string& backend, const std::string& device,
                   const std::string& dtype);

// The detectors, each on one run (exposed for their tests).
std::optional<Detection> detect_training_dropout(const RecordedRun& run);
std::optional<Detection> detect_tf32(const RecordedRun& run);
std::optional<Detection> detect_nondeterministic_algorithms(const RecordedRun& run);
std::optional<Detection> detect_graph_breaks(const RecordedRun& run);
// Recompiles whose failed guard is about sizes (Dynamo's reasons in status.json); other
// recompiles (dtype, requires_grad, a Python value) are not this cause.
std::optional<Detection> detect_shape_recompiles(const RecordedRun& run);
std::optional<Detection> detect_torchair_options(const RecordedRun& run);
std::optional<Detection> detect_eager_overflow(const RecordedRun& run);
std::optional<Detection> detect_near_overflow(const RecordedRun& run);
// Run-to-run differences of two runs of one configuration (their specs equal but for what they
// dump and check on the side): the first op call, in execution order per rank, whose input records are bitwise equal
// in both dumps while an output is not; random ops (their generator's doing) and ops returning
// uninitialised memory are passed over. Decisive when the final outputs differ too.
std::optional<Detection> detect_nondeterministic_op(const RecordedRun& run, const RecordedRun& repeat);
// Whether an eager dump among `runs` holds a random op (dropout, rand, normal...).
bool records_random_ops(const std::vector<RecordedRun>& runs);
// Whether a compiled run that dumped Inductor's buffers (a compile of its own, its FX graph cache
// off) and an undumped compiled run of the same configuration end with different final outputs.
bool dumping_compile_differs(const std::vector<RecordedRun>& runs);

// The catalogue entry of detect_nondeterministic_op (a detector of two runs, not of one).
const KnownCause& nondeterministic_op_cause();

// Run-to-run differences of two runs of the same configuration: the final outputs (outputs/
// of each run directory) whose recorded hashes differ, by name; nullopt when either side has
// no readable outputs.
std::optional<std::vector<std::string>> differing_outputs(const std::string& run_dir_a, const std::string& run_dir_b);

// A workflow's own causes (a step's `causes:` list): each {name, flip: {env, args, switches,
// spec}, expect, fix}, as experiments. `diagnostics` gets file:line:column errors; the entries
// that are malformed are left out.
std::vector<KnownCause> user_causes(const YAML::Node& causes, const std::string& where, Diagnostics* diagnostics);

}  // namespace diagnose
