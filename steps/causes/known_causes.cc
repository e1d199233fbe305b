#include "steps/causes/known_causes.h"

#include <algorithm>
#include <cmath>

#include "compare/manifest.h"
#include "compare/match.h"
#include "compare/uninitialized_ops.h"
#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/step.h"
#include "steps/json_text.h"
#include "steps/judgement/nan_origin.h"

namespace diagnose {

namespace {

// The largest finite float16; a value past half of it overflows at the next doubling.
constexpr double kFloat16Max = 65504;

const nlohmann::json& field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json none;
  return object.is_object() && object.contains(key) ? object.at(key) : none;
}

bool on_device(const std::string& device, const std::string& wanted) {
  return device == wanted || device.rfind(wanted + ":", 0) == 0;
}

bool random_op(const std::string& op) {
  static const std::vector<std::string> kRandom = {"bernoulli", "dropout",     "rand",        "normal",
                                                   "uniform",   "multinomial", "exponential", "poisson",
                                                   "cauchy",    "geometric",   "log_normal"};
  return std::any_of(kRandom.begin(), kRandom.end(),
                     [&](const std::string& r) { return op.find(r) != std::string::npos; });
}

KnownCause detector(std::string name, std::string checks, std::vector<std::string> devices,
                    std::vector<std::string> dtypes, std::function<std::optional<Detection>(const RecordedRun&)> detect,
                    std::string fix) {
  return {std::move(name),   std::move(checks), {},      std::move(devices), std::move(dtypes),
          std::move(detect), std::nullopt,      nullptr, std::move(fix)};
}

KnownCause experiment(std::string name, std::string checks, std::vector<std::string> backends,
                      std::vector<std::string> devices, std::vector<std::string> dtypes, CauseFlip flip,
                      std::string fix) {
  return {std::move(name), std::move(checks), std::move(backends), std::move(devices), std::move(dtypes), nullptr,
          std::move(flip), nullptr,           std::move(fix)};
}

CauseFlip inductor_switch(const std::string& key, bool value = true) {
  CauseFlip flip;
  flip.spec.run_switches().inductor = nlohmann::json{{key, value}};
  return flip;
}

CauseFlip deterministic_algorithms() {
  CauseFlip flip;
  flip.spec.deterministic = true;
  return flip;
}

}  // namespace

std::string run_mode(const RecordedRun& run) { return run.status.spec_fields.mode.value_or(""); }

std::optional<Detection> detect_training_dropout(const RecordedRun& run) {
  const std::vector<ActiveDropout>& dropout = run.status.configuration.active_dropout;
  if (dropout.empty()) return std::nullopt;
  // Inductor draws its own random numbers unless told to use eager's
  if (run.status.spec_fields.inductor_fallback_random) return std::nullopt;
  std::vector<std::string> modules;
  for (const ActiveDropout& d : dropout) modules.push_back(d.module + " (p=" + d.p.dump() + ")");
  return Detection{"the compiled module is in training mode with active dropout: " + joined(modules) +
                       "; graph mode and eager draw different random masks",
                   true, ""};
}

std::optional<Detection> detect_tf32(const RecordedRun& run) {
  const RunConfiguration& configuration = run.status.configuration;
  std::vector<std::string> on;
  if (configuration.cuda_matmul_allow_tf32.value_or(false)) on.push_back("torch.backends.cuda.matmul.allow_tf32");
  if (configuration.cudnn_allow_tf32.value_or(false)) on.push_back("torch.backends.cudnn.allow_tf32");
  const std::optional<std::string>& precision = configuration.float32_matmul_precision;
  if (precision && *precision != "highest") on.push_back("float32_matmul_precision=" + *precision);
  if (on.empty()) return std::nullopt;
  return Detection{"float32 matmuls/convolutions may run in TF32: " + joined(on), false, ""};
}

std::optional<Detection> detect_nondeterministic_algorithms(const RecordedRun& run) {
  if (run.status.configuration.deterministic_algorithms.value_or(true)) return std::nullopt;
  return Detection{
      "torch.are_deterministic_algorithms_enabled() is false (atomics-based kernels may differ run to run)", false, ""};
}

