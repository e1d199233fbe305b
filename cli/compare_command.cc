#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "compare/compare.h"
#include "compare/report.h"

namespace diagnose {

namespace {

// msit spells two flags with one dash and two letters, which CLI11 does not accept
// as names; they are rewritten to their long forms before parsing.
std::vector<std::string> msit_flags_to_long(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-gp" || a.rfind("-gp=", 0) == 0)
      a.replace(0, 3, "--golden-path");
    else if (a == "-mp" || a.rfind("-mp=", 0) == 0)
      a.replace(0, 3, "--my-path");
    args.push_back(a);
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  return args;
}

}  // namespace

int compare_command(int argc, char** argv) {
  CLI::App app{"Compare two tensor dumps (TorchAir GE/FX, npy directories, diagnose dumps, single files)",
               "diagnose compare"};
  compare::CompareOptions options;
  options.tolerances = compare::Tolerances::defaults();
  std::string output = ".";
  std::string json_path, tolerance_file, preset, referee;
  std::vector<std::string> overrides;
  int rank = -1;
  bool quiet = false;
  app.add_option("--golden-path", options.golden_path, "(-gp) golden dump: directory or single file")->required();
  app.add_option("--my-path", options.my_path, "(-mp) the dump under suspicion")->required();
  app.add_option("-o,--output", output, "output directory for CSV and JSON results");
  app.add_option("-r,--rank", rank, "compare only this rank")->check(CLI::NonNegativeNumber);
  app.add_option("--referee", referee, "float64 dump of the golden run, for three-way judgement");
  app.add_option("--preset", preset, "tolerance preset for every row (fp64, fp32, fp16, bf16, fp8, exact)");
  app.add_option("--tol", overrides, "override a preset field, e.g. fp16.rtol=1e-2 (repeatable)");
  app.add_option("--tolerances", tolerance_file, "JSON file of preset overrides");
  app.add_option("--threads", options.threads, "worker threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--json", json_path, "also write the JSON result to this path");
  app.add_flag("-q,--quiet", quiet, "print only errors");
  if (int code = parse_arguments(app, msit_flags_to_long(argc, argv)); code != kArgumentsParsed) return code;

  if (!tolerance_file.empty()) {
    std::string error = options.tolerances.load_overrides(tolerance_file);
    if (!error.empty()) {
      std::cerr << "diagnose compare: " << error << "\n";
      return 2;
    }
  }
  for (const auto& o : overrides) {
    std::string error = options.tolerances.apply_override(o);
    if (!error.empty()) {
      std::cerr << "diagnose compare: " << error << "\n";
      return 2;
    }
  }
  if (!preset.empty()) {
    if (!options.tolerances.presets.count(preset)) {
      std::cerr << "diagnose compare: unknown preset '" << preset << "'\n";
      return 2;
    }
    options.tolerances.forced_preset = preset;
  }
  if (rank >= 0) options.rank = rank;
  if (!referee.empty()) options.referee_path = referee;

  compare::CompareResult result = compare::run_compare(options);
  std::vector<std::string> csv_paths;
  std::string result_path;
  try {
    csv_paths = compare::write_csv_reports(result, output);
    nlohmann::json doc = compare::result_to_json(result, options, csv_paths);
    const std::string text = doc.dump(1) + "\n";
    result_path = compare::write_unique_file(output, "diagnose_cmp_result", ".json", text);
    if (!json_path.empty()) {
      std::ofstream out(json_path);
      out << text;
      if (!out) throw std::runtime_error("cannot write " + json_path);
    }
  } catch (const std::exception& e) {
    std::cerr << "diagnose compare: " << e.what() << "\n";
    return 3;
  }
  if (!quiet) {
    compare::print_summary(result, std::cout);
    for (const auto& p : csv_paths) std::cout << "csv: " << p << "\n";
    std::cout << "json: " << result_path << "\n";
  } else if (!result.fatal_error.empty()) {
    std::cerr << "diagnose compare: " << result.fatal_error << "\n";
  }
  return compare::exit_code_for(result);
}

}  // namespace diagnose
