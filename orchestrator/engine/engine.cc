#include "orchestrator/engine/engine.h"

#include "orchestrator/engine/compiled_nothing.h"
#include "orchestrator/engine/digest.h"
#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/engine/equal_tensor_files.h"

#include <algorithm>
#include <boost/filesystem.hpp>

#include "orchestrator/engine/result_lookup.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/shared_runs.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/engine/step_registry.h"
#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/runner.h"
#include "orchestrator/exec/scheduler.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/util/clock.h"
#include "orchestrator/workflow/condition.h"

namespace diagnose {

namespace fs = boost::filesystem;

std::string step_fingerprint(const Workflow& workflow, const StepSpec& step) {
  std::string text = YAML::Dump(step.node) + "\n--\n" + YAML::Dump(workflow.root["model"]) + "\n--\n" +
                     YAML::Dump(workflow.root["defaults"]);
  return hex_digest(fnv1a(text));
}

namespace {

bool same_command(const RunRecord& done, const RunRequest& wanted) {
  return done.argv == wanted.argv && done.cwd == wanted.cwd && done.env == wanted.env;
}

// `made`, the run of another request, as the record of request `name`.
RunRecord shared_copy(const RunRecord& made, const std::string& name, const std::string& step) {
  RunRecord copy = made;
  copy.name = name;
  copy.from_step = made.from_step.empty() ? step : made.from_step;
  copy.from_run = made.from_step.empty() ? made.name : made.from_run;
  return copy;
}

class Engine {
 public:
  Engine(const Workflow& workflow, const EngineOptions& options, Progress& progress)
      : workflow_(workflow), options_(options), progress_(progress) {}

  EngineOutcome run() {
    EngineOutcome outcome;
    bool resumed = !options_.resume_dir.empty();
    if (resumed) {
      run_dir_ = absolute_path(options_.resume_dir, fs::current_path().string());
      state_ = load_state(state_path(run_dir_));
    } else {
      std::string output = options_.output_dir.empty() ? workflow_.defaults.output_dir : options_.output_dir;
      run_dir_ = options_.run_dir.empty() ? create_run_directory(output, workflow_.name) : options_.run_dir;
      state_.started = now_seconds();
    }
    write_workflow_files(workflow_, run_dir_);
    state_.workflow_name = workflow_.name;
    state_.workflow_path = absolute_path(workflow_.path, fs::current_path().string());
    state_.run_dir = run_dir_;
    state_.interrupted = false;
    state_.finished = 0;
    align_state_with_steps();
    plan_shared_runs();
    save();
    progress_.workflow_started(workflow_.name, run_dir_, resumed, workflow_.steps.size());

    std::string stopped_by;
    for (size_t i = 0; i < workflow_.steps.size(); ++i) {
      const StepSpec& step = workflow_.steps[i];
      StepResult& result = state_.steps[i];
      std::string fingerprint = step_fingerprint(workflow_, step);
      if (result.fingerprint == fingerprint && stopped_by.empty() &&
          (result.status == StepStatus::Pass || result.status == StepStatus::Fail)) {
        progress_.step_kept(result);
        equal_files_.share(step_dir_of(run_dir_, step.id));
        if (result.status == StepStatus::Fail && step.on_failure == OnFailure::Stop)
          stopped_by = "not run: step '" + step.id + "' failed and has on_failure: stop";
        continue;
      }
      result.fingerprint = fingerprint;
      if (!stopped_by.empty()) {
        finish_without_running(result, StepStatus::Skipped, stopped_by);
        continue;
      }
      const bool compiled_nothing = run_step(i, step, result);
      equal_files_.share(step_dir_of(run_dir_, step.id));
      if (interrupt_count() > 0) {
        state_.interrupted = true;
        save();
        progress_.interrupted(run_dir_);
        outcome.interrupted = true;
        break;
      }
      if (compiled_nothing)
        stopped_by = "not run: the script ended without compiling anything (step '" + step.id + "')";
      else if ((result.status == StepStatus::Fail || result.status == StepStatus::Error) &&
               step.on_failure == OnFailure::Stop)
        stopped_by = "not run: step '" + step.id + "' " + (result.status == StepStatus::Fail ? "failed" : "errored") +
                     " and has on_failure: stop";
    }
    record_dump_outcome(state_, equal_files_.total());
    if (!outcome.interrupted) state_.finished = now_seconds();
    save();
    outcome.run_dir = run_dir_;
    outcome.state = state_;
    return outcome;
  }

 private:
  // What the step diagnoses when it fails: the workflow's `diagnoses`, else the category its result
  // names (metric `category`, a finer one than its kind's: graph_dump_compare's state_defect), else
  // its kind's default.
  static std::string category_of(const StepSpec& step, const StepResult& result) {
    if (!step.diagnoses.empty()) return step.diagnoses;
    const auto named = result.metrics.find("category");
    if (named != result.metrics.end() && named->is_string()) return named->get<std::string>();
    return find_step_kind(step.kind)->default_category();
  }