namespace {

// What a compiled run's status.json counts ("3 graph break(s)") with the reasons it lists;
// nullopt when it counts none.
std::optional<std::pair<std::string, std::vector<std::string>>> compile_events(
    const RecordedRun& run, const std::optional<int64_t>& count, const char* what,
    const std::vector<std::string>& reasons) {
  if (run_mode(run) != "compiled" || !count || *count <= 0) return std::nullopt;
  return std::make_pair(std::to_string(*count) + " " + what, reasons);
}

}  // namespace

std::optional<Detection> detect_graph_breaks(const RecordedRun& run) {
  auto breaks =
      compile_events(run, run.status.graphs.graph_breaks, "graph break(s)", run.status.graphs.graph_break_reasons);
  if (!breaks) return std::nullopt;
  return Detection{breaks->first + (breaks->second.empty() ? "" : ": " + joined(breaks->second)) +
                       "; each piece is compiled and fused apart",
                   false, ""};
}

namespace {

bool size_guard_failure(const std::string& reason) {
  // Dynamo's words (torch 2.13): "tensor 'x' size mismatch at index 0. expected 8, actual 4",
  // "tensor 'x' rank mismatch. expected 3, actual 2", and a dynamic size's "2 <= x.size()[0]"
  for (const char* about_sizes : {"size mismatch", "rank mismatch", ".size()["})
    if (reason.find(about_sizes) != std::string::npos) return true;
  return false;
}

}  // namespace

std::optional<Detection> detect_shape_recompiles(const RecordedRun& run) {
  auto recompiles =
      compile_events(run, run.status.graphs.recompiles, "recompile(s)", run.status.graphs.recompile_reasons);
  if (!recompiles) return std::nullopt;
  const char* consequence = "; each recompiled graph is specialised (and fused) apart, differently from the first";
  if (recompiles->second.empty())
    return Detection{recompiles->first + " whose failed guards were not recorded: sizes may have changed" + consequence,
                     false, ""};
  std::vector<std::string> on_sizes;
  for (const std::string& reason : recompiles->second)
    if (size_guard_failure(reason)) on_sizes.push_back(reason);
  if (on_sizes.empty()) return std::nullopt;
  return Detection{recompiles->first + ", " + std::to_string(on_sizes.size()) + " of the " +
                       std::to_string(recompiles->second.size()) + " recorded on changed sizes: " + joined(on_sizes) +
                       consequence,
                   false, ""};
}

std::optional<Detection> detect_torchair_options(const RecordedRun& run) {
  const nlohmann::json& torchair = run.status.torchair_options;
  if (!torchair.is_object()) return std::nullopt;
  std::vector<std::string> risky;
  bool lowers = false;
  for (const auto& [key, value] : torchair.items()) {
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (key.find("frozen_parameter") != std::string::npos && value == true) risky.push_back(key + "=True");
    if (key.find("enable_view_optimize") != std::string::npos && value == true) risky.push_back(key + "=True");
    if (key.find("precision_mode") != std::string::npos && text.find("fp16") != std::string::npos) {
      risky.push_back(key + "=" + text);
      lowers = run.status.spec_fields.dtype.value_or("float32") == "float32";
    }
  }
  if (risky.empty()) return std::nullopt;
  return Detection{"TorchAir options that change numerics: " + joined(risky) +
                       (lowers ? " (a float32 model computed in float16 by GE)" : ""),
                   lowers, ""};
}

std::optional<Detection> detect_eager_overflow(const RecordedRun& run) {
  if (run_mode(run) == "compiled" || run.dump_dir.empty()) return std::nullopt;
  const std::string dtype = run.status.spec_fields.dtype.value_or("float32");
  for (const NanOrigin& origin : find_nan_origins(run.dump_dir)) {
    // An overflow float64 has too is the model's, not eager's precision (judge.h: the truth decides).
    if (origin.kind != "inf" || origin.inputs != NanOriginInputs::Finite || origin.truth_finite == false) continue;
    // A model in another dtype overflows where it casts down inside (x.half() * ...): only an
    // overflow its float64 truth shows to be the precision's counts there.
    if (dtype != "float16" && origin.truth_finite != true) continue;
    std::string op = origin.op.empty() ? origin.op_key : origin.op;
    return Detection{"eager in " + dtype + " overflows: " + origin.op_key + " produces Inf from finite inputs" +
                         (origin.truth_finite ? " where its float64 truth is finite" : "") +
                         (origin.rank >= 0 ? " on rank " + std::to_string(origin.rank) : "") +
                         (origin.module.empty() ? "" : " (module " + origin.module + ")"),
                     true, op};
  }
  return std::nullopt;
}

