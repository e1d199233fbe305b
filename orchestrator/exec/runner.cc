#include "orchestrator/exec/runner.h"

#include <algorithm>

#include "orchestrator/exec/slurm_runner.h"

namespace diagnose {

void check_runners(const Workflow& workflow, const RunnerOverride& override, RunnerCheck depth,
                   Diagnostics& diagnostics) {
  check_runner_section(workflow.root["runner"], "runner", diagnostics);
  for (const StepSpec& step : workflow.steps)
    check_runner_section(step.node["runner"], "steps." + step.id + ".runner", diagnostics);
  if (!diagnostics.empty()) return;

  auto report = [&](const RunnerSpec& spec, const RunnerProblem& problem) {
    auto mark = spec.marks.find(problem.key);
    if (mark != spec.marks.end())
      diagnostics.error(mark->second, problem.message);
    else
      diagnostics.error_in_file(problem.message);
  };
  std::vector<std::string> seen;  // one report per distinct Slurm configuration
  for (const StepSpec& step : workflow.steps) {
    RunnerSpec spec = runner_for_step(workflow, step, override);
    if (spec.kind != "slurm") continue;
    if (depth == RunnerCheck::File) continue;
    std::string key = slurm_options_key(spec);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    for (const RunnerProblem& problem : slurm_problems(spec, depth == RunnerCheck::Submission)) report(spec, problem);
  }
}

namespace {

class LocalRunner : public Runner {
 public:
  LocalRunner(int slots, double kill_grace_s, bool warm, int ranks)
      : slots_(slots), kill_grace_s_(kill_grace_s), warm_(warm), ranks_(ranks) {}
  void run(const std::vector<RunRequest>& requests, const std::vector<size_t>& indexes,
           const std::map<size_t, RunRecord>&, const SchedulerCallbacks& callbacks) override {
    run_in_parallel(requests, indexes, slots_, kill_grace_s_, callbacks, warm_, ranks_);
  }

 private:
  int slots_;
  double kill_grace_s_;
  bool warm_;
  int ranks_;
};

}  // namespace

std::unique_ptr<Runner> make_runner(const RunnerSpec& spec, const std::string& step_id, int slots,
                                    double kill_grace_s) {
  if (spec.kind == "slurm") return make_slurm_runner(spec, step_id, slots, kill_grace_s);
  return std::make_unique<LocalRunner>(slots, kill_grace_s, spec.warm, spec.ranks);
}

}  // namespace diagnose