  // One result per step, in workflow order; results of steps no longer in the workflow are dropped.
  void align_state_with_steps() {
    std::vector<StepResult> aligned;
    for (const StepSpec& step : workflow_.steps) {
      const StepResult* previous = state_.find(step.id);
      StepResult result = previous && previous->kind == step.kind ? *previous : StepResult{};
      result.id = step.id;
      result.kind = step.kind;
      result.category = category_of(step, result);
      aligned.push_back(result);
    }
    state_.steps = aligned;
  }

  // The runs of the resumed invocation stay shared; the steps' planned runs merge their dump needs
  // and share the dump budget.
  void plan_shared_runs() {
    for (const StepResult& result : state_.steps)
      for (const RunRecord& run : result.runs)
        if (!run.identity.empty() && run.from_step.empty() && run.status == RunStatus::Succeeded)
          shared_.add_done(run.identity, result.id, run);
    std::vector<PlannedRun> planned;
    for (const StepSpec& step : workflow_.steps) {
      StepContext context(workflow_, step, state_, run_dir_,
                          [](const std::vector<RunRequest>&) -> std::vector<RunRecord> {
                            throw std::logic_error("a step ran a process while saying which runs it plans");
                          });
      try {
        for (PlannedRun& run : find_step_kind(step.kind)->planned_runs(context)) planned.push_back(std::move(run));
      } catch (const std::exception&) {
        // its runs are not known before it runs: they are shared only when identical
      }
    }
    shared_.plan(planned);
    std::map<std::string, int> ranks_by_step;
    for (const StepSpec& step : workflow_.steps)
      ranks_by_step[step.id] = runner_for_step(workflow_, step, options_.runner).ranks;
    state_.dump_budget = plan_dump_budget(workflow_.defaults.dump_budget, planned, shared_, ranks_by_step);
  }

  // Called from the scheduler's threads too, so it must not throw: a state that cannot be
  // written costs resumability, not the run.
  void save() {
    try {
      save_state(state_, state_path(run_dir_));
    } catch (const std::exception& e) {
      if (!save_failed_) progress_.warning(std::string("cannot save the state; --resume will not work: ") + e.what());
      save_failed_ = true;
    }
  }

  void finish_without_running(StepResult& result, StepStatus status, const std::string& summary) {
    result.status = status;
    result.summary = summary;
    result.findings.clear();
    result.evidence.clear();
    result.metrics = nlohmann::json::object();
    result.reproduce.clear();
    result.runs.clear();
    result.started = result.finished = now_seconds();
    save();
    progress_.step_finished(result);
  }

  // Runs the step into `result`. Returns whether one of its runs shows the script compiled
  // nothing (compiled_nothing.h): the result then says so, and the workflow stops after it.
  bool run_step(size_t index, const StepSpec& step, StepResult& result) {
    const StepKind& kind = *find_step_kind(step.kind);
    if (!step.when.empty()) {
      bool holds = Condition::parse(step.when).evaluate(
          [&](const std::string& name) { return result_value(state_, run_dir_, name); });
      if (!holds) {
        finish_without_running(result, StepStatus::Skipped, "skipped: `" + step.when + "` is false");
        return false;
      }
    }

    std::vector<RunRecord> earlier_runs = result.runs;  // from an interrupted invocation
    result.status = StepStatus::Pending;
    result.summary.clear();
    result.runs.clear();
    result.started = now_seconds();
    save();
    progress_.step_started(step.id, index, workflow_.steps.size());

    StepContext context(
        workflow_, step, state_, run_dir_,
        [&](const std::vector<RunRequest>& requests) { return execute(step, result, earlier_runs, requests); },
        &shared_);
    context.on_search_progress([&](size_t done, size_t about) { progress_.search_progress(step.id, done, about); });
    StepResult evaluated;
    try {
      evaluated = kind.evaluate(context);
    } catch (const RunsInterrupted&) {
      for (RunRecord& record : result.runs)
        if (record.status == RunStatus::Running) record.status = RunStatus::Interrupted;
      result.summary = "interrupted";
      save();
      return false;
    } catch (const std::exception& e) {
      evaluated.status = StepStatus::Error;
      evaluated.summary = std::string("cannot evaluate the step: ") + e.what();
    }
    result.status = evaluated.status;
    result.summary = evaluated.summary;
    result.findings = evaluated.findings;
    result.evidence = evaluated.evidence;
    result.metrics = evaluated.metrics.is_object() ? evaluated.metrics : nlohmann::json::object();
    result.reproduce = evaluated.reproduce;
    const std::optional<StepResult> nothing = script_compiled_nothing(result.runs);
    if (nothing) {
      result.status = nothing->status;
      result.summary = nothing->summary;
      result.findings.clear();
      result.evidence = nothing->evidence;
    }
    result.category = category_of(step, result);
    result.finished = now_seconds();
    save();
    progress_.step_finished(result);
    return nothing.has_value();
  }

