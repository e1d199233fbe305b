#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "fusion_files/fusion_result.h"
#include "orchestrator/bisect/driver.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/engine/verdict.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/scheduler.h"
#include "orchestrator/workflow/template.h"
#include "steps/bisection/bisection_knobs.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;

struct Arguments {
  std::string output, candidates_from, switch_env, fired_report = "fusion_result.json", golden, dump = "dump", preset;
  std::vector<std::string> rules, include, exclude, tolerance_overrides, command;
  int slots = bisect::Options{}.slots, max_trials = bisect::Options{}.max_trials,
      baseline_repeats = bisect::Options{}.baseline_repeats, confirmations = bisect::Options{}.confirmations;
  double timeout_s = 0;
  bool crash_is_failure = false, resume = false;
};

std::vector<std::string> split_commas(const std::vector<std::string>& lists) {
  std::vector<std::string> out;
  for (const std::string& list : lists) {
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      if (comma > start) out.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return out;
}

// The command of a trial: ${switch_file}, ${trial_dir} and ${trial_name} expanded, no shell.
std::vector<std::string> trial_argv(const std::vector<std::string>& command, const bisect::Trial& trial) {
  std::vector<std::string> argv;
  for (const std::string& arg : command)
    argv.push_back(expand_template(arg, [&](const std::string& name) -> std::optional<std::string> {
      if (name == "switch_file") return trial.switch_file;
      if (name == "trial_dir") return trial.dir;
      if (name == "trial_name") return trial.name;
      return std::nullopt;
    }));
  return argv;
}

// The bisection's identity: a log written for another command or other options is not replayed.
nlohmann::json fingerprint(const Arguments& a) {
  return {{"command", a.command},
          {"golden", a.golden},
          {"dump", a.dump},
          {"switch_env", a.switch_env},
          {"fired_report", a.fired_report}};
}

// The fewest trials one culprit among `candidates` takes (bisector.h), beside this bisection's.
std::string floor_line(const bisect::Result& result, size_t candidates, int all_on_runs) {
  const int floor = bisect::one_culprit_floor(candidates, all_on_runs);
  std::string line = "floor: " + std::to_string(floor) + " trials for one culprit among " + std::to_string(candidates) +
                     " rules and a deterministic command";
  if (candidates > 2)
    line += " (" + std::to_string(all_on_runs) + " all-on runs, ceil(log2 " + std::to_string(candidates) +
            ") = " + std::to_string(floor - all_on_runs - 2) + " search trials, 2 checks)";
  line += "; this bisection: " + std::to_string(result.trials.size());
  if (result.nondeterministic) line += ", majority votes: the command's outcomes varied";
  return line;
}

int report(const bisect::Bisection& bisection, const bisect::BisectionOutcome& outcome, size_t candidates,
           int all_on_runs) {
  bool no_report = outcome.listing_had_no_report;
  switch (outcome.status) {
    case bisect::BisectionOutcome::Status::NoRuleFired:
    case bisect::BisectionOutcome::Status::Failed:
      if (no_report) {
        std::cerr << "diagnose bisect: the all-on run (" << outcome.listing_outcome << ") left "
                  << outcome.listing_report << "; give the candidates with --rules or --candidates-from\n";
        return kExitInfrastructure;
      }
      if (outcome.status == bisect::BisectionOutcome::Status::Failed) {
        std::cerr << "diagnose bisect: " << outcome.message << "\n";
        return kExitInfrastructure;
      }
      [[fallthrough]];  // an empty report: no candidates
    case bisect::BisectionOutcome::Status::NoCandidates:
      std::cerr << "diagnose bisect: no candidate rules (after --include/--exclude)\n";
      return kExitUsage;
    case bisect::BisectionOutcome::Status::Bisected: break;
  }
  const bisect::Result& result = outcome.result;
  std::cout << result.summary << "\n";
  std::cout << "trials: " << result.trials.size() << " (" << result.new_trials << " run now, " << result.replayed_trials
            << " from the log), " << result.rounds << " rounds\n";
  if (result.culprit_sets.size() == 1 && result.culprit_sets.front().rules.size() == 1)
    std::cout << floor_line(result, candidates, all_on_runs) << "\n";
  for (const bisect::CulpritSet& set : result.culprit_sets) {
    auto replay = [&](const char* what, const bisect::Config& off) {
      RunRequest request = bisection.replay(off);
      std::cout << what << ": " << reproduce_command(request.cwd, request.env, request.argv) << "\n";
    };
    replay("last passing", set.last_passing);
    replay("first failing", set.first_failing);
  }
  std::cout << "json: " << outcome.json_path << "\n";
  switch (result.conclusion) {
    case bisect::Conclusion::CulpritsFound:
      std::cout << "switch file turning only the culprits off: " << outcome.workaround_path << "\n";
      return kExitProblem;
    case bisect::Conclusion::NoFailure:
    case bisect::Conclusion::NotFusion: return kExitNoProblem;
    default: return kExitInfrastructure;
  }
}

int run(const Arguments& a) {
  fs::path out = fs::absolute(a.output).lexically_normal();
  std::string log_path = bisect::trial_log_path(out.string());
  std::string cwd = fs::current_path().string();
  bool has_log = fs::exists(log_path);
  if (has_log && !a.resume) {
    std::cerr << "diagnose bisect: " << log_path
              << " exists: add --resume to continue it, or choose another --output\n";
    return kExitUsage;
  }
  bool names_switch_file = !a.switch_env.empty();
  for (const std::string& arg : a.command)
    for (const TemplateReference& r : template_references(arg)) {
      if (r.name != "switch_file" && r.name != "trial_dir" && r.name != "trial_name") {
        std::cerr << "diagnose bisect: unknown reference '${" << r.name
                  << "}' in the command (known: switch_file, trial_dir, trial_name)\n";
        return kExitUsage;
      }
      if (r.name == "switch_file") names_switch_file = true;
    }
  if (!names_switch_file) {
    std::cerr << "diagnose bisect: the command must receive the switch file: put ${switch_file} in its arguments "
                 "or name an environment variable with --switch-env\n";
    return kExitUsage;
  }
  fs::create_directories(out / "trials");

  bisect::TrialSetup setup;
  setup.dir_of = [&](const std::string& name) { return (out / "trials" / name).string(); };
  setup.make_request = [&](const bisect::Trial& trial) {
    RunRequest request;
    request.name = trial.name;
    request.argv = trial_argv(a.command, trial);
    // Relative paths in the command keep meaning what they meant where diagnose was started.
    bisect::anchor_relative_paths(request, cwd);
    request.cwd = request.dir = trial.dir;
    request.dump_dir = trial.dir + "/dump";
    request.timeout_s = a.timeout_s;
    if (!a.switch_env.empty()) request.env[a.switch_env] = trial.switch_file;
    request.env["DIAGNOSE_TRIAL_DIR"] = trial.dir;
    return request;
  };
  setup.execute = [&](const std::vector<RunRequest>& requests) {
    std::vector<size_t> all(requests.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<RunRecord> records(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) records[i] = record_for(requests[i]);
    SchedulerCallbacks callbacks;
    callbacks.on_finished = [&](size_t i, const RunRecord& record) {
      records[i] = record;
      std::cerr << "  trial " << record.name << ": " << run_status_name(record.status) << "\n";
    };
    run_in_parallel(requests, all, a.slots, 5, callbacks);
    if (interrupt_count() > 0) throw RunsInterrupted();
    return records;
  };
  if (!a.golden.empty()) {
    setup.judge.kind = bisect::JudgeKind::Compare;
    setup.judge.golden = absolute_path(a.golden, cwd);
    setup.judge.dump = a.dump;
    for (const std::string& o : a.tolerance_overrides) {
      std::string error = setup.judge.tolerances.apply_override(o);
      if (!error.empty()) {
        std::cerr << "diagnose bisect: " << error << "\n";
        return kExitUsage;
      }
    }
    if (!a.preset.empty()) setup.judge.tolerances.forced_preset = a.preset;
  }

  bisect::BisectionPlan plan;
  plan.dir = out.string();
  plan.fingerprint = fingerprint(a);
  plan.candidates = a.rules;
  plan.include = a.include;
  plan.exclude = a.exclude;
  plan.options.slots = a.slots;
  plan.options.max_trials = a.max_trials;
  plan.options.crash_is_failure = a.crash_is_failure;
  plan.options.baseline_repeats = a.baseline_repeats;
  plan.options.confirmations = a.confirmations;
  size_t candidate_count = 0;
  plan.on_candidates = [&](const std::vector<std::string>& candidates) {
    candidate_count = candidates.size();
    std::cerr << "diagnose bisect: " << candidates.size() << " candidate rules, " << a.slots << " slot(s)\n";
  };
  std::map<std::string, torchair::FusionSection> sections;
  try {
    if (!a.candidates_from.empty()) {
      std::vector<torchair::FusionRecord> records = torchair::read_fusion_result_file(a.candidates_from);
      std::vector<std::string> fired = torchair::fired_rules(records);
      plan.candidates.insert(plan.candidates.end(), fired.begin(), fired.end());
      sections = torchair::rule_sections(records);
    }
    if (has_log) plan.resume = bisect::read_trial_log(log_path);
  } catch (const std::exception& e) {
    std::cerr << "diagnose bisect: " << e.what() << "\n";
    return kExitUsage;
  }
  if (plan.resume && plan.resume->fingerprint != plan.fingerprint) {
    std::cerr << "diagnose bisect: " << log_path << " belongs to another bisection (command or options differ)\n";
    return kExitUsage;
  }
  if (!plan.resume && plan.candidates.empty())
    std::cerr << "diagnose bisect: running the command with every rule on to list the candidates\n";
  setup.knob = std::make_shared<FusionSwitchFileKnob>(a.fired_report, sections);
  bisect::Bisection bisection(setup);
  try {
    bisect::BisectionOutcome outcome = bisection.run(plan);
    return report(bisection, outcome, candidate_count, 1 + a.baseline_repeats);
  } catch (const RunsInterrupted&) {
    std::cerr << "diagnose bisect: interrupted"
              << (fs::exists(log_path) ? "; continue with the same command and --resume" : "") << "\n";
    return kExitInterrupted;
  } catch (const std::exception& e) {
    std::cerr << "diagnose bisect: " << e.what() << "\n";
    return kExitInfrastructure;
  }
}

}  // namespace

int bisect_command(int argc, char** argv) {
  CLI::App app{
      "Find the fusion rule(s) that make a command fail, by running it with rules switched off "
      "(one fresh process per trial, in parallel). The command gets the trial's TorchAir switch file "
      "as ${switch_file} in its arguments or in the variable --switch-env names; it is run directly, "
      "never through a shell.",
      "diagnose bisect"};
  Arguments a;
  app.add_option("-o,--output", a.output, "directory for the trials, the trial log, the JSON and the switch file")
      ->required();
  app.add_option("--rules", a.rules, "candidate rules (comma-separated, repeatable)")->allow_extra_args(false);
  app.add_option("--candidates-from", a.candidates_from,
                 "fusion_result.json of a run with every rule on: the rules with effect_times > 0")
      ->check(CLI::ExistingFile);
  app.add_option("--include", a.include, "only candidates matching this glob (repeatable)")->allow_extra_args(false);
  app.add_option("--exclude", a.exclude, "no candidate matching this glob (repeatable)")->allow_extra_args(false);
  app.add_option("--switch-env", a.switch_env, "environment variable that gets the trial's switch file path");
  app.add_option("--fired-report", a.fired_report,
                 "fired-rule report of a trial, relative to its directory (default fusion_result.json; '' for none)");
  app.add_option("--golden", a.golden, "judge by comparing the trial's dump with this dump (default: by exit status)");
  app.add_option("--dump", a.dump, "the trial's dump, relative to its directory (default: dump)");
  app.add_option("--preset", a.preset, "tolerance preset for every row");
  app.add_option("--tol", a.tolerance_overrides, "override a preset field, e.g. bf16.rtol=1e-2 (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--slots", a.slots, "trials at the same time (default " + std::to_string(a.slots) + ")")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-trials", a.max_trials, "trial budget (default " + std::to_string(a.max_trials) + ")")
      ->check(CLI::PositiveNumber);
  app.add_option("--baseline-repeats", a.baseline_repeats,
                 "extra runs of the all-on configuration (default " + std::to_string(a.baseline_repeats) + ")")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--confirmations", a.confirmations,
                 "agreeing runs behind each confirmation (default " + std::to_string(a.confirmations) + ")")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", a.timeout_s, "seconds per trial (default: none)")->check(CLI::NonNegativeNumber);
  app.add_flag("--crash-is-failure", a.crash_is_failure, "a crashing trial counts as a failure");
  app.add_flag("--resume", a.resume, "continue the bisection whose trial log is in --output");
  app.add_option("command", a.command, "the command and its arguments (after --)")->required();
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;
  a.rules = split_commas(a.rules);
  install_interrupt_handlers();
  return run(a);
}

}  // namespace diagnose