std::optional<Detection> detect_near_overflow(const RecordedRun& run) {
  if (run_mode(run) == "compiled" || run.dump_dir.empty()) return std::nullopt;
  compare::Manifest manifest = compare::read_manifest(run.dump_dir);
  const compare::ManifestRecord* largest = nullptr;
  double largest_abs = 0;
  for (const compare::ManifestRecord& record : manifest.records) {
    if (record.dtype != "torch.float16" || record.io != "output" || compare::is_uninitialized_op(record.op) ||
        compare::is_uninitialized_op(record.op_key))
      continue;
    for (const char* key : {"min", "max"}) {
      const nlohmann::json& value = field(record.stats, key);
      if (value.is_number() && std::fabs(value.get<double>()) > largest_abs) {
        largest_abs = std::fabs(value.get<double>());
        largest = &record;
      }
    }
  }
  if (!largest || largest_abs < kFloat16Max / 2) return std::nullopt;
  return Detection{largest->op_key + " reaches |x| = " + nlohmann::json(largest_abs).dump() + " in float16 (max " +
                       nlohmann::json(kFloat16Max).dump() + "): a reordered or fused computation can overflow",
                   false, largest->op.empty() ? largest->op_key : largest->op};
}

namespace {

// What a run computed: its spec but for what it dumps, checks on the side and where it writes.
std::optional<nlohmann::json> computation(const RecordedRun& run) {
  const std::optional<RunSpec> spec = echoed_run_spec(run.status.spec);
  if (!spec) return std::nullopt;
  return spec_identity_fields(spec_computation(*spec));
}

const nlohmann::json& record_hash(const compare::ManifestRecord& record) { return field(record.stats, "hash"); }

// The hashes of one rank dump's records by match key.
std::map<std::string, nlohmann::json> hashes_by_key(const compare::Manifest& dump) {
  std::map<std::string, nlohmann::json> hashes;
  for (const compare::ManifestRecord& record : dump.records) hashes[record.match_key()] = record_hash(record);
  return hashes;
}

bool same_hash(const compare::ManifestRecord& record, const std::map<std::string, nlohmann::json>& other) {
  auto found = other.find(record.match_key());
  return found != other.end() && record_hash(record).is_string() && found->second == record_hash(record);
}

// The first op call of `dump` whose inputs `other` holds bitwise equal and an output not.
const compare::ManifestRecord* first_differing_call(const compare::Manifest& dump,
                                                    const std::map<std::string, nlohmann::json>& other) {
  std::map<int64_t, std::vector<const compare::ManifestRecord*>> calls;  // by seq: execution order
  for (const compare::ManifestRecord& record : dump.records) {
    const std::string op = record.op.empty() ? record.op_key : record.op;
    if (record.kind == "op" && !compare::is_uninitialized_op(op) && !random_op(op))
      calls[record.seq].push_back(&record);
  }
  for (const auto& [seq, records] : calls) {
    bool has_inputs = false, inputs_equal = true, output_differs = false;
    for (const compare::ManifestRecord* record : records) {
      if (record->io == "input") {
        has_inputs = true;
        inputs_equal = inputs_equal && same_hash(*record, other);
      } else if (other.count(record->match_key()) && !same_hash(*record, other)) {
        output_differs = true;
      }
    }
    if (has_inputs && inputs_equal && output_differs) return records.front();
  }
  return nullptr;
}

bool final_outputs_differ(const compare::Manifest& dump, const std::map<std::string, nlohmann::json>& other) {
  return std::any_of(dump.records.begin(), dump.records.end(), [&](const compare::ManifestRecord& record) {
    return record.kind == "final" && !same_hash(record, other);
  });
}

}  // namespace

