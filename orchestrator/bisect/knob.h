// A bisection's knob: the kind of switch its trials turn rules off with (a TorchAir/GE fusion
// switch file, Inductor's pass switches, a command's switch file, FX nodes run eagerly...). The
// search sees configurations only (the rules off); the knob readies a trial's configuration in
// its directory, reads which rules a finished run reports fired, and writes the workaround that
// turns only the culprits off. Its implementations, which know the file formats, live above the
// engine (steps/bisection/bisection_knobs.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/bisect/bisector.h"

namespace diagnose::bisect {

struct Trial;

// This base class is the knob whose configuration reaches the run through its request alone
// (a run spec the caller builds): no file, no report, no workaround.
class Knob {
 public:
  virtual ~Knob() = default;

  // The fired-rule report, relative to a trial's run directory (or absolute); empty: none.
  virtual std::string fired_report() const { return ""; }
  // The rules the report at `path` says fired; nullopt when it is absent. Throws
  // std::runtime_error naming the file when it is malformed.
  virtual std::optional<std::vector<std::string>> fired_rules(const std::string& /*path*/) const {
    return std::nullopt;
  }

  // Writes what `trial`'s configuration needs into its directory (trial.switch_file).
  virtual void prepare(Trial& /*trial*/) const {}

  // What the knob learns of the rules from a report (a switch file's section of each rule):
  // `listing` from the all-on run that listed the candidates (it replaces what was known),
  // else from a trial (it only shapes the workaround).
  virtual void learn(const std::string& /*report_path*/, bool /*listing*/) {}
  // Resuming a trial log: what the knob kept in it (`state`, null for a log that kept none),
  // over what the all-on run's report at `all_on_report` says, over what the knob knew.
  virtual void resume(const nlohmann::json& /*state*/, const std::vector<std::string>& /*candidates*/,
                      const std::string& /*all_on_report*/) {}
  // The fields the knob keeps in the trial log.
  virtual nlohmann::json state() const { return nlohmann::json::object(); }

  // The candidates that run only while another candidate, their gate, is on: rule -> gate
  // (Options::gates); none by default.
  virtual std::map<std::string, std::string> gates(const std::vector<std::string>& /*candidates*/) const { return {}; }

  // The workaround turning only `culprits` off, written into `dir`: its path ("" when none).
  virtual std::string write_workaround(const Config& /*culprits*/, const std::string& /*dir*/) const { return ""; }
};

}  // namespace diagnose::bisect