  // One round of a step's runs, in parallel. A run that succeeded with the same name and
  // command in an earlier invocation is not started again. Throws RunsInterrupted.
  std::vector<RunRecord> execute(const StepSpec& step, StepResult& result, const std::vector<RunRecord>& earlier_runs,
                                 const std::vector<RunRequest>& requests) {
    std::vector<size_t> positions, to_run;
    std::map<size_t, RunRecord> attach;  // runs whose Slurm job may have outlived a dead engine
    std::map<size_t, size_t> same_as;    // a request of this round -> the earlier one with its identity
    std::vector<std::string> identities;
    for (const RunRequest& request : requests) identities.push_back(run_identity(request));
    for (size_t r = 0; r < requests.size(); ++r) {
      const SharedRun* shared = identities[r].empty() ? nullptr : shared_.done(identities[r]);
      if (shared && shared->record.dir == requests[r].dir) {
        bool own = shared->step == step.id && shared->record.name == requests[r].name;  // resumed
        positions.push_back(result.runs.size());
        result.runs.push_back(own ? shared->record : shared_copy(shared->record, requests[r].name, shared->step));
        continue;
      }
      auto twin = std::find_if(to_run.begin(), to_run.end(), [&](size_t earlier) {
        return !identities[r].empty() && identities[earlier] == identities[r] &&
               requests[earlier].dir == requests[r].dir;
      });
      if (twin != to_run.end()) {
        same_as[r] = *twin;
        positions.push_back(result.runs.size());
        result.runs.push_back(record_for(requests[r]));
        continue;
      }
      const RunRecord* earlier = nullptr;
      for (const RunRecord& old : earlier_runs)
        if (old.name == requests[r].name) earlier = &old;
      positions.push_back(result.runs.size());
      if (earlier && earlier->status == RunStatus::Succeeded && same_command(*earlier, requests[r])) {
        result.runs.push_back(*earlier);
      } else {
        result.runs.push_back(record_for(requests[r]));
        to_run.push_back(r);
        if (earlier && earlier->status == RunStatus::Running && !earlier->job_id.empty() &&
            same_command(*earlier, requests[r]))
          attach[r] = *earlier;
      }
    }
    save();
    progress_.runs_scheduled(step.id, to_run.size());
    if (!to_run.empty()) {
      int slots = options_.slots > 0 ? options_.slots : workflow_.defaults.slots;
      SchedulerCallbacks callbacks;
      callbacks.on_started = [&](size_t r, const RunRecord& record) {
        result.runs[positions[r]] = record;
        save();
        progress_.run_started(step.id, record);
      };
      callbacks.on_finished = [&](size_t r, const RunRecord& record) {
        result.runs[positions[r]] = record;
        save();
        progress_.run_finished(step.id, record);
      };
      if (progress_.wants_output()) {
        callbacks.on_output = [&](size_t r, const std::string& line, bool from_stderr) {
          progress_.run_output(step.id, requests[r].name, line, from_stderr);
        };
      }
      make_runner(runner_for_step(workflow_, step, options_.runner), step.id, slots, workflow_.defaults.kill_grace_s)
          ->run(requests, to_run, attach, callbacks);
    }
    if (interrupt_count() > 0) throw RunsInterrupted();
    for (size_t r : to_run) {
      RunRecord& record = result.runs[positions[r]];
      record.identity = identities[r];
      if (!record.identity.empty() && record.status == RunStatus::Succeeded)
        shared_.add_done(record.identity, step.id, record);
    }
    for (const auto& [r, twin] : same_as)
      result.runs[positions[r]] = shared_copy(result.runs[positions[twin]], requests[r].name, step.id);
    if (!same_as.empty()) save();
    std::vector<RunRecord> records;
    for (size_t position : positions) records.push_back(result.runs[position]);
    return records;
  }

  const Workflow& workflow_;
  const EngineOptions& options_;
  Progress& progress_;
  std::string run_dir_;
  State state_;
  SharedRuns shared_;
  EqualTensorFiles equal_files_;  // the steps' tensor files, each content stored once
  bool save_failed_ = false;
};

}  // namespace

EngineOutcome run_workflow(const Workflow& workflow, const EngineOptions& options, Progress& progress) {
  return Engine(workflow, options, progress).run();
}

}  // namespace diagnose