std::optional<Detection> detect_nondeterministic_op(const RecordedRun& run, const RecordedRun& repeat) {
  if (run.dump_dir.empty() || repeat.dump_dir.empty() || !computation(run) || computation(run) != computation(repeat))
    return std::nullopt;
  const std::map<int, std::string> repeat_ranks = compare::manifest_ranks(repeat.dump_dir);
  for (const auto& [rank, dir] : compare::manifest_ranks(run.dump_dir)) {
    auto repeat_dir = repeat_ranks.find(rank);
    if (repeat_dir == repeat_ranks.end()) continue;
    const compare::Manifest dump = compare::read_manifest(dir);
    const std::map<std::string, nlohmann::json> other = hashes_by_key(compare::read_manifest(repeat_dir->second));
    const compare::ManifestRecord* call = first_differing_call(dump, other);
    if (!call) continue;
    const bool reaches_outputs = final_outputs_differ(dump, other);
    return Detection{"two runs of the same configuration (" + run.name + ", " + repeat.name + ") differ from " +
                         call->op_key + (rank >= 0 ? " on rank " + std::to_string(rank) : "") +
                         ", its inputs bitwise equal in both" +
                         (reaches_outputs ? "; the final outputs differ too: run-to-run non-determinism, not a "
                                            "compiler or device defect"
                                          : "; the final outputs do not differ"),
                     reaches_outputs, call->op.empty() ? call->op_key : call->op};
  }
  return std::nullopt;
}

bool records_random_ops(const std::vector<RecordedRun>& runs) {
  for (const RecordedRun& run : runs) {
    if (run_mode(run) == "compiled" || run.dump_dir.empty()) continue;
    for (const compare::ManifestRecord& record : compare::read_manifest(run.dump_dir).records)
      if (random_op(record.op.empty() ? record.op_key : record.op)) return true;
  }
  return false;
}

bool dumping_compile_differs(const std::vector<RecordedRun>& runs) {
  auto compiled_with_level = [](const RecordedRun& run, const std::string& level) {
    const std::optional<RunSpec> spec = echoed_run_spec(run.status.spec);
    return run_mode(run) == "compiled" && spec && resolved_dump_level(*spec) == level;
  };
  for (const RecordedRun& dumped : runs) {
    if (!compiled_with_level(dumped, "compiled")) continue;
    for (const RecordedRun& undumped : runs) {
      if (!compiled_with_level(undumped, "none") || computation(undumped) != computation(dumped)) continue;
      const std::optional<std::vector<std::string>> differing = differing_outputs(dumped.run_dir, undumped.run_dir);
      if (differing && !differing->empty()) return true;
    }
  }
  return false;
}

std::optional<std::vector<std::string>> differing_outputs(const std::string& run_dir_a, const std::string& run_dir_b) {
  compare::Manifest a = compare::read_manifest(run_dir_a + "/outputs");
  compare::Manifest b = compare::read_manifest(run_dir_b + "/outputs");
  if (!a.error.empty() || !b.error.empty() || a.records.empty() || a.records.size() != b.records.size())
    return std::nullopt;
  std::map<std::string, nlohmann::json> hashes;
  for (const compare::ManifestRecord& record : a.records) hashes[record.identity()] = field(record.stats, "hash");
  std::vector<std::string> differing;
  for (const compare::ManifestRecord& record : b.records) {
    auto other = hashes.find(record.identity());
    const nlohmann::json hash = field(record.stats, "hash");
    // without both hashes of the same record, equality is unknown
    if (other == hashes.end() || !hash.is_string() || !other->second.is_string()) return std::nullopt;
    if (other->second != hash) differing.push_back(record.name());
  }
  return differing;
}

