#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "orchestrator/ci/baseline.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

using nlohmann::json;

int baseline_command(int argc, char** argv) {
  CLI::App app{"Record and inspect CI gate baselines.", "diagnose baseline"};
  app.require_subcommand(1);
  BaselineSource source;
  std::string to, dir;
  bool force = false;
  CLI::App* save = app.add_subcommand("save", "record a baseline from a run directory, a plugin run or a dump");
  save->add_option("source", source.path, "run directory (runs/...), plugin run directory or diagnose dump")
      ->required();
  save->add_option("--to", to, "baseline directory to create")->required();
  save->add_option("--run", source.run,
                   "in a run directory: the run to take, STEP or STEP/RUN (default: the first with outputs)");
  save->add_option("--model-version", source.model_version, "version recorded with the baseline (default: the run's)");
  save->add_flag("--force", force, "replace an existing baseline");
  CLI::App* show = app.add_subcommand("show", "verify a baseline and print its metadata");
  show->add_option("dir", dir, "baseline directory")->required();
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;
  try {
    if (*save) {
      Baseline b = save_baseline(source, to, force);
      std::cout << "baseline saved: " << b.dir << " (model version " << b.metadata.value("model_version", "") << ", "
                << b.metadata["files"].size() << " files, from " << b.metadata.value("source", "") << ")\n";
    } else {
      Baseline b = load_baseline(dir);
      json shown = b.metadata;
      shown.erase("files");
      std::cout << shown.dump(2) << "\n" << b.metadata["files"].size() << " files verified\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "diagnose baseline: " << e.what() << "\n";
    return kExitUsage;
  }
  return 0;
}

}  // namespace diagnose
