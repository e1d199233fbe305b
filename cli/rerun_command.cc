#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/filesystem.hpp>
#include <cctype>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "orchestrator/engine/digest.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"
#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/util/files.h"
#include "orchestrator/util/paths.h"
#include "runspec/run_spec.h"

namespace diagnose {

namespace fs = boost::filesystem;

namespace {

// `text` with the path `from` replaced by `to` wherever it stands whole (not "…/target" in
// "…/target-undumped"): the recorded run's own directory becomes the new one.
std::string moved(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    const size_t end = at + from.size();
    const bool whole = end == text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) ||
                                               text[end] == '-' || text[end] == '_' || text[end] == '.');
    if (whole) {
      text.replace(at, from.size(), to);
      at += to.size();
    } else {
      at = end;
    }
  }
  return text;
}

// The step the verdict names (report.json), when the command names none.
std::string deciding_step(const std::string& dir) {
  std::optional<std::string> text = read_file(dir + "/report.json");
  if (!text) return "";
  const nlohmann::json report = nlohmann::json::parse(*text, nullptr, false);
  const nlohmann::json step = report.is_object()
                                  ? report.value("verdict", nlohmann::json::object()).value("step", nlohmann::json())
                                  : nlohmann::json();
  return step.is_string() ? step.get<std::string>() : "";
}

// runs/<...>/reruns/<step>-<run>-<n>, the first n not taken.
std::string new_directory(const std::string& dir, const std::string& step, const std::string& run) {
  for (int n = 1;; ++n) {
    fs::path candidate = fs::path(dir) / "reruns" / (step + "-" + run + "-" + std::to_string(n));
    boost::system::error_code ec;
    fs::create_directories(candidate.parent_path(), ec);
    if (fs::create_directory(candidate, ec) && !ec) return candidate.string();
    if (ec && !fs::exists(candidate))
      throw std::runtime_error("cannot create " + candidate.string() + ": " + ec.message());
  }
}

// The hash of a run's final outputs (its outputs/tensors, by name and bytes); "" when it has none.
std::string outputs_digest(const std::string& run_dir) {
  const fs::path tensors = fs::path(run_dir) / "outputs" / "tensors";
  boost::system::error_code ec;
  if (!fs::is_directory(tensors, ec)) return "";
  std::vector<fs::path> files;
  for (fs::directory_iterator it(tensors, ec), end; !ec && it != end; it.increment(ec))
    if (fs::is_regular_file(it->path(), ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  uint64_t hash = kFnv1aOffset;
  for (const fs::path& file : files) {
    hash = fnv1a(file.filename().string() + '\n', hash);
    std::optional<std::string> bytes = read_file(file.string());
    hash = fnv1a(bytes ? *bytes : std::string(), hash);
  }
  return files.empty() ? "" : hex_digest(hash);
}

}  // namespace

int rerun_command(int argc, char** argv) {
  CLI::App app{
      "Run one recorded model run of a run directory again, as it was recorded (its command, directory,\n"
      "environment and spec), into a new directory under RUN_DIR/reruns; prints where, and the hash of\n"
      "its final outputs next to the recorded run's. Exit code 0: the same outputs, 1: different,\n"
      "3: the run did not succeed.",
      "diagnose rerun"};
  std::string run_dir, step_id, run_name;
  app.add_option("run_dir", run_dir, "run directory (runs/<time>-<name>)")->required();
  app.add_option("step", step_id, "the step whose run to repeat (default: the one that decided the verdict)");
  app.add_option("run", run_name, "which of the step's runs (default: its only one)");
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;

  const std::string dir = absolute_path(run_dir, fs::current_path().string());
  State state;
  try {
    state = load_state(state_path(dir));
  } catch (const std::exception& e) {
    std::cerr << "diagnose rerun: " << e.what() << "\n";
    return kExitUsage;
  }
  if (step_id.empty()) step_id = deciding_step(dir);
  const StepResult* step = step_id.empty() ? nullptr : state.find(step_id);
  if (!step) {
    std::cerr << "diagnose rerun: " << (step_id.empty() ? "name a step" : "no step '" + step_id + "'") << " in " << dir
              << "\n";
    return kExitUsage;
  }
  std::vector<std::string> names;
  for (const RunRecord& r : step->runs) names.push_back(r.name);
  if (run_name.empty() && names.size() == 1) run_name = names.front();
  auto recorded =
      std::find_if(step->runs.begin(), step->runs.end(), [&](const RunRecord& r) { return r.name == run_name; });
  if (recorded == step->runs.end()) {
    std::cerr << "diagnose rerun: step '" << step_id << "' has "
              << (run_name.empty() ? "several runs" : "no run '" + run_name + "'") << "; name one of:";
    for (const std::string& n : names) std::cerr << " " << n;
    std::cerr << "\n";
    return kExitUsage;
  }
  if (recorded->argv.empty() || recorded->ranks > 1) {
    std::cerr << "diagnose rerun: " << step_id << "/" << run_name
              << (recorded->argv.empty() ? " recorded no command"
                                         : " ran as several ranks, which rerun does not repeat")
              << "\n";
    return kExitUsage;
  }

  std::string where;
  try {
    where = new_directory(dir, step_id, run_name);
  } catch (const std::exception& e) {
    std::cerr << "diagnose rerun: " << e.what() << "\n";
    return kExitInfrastructure;
  }
  const std::string from = recorded->dir;
  ProcessSpec spec;
  for (const std::string& arg : recorded->argv) spec.argv.push_back(moved(arg, from, where));
  spec.cwd = moved(recorded->cwd, from, where);
  for (const auto& [name, value] : recorded->env) spec.env[name] = moved(value, from, where);
  auto run_spec = recorded->env.find("DIAGNOSE_RUN_SPEC");
  if (run_spec != recorded->env.end()) {
    std::optional<std::string> text = read_file(run_spec->second);
    if (!text) {
      std::cerr << "diagnose rerun: the run's spec " << run_spec->second << " is gone\n";
      return kExitUsage;
    }
    const std::string copied = moved(*text, from, where);
    write_file_atomically(run_spec_path(where), copied);
    spec.env["DIAGNOSE_RUN_SPEC"] = run_spec_path(where);
    spec.env["DIAGNOSE_RUN_SPEC_DIGEST"] = hex_digest(fnv1a(copied));
  }
  spec.stdout_path = where + "/stdout.log";
  spec.stderr_path = where + "/stderr.log";

  std::cerr << "diagnose rerun: " << step_id << "/" << run_name << " again, in " << where << "\n";
  install_interrupt_handlers();
  const ProcessOutcome outcome = run_process(spec);
  const std::string was = outputs_digest(from), now = outputs_digest(where);
  std::cout << "run: " << step_id << "/" << run_name << " " << run_status_name(outcome.status)
            << (outcome.error.empty() ? "" : " (" + outcome.error + ")") << "\n"
            << "directory: " << where << "\n"
            << "outputs hash: " << (now.empty() ? "none (no final outputs)" : now) << "\n"
            << "recorded outputs hash: " << (was.empty() ? "none (no final outputs)" : was)
            << (now.empty() || was.empty() ? ""
                : now == was               ? " (the same)"
                                           : " (different)")
            << "\n";
  if (outcome.status != RunStatus::Succeeded) return kExitInfrastructure;
  return now == was ? kExitNoProblem : kExitProblem;
}

}  // namespace diagnose