const std::vector<KnownCause>& known_causes() {
  static const std::vector<KnownCause> catalogue = [] {
    std::vector<KnownCause> c = {
        detector("training_mode_dropout",
                 "the compiled module is in training mode with dropout p > 0 (status.json configuration)", {}, {},
                 detect_training_dropout,
                 "call model.eval() before compiling (or set torch._inductor.config.fallback_random = True to "
                 "compare in training mode)"),
        detector("eager_overflow",
                 "the first op whose output is Inf while its inputs are finite, in an eager dump (in a model of "
                 "another dtype than float16: where the dump's float64 truth is finite)",
                 {}, {}, detect_eager_overflow,
                 "compute the named op in float32 (autocast keeps it there, or .float() around it), or scale its "
                 "inputs down"),
        detector("float16_near_overflow", "float16 values past half of 65504 in an eager dump", {}, {"float16"},
                 detect_near_overflow, "keep that op in float32 or scale its inputs down; bfloat16 has the range"),
        detector("tf32_matmul", "TF32 flags and float32_matmul_precision in a float32 comparison", {"cuda", "npu"},
                 {"float32"}, detect_tf32,
                 "torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False; "
                 "torch.set_float32_matmul_precision('highest') (NPU: torch.npu.matmul.allow_hf32 = False)"),
        detector("nondeterministic_algorithms", "torch.are_deterministic_algorithms_enabled()", {"cuda", "npu"}, {},
                 detect_nondeterministic_algorithms,
                 "torch.use_deterministic_algorithms(True) (CUBLAS_WORKSPACE_CONFIG=:4096:8) or run spec "
                 "deterministic: true"),
        detector("graph_breaks", "graph breaks of the compiled run (status.json graphs.graph_breaks)", {}, {},
                 detect_graph_breaks, "torch.compile(fullgraph=True) raises at each break, naming it; remove it"),
        detector("dynamic_shape_recompiles",
                 "recompiles of the compiled run whose failed guard is about sizes (status.json "
                 "graphs.recompile_reasons, Dynamo's guard failures: size or rank mismatch, a dynamic size's "
                 "range)",
                 {}, {}, detect_shape_recompiles,
                 "torch._dynamo.mark_dynamic(tensor, dim) on the input whose size changes, or "
                 "torch.compile(dynamic=True); torch._dynamo.config.automatic_dynamic_shapes = True (the default) "
                 "makes the second shape dynamic"),
        detector("torchair_options", "TorchAir frozen_parameter, enable_view_optimize and GE precision_mode", {}, {},
                 detect_torchair_options,
                 "experimental_config.frozen_parameter = False (or make weights contiguous), "
                 "experimental_config.enable_view_optimize = False, ge_config precision_mode "
                 "must_keep_origin_dtype"),
        experiment("fallback_random", "Inductor's own random numbers: the compiled run with eager's RNG", {"inductor"},
                   {}, {}, inductor_switch("fallback_random"),
                   "torch._inductor.config.fallback_random = True (graph mode then draws eager's random numbers), or "
                   "keep random ops out of what is compared"),
        experiment("emulate_precision_casts", "Inductor keeping low-precision intermediates in float32", {"inductor"},
                   {}, {"float16", "bfloat16"}, inductor_switch("emulate_precision_casts"),
                   "torch._inductor.config.emulate_precision_casts = True"),
        experiment("eager_numerics_division_rounding", "Inductor's division rounding against eager's", {"inductor"},
                   {"cuda"}, {}, inductor_switch("eager_numerics.division_rounding"),
                   "torch._inductor.config.eager_numerics.division_rounding = True"),
        experiment("inductor_fx_graph_cache",
                   "Inductor's FX graph cache: the compiled run with it off, as the dumping compile runs", {"inductor"},
                   {}, {}, inductor_switch("fx_graph_cache", false),
                   "torch._inductor.config.fx_graph_cache = False (TORCHINDUCTOR_FX_GRAPH_CACHE=0), and report the "
                   "graph whose cached entry is reused where it does not apply"),
        experiment("tf32_off", "the compiled run with TF32 off at the cuBLAS/cuDNN level", {}, {"cuda"}, {"float32"},
                   CauseFlip{RunSpec(), {{"NVIDIA_TF32_OVERRIDE", "0"}}, {}},
                   "torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False"),
        experiment("deterministic", "the compiled run with deterministic algorithms", {}, {"cuda", "npu"}, {},
                   deterministic_algorithms(), "torch.use_deterministic_algorithms(True)"),
    };
    for (KnownCause& cause : c) {
      if (cause.name == "fallback_random") cause.wanted = records_random_ops;
      if (cause.name == "inductor_fx_graph_cache") cause.wanted = dumping_compile_differs;
    }
    return c;
  }();
  return catalogue;
}

