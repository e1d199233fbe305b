// The knobs (orchestrator/bisect/knob.h) that know the file formats: a TorchAir/GE fusion switch
// file per trial, with GE's fusion_result.json or the plugin's status.json as the fired-rule
// report, and a report alone (a node search's status.json). `diagnose bisect` and the bisection
// steps build them; the search sees configurations only.
#pragma once

#include "steps/layer.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fusion_files/fusion_switch.h"
#include "orchestrator/bisect/knob.h"
#include "runspec/plugin_status.h"

namespace diagnose {

// The rules a report says fired: a fusion_result.json, or the plugin's status.json (its
// inductor_rules.fired, or in a node search isolation.compiled: the nodes the backend
// compiled); nullopt when the file is absent. Throws std::runtime_error naming the file when it
// is malformed.
std::optional<std::vector<std::string>> read_fired_report(const std::string& path);

// The switch file that turns `off` off (a rule whose section is unknown: off in both sections).
torchair::FusionSwitch switch_for(const bisect::Config& off,
                                  const std::map<std::string, torchair::FusionSection>& sections);

// The switch file sections a fusion_result.json gives its rules (none for other reports).
std::map<std::string, torchair::FusionSection> report_sections(const std::string& path);

// A user's own pass in an Inductor custom-pass slot (status.json inductor_rules) fails only with
// its gate on, the Inductor switch that skips it too. The user's pass a culprit set is (the pass
// alone, or the pass and its gate); nullopt when the set is anything else.
std::optional<std::string> user_pass_of(const std::vector<std::string>& set,
                                        const std::map<std::string, InductorRule>& rules);
// Each candidate that is a user's pass whose gate is a candidate too, with that gate: the
// bisection's gates (bisect::Options::gates).
std::map<std::string, std::string> user_pass_gates(const std::vector<std::string>& candidates,
                                                   const std::map<std::string, InductorRule>& rules);
// The culprits less the gates of the user's passes among them: the workaround takes out the
// user's pass and leaves Inductor's own passes on.
bisect::Config without_user_pass_gates(const bisect::Config& culprits,
                                       const std::map<std::string, InductorRule>& rules);

// Each trial gets the fusion switch file turning its configuration off (fusion_switch.json in
// its directory), and so does the workaround. The section of each rule comes from the caller
// (`sections`), the all-on run's fusion_result.json and the trial log (graph_fusion_rules,
// ub_fusion_rules); a rule of unknown section is switched off in both.
class FusionSwitchFileKnob : public bisect::Knob {
 public:
  // `fired_report`: relative to a trial's run directory, or absolute; empty: none.
  explicit FusionSwitchFileKnob(std::string fired_report, std::map<std::string, torchair::FusionSection> sections = {});

  std::string fired_report() const override { return fired_report_; }
  std::optional<std::vector<std::string>> fired_rules(const std::string& path) const override;
  void prepare(bisect::Trial& trial) const override;
  void learn(const std::string& report_path, bool listing) override;
  void resume(const nlohmann::json& state, const std::vector<std::string>& candidates,
              const std::string& all_on_report) override;
  nlohmann::json state() const override;
  std::string write_workaround(const bisect::Config& culprits, const std::string& dir) const override;

  // The sections the trials' switch files use.
  const std::map<std::string, torchair::FusionSection>& sections() const { return sections_; }

 private:
  std::string fired_report_;
  std::map<std::string, torchair::FusionSection> sections_;
  // What the trials' reports said since: the workaround's sections too.
  std::map<std::string, torchair::FusionSection> reported_;
};

// A configuration that reaches the run through its run spec (a node search's isolation),
// with a fired-rule report and no file of its own.
class FiredReportKnob : public bisect::Knob {
 public:
  explicit FiredReportKnob(std::string fired_report) : fired_report_(std::move(fired_report)) {}
  std::string fired_report() const override { return fired_report_; }
  std::optional<std::vector<std::string>> fired_rules(const std::string& path) const override {
    return read_fired_report(path);
  }

 private:
  std::string fired_report_;
};

}  // namespace diagnose