const KnownCause& nondeterministic_op_cause() {
  static const KnownCause cause =
      detector("nondeterministic_op",
               "eager run twice with one configuration: the first op whose inputs are bitwise equal in both dumps "
               "and whose output is not",
               {}, {}, nullptr,
               "make the named op deterministic (torch.use_deterministic_algorithms(True) picks deterministic "
               "kernels for index_add_, scatter_add_, index_put_ and the like on CUDA; a custom kernel needs a fixed "
               "accumulation order), or compare only what is deterministic");
  return cause;
}

bool cause_applies(const KnownCause& cause, const std::string& backend, const std::string& device,
                   const std::string& dtype) {
  auto within = [](const std::vector<std::string>& scope, const std::function<bool(const std::string&)>& match) {
    return scope.empty() || std::any_of(scope.begin(), scope.end(), match);
  };
  const std::string type = dtype.empty() ? "float32" : dtype;
  return within(cause.backends, [&](const std::string& b) { return b == backend; }) &&
         within(cause.devices, [&](const std::string& d) { return on_device(device, d); }) &&
         within(cause.dtypes, [&](const std::string& t) { return t == type; });
}

std::vector<KnownCause> user_causes(const YAML::Node& causes, const std::string& where, Diagnostics* diagnostics) {
  std::vector<KnownCause> out;
  if (!causes || !causes.IsSequence()) return out;
  auto report = [&](const YAML::Node& at, const std::string& message) {
    if (diagnostics) diagnostics->error(at.Mark(), where + ": " + message);
  };
  for (size_t i = 0; i < causes.size(); ++i) {
    const YAML::Node entry = causes[i];
    const std::string at = "causes[" + std::to_string(i) + "]";
    if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) {
      report(entry, at + ": a cause needs a name");
      continue;
    }
    const std::string name = entry["name"].Scalar();
    const std::vector<KnownCause>& builtin = known_causes();
    bool taken = std::any_of(builtin.begin(), builtin.end(), [&](const KnownCause& c) { return c.name == name; }) ||
                 std::any_of(out.begin(), out.end(), [&](const KnownCause& c) { return c.name == name; });
    if (taken) {
      report(entry["name"], at + ".name: '" + name + "' is already a cause");
      continue;
    }
    const YAML::Node flip = entry["flip"];
    CauseFlip parsed;
    if (flip && flip.IsMap()) {
      if (flip["env"] && flip["env"].IsMap())
        for (const auto& variable : flip["env"]) parsed.env[variable.first.Scalar()] = variable.second.Scalar();
      if (flip["args"] && flip["args"].IsSequence())
        for (const auto& arg : flip["args"]) parsed.args.push_back(arg.Scalar());
      try {
        if (flip["switches"]) parsed.spec.switches = yaml_to_json(flip["switches"]).get<RunSwitches>();
        if (flip["spec"]) parsed.spec = overlaid(parsed.spec, yaml_to_json(flip["spec"]).get<RunSpec>());
      } catch (const std::invalid_argument& e) {
        report(flip, at + ".flip: " + e.what());
        continue;
      }
    }
    if (parsed.env.empty() && parsed.args.empty() && parsed.spec == RunSpec()) {
      report(flip ? flip : entry, at + ".flip: give what the experiment changes (env, args, switches or spec)");
      continue;
    }
    KnownCause cause;
    cause.name = name;
    cause.checks = entry["expect"] ? entry["expect"].Scalar() : "the compiled run passes with " + name + " flipped";
    cause.flip = std::move(parsed);
    cause.fix = entry["fix"] ? entry["fix"].Scalar() : "";
    out.push_back(std::move(cause));
  }
  return out;
}

}  // namespace diagnose
