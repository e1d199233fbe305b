// `compare`: the comparison core on two dump locations. Each side is a path, or a
// run of the model (with its own args/env) whose dump is compared once it ends.
#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>

#include "compare/compare.h"
#include "compare/report.h"
#include "orchestrator/command_line.h"
#include "orchestrator/step.h"
#include "orchestrator/validate.h"
#include "orchestrator/workflow_schema.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
const char* kSides[] = {"golden", "target", "referee"};

Schema side_schema(const std::string& description) {
  std::vector<Property> run_properties = command_properties();
  run_properties.push_back(optional("dump", string_schema("Where the run leaves its dump. Default: ${run.dump_dir}.")));
  return any_of_schema(description, {string_schema("path of an existing dump (file or directory)"),
                                     object_schema("a run of the model whose dump is compared", run_properties)});
}

nlohmann::json worst_rows(const compare::CompareResult& result, size_t limit) {
  std::vector<const compare::Row*> failing;
  for (const compare::RowGroup& group : result.groups)
    for (const compare::Row& row : group.rows)
      if (row.verdict == compare::Verdict::Fail) failing.push_back(&row);
  // Largest absolute error first; among equals, the least similar.
  auto worse = [](const compare::Row* a, const compare::Row* b) {
    if (!a->metrics || !b->metrics) return !a->metrics && b->metrics.has_value();
    if (a->metrics->max_absolute_error != b->metrics->max_absolute_error)
      return a->metrics->max_absolute_error > b->metrics->max_absolute_error;
    return a->metrics->cosine_similarity < b->metrics->cosine_similarity;
  };
  std::stable_sort(failing.begin(), failing.end(), worse);
  nlohmann::json table = nlohmann::json::array();
  for (size_t i = 0; i < failing.size() && i < limit; ++i) {
    const compare::Row& row = *failing[i];
    nlohmann::json entry = {{"op", row.spec.op_key},
                            {"io", row.spec.direction == compare::Direction::Input ? "input" : "output"},
                            {"index", row.spec.index},
                            {"data_id", row.data_id},
                            {"judged_by", row.judged_by}};
    std::string reasons;
    for (const std::string& r : row.reasons) reasons += (reasons.empty() ? "" : " ") + r;
    entry["reasons"] = reasons;
    if (row.metrics) {
      entry["cosine_similarity"] = row.metrics->cosine_similarity;
      entry["max_absolute_error"] = row.metrics->max_absolute_error;
      entry["max_relative_error"] = row.metrics->max_relative_error;
    }
    table.push_back(entry);
  }
  return table;
}

class CompareStep : public StepKind {
 public:
  std::string name() const override { return "compare"; }
  std::string description() const override {
    return "Compare a golden dump with a target dump using the comparison core; fails when any compared row "
           "is out of tolerance.";
  }
  std::vector<Property> parameters() const override {
    Schema preset_fields = object_schema(
        "Fields of one tolerance preset.",
        {optional("atol", number_schema("absolute tolerance", 0)), optional("rtol", number_schema("relative tolerance", 0)),
         optional("min_cosine", number_schema("minimum cosine similarity", -1)),
         optional("max_relative_l2", number_schema("relative euclidean distance bound", 0)),
         optional("exact", boolean_schema("any difference fails")),
         optional("referee_multiplier", number_schema("three-way rule multiplier", 0))});
    return {required("golden", side_schema("The reference side: a dump path, or a run of the model.")),
            required("target", side_schema("The side under suspicion: a dump path, or a run of the model.")),
            optional("referee", side_schema("A float64 dump of the golden run, for three-way judgement.")),
            optional("tolerances", map_schema("Tolerance overrides for this step, by preset name.", preset_fields)),
            optional("preset", string_schema("Use this tolerance preset for every row instead of choosing by dtype.")),
            optional("rank", integer_schema("Compare only this rank.", 0)),
            optional("worst_rows", integer_schema("How many failing rows the evidence table lists (default 5).", 0))};
  }
  std::vector<std::string> result_fields() const override {
    return {"rows", "compared", "passed", "failed", "not_comparable", "first_failing_op", "source_ops", "unmatched"};
  }
  std::string default_category() const override { return "precision_problem"; }

  void check(const StepSpec& step, const CheckContext&, Diagnostics& diagnostics) const override {
    for (const char* side : kSides) {
      YAML::Node node = step.node[side];
      if (node && node.IsMap()) check_command_form(node, "steps." + step.id + "." + side, false, diagnostics);
    }
    check_tolerances(step.node["tolerances"], diagnostics);
    if (YAML::Node preset = step.node["preset"]) {
      compare::Tolerances defaults = compare::Tolerances::defaults();
      std::vector<std::string> names;
      for (const auto& [name, p] : defaults.presets) names.push_back(name);
      if (!defaults.presets.count(preset.Scalar()))
        diagnostics.error(preset.Mark(), "steps." + step.id + ".preset: unknown tolerance preset '" + preset.Scalar() + "'" + did_you_mean(preset.Scalar(), names));
    }
  }

  StepResult evaluate(const StepContext& context) const override {
    std::vector<RunRequest> requests;
    for (const char* side : kSides) {
      YAML::Node spec = context.step().node[side];
      if (spec && spec.IsMap()) requests.push_back(context.model_run(side, spec));
    }
    std::vector<RunRecord> runs = context.run(requests);
    if (std::optional<StepResult> error = error_from_runs(runs)) return *error;
    const YAML::Node& node = context.step().node;
    auto side_path = [&](const char* side) -> std::string {
      YAML::Node spec = node[side];
      if (spec.IsScalar()) return context.path(spec.Scalar());
      return context.path(spec["dump"] ? spec["dump"].Scalar() : "${run.dump_dir}", side);
    };

    compare::CompareOptions options;
    options.golden_path = side_path("golden");
    options.my_path = side_path("target");
    if (node["referee"]) options.referee_path = side_path("referee");
    if (node["rank"]) options.rank = node["rank"].as<int>();
    std::vector<std::string> overrides = tolerance_assignments(node["tolerances"]);
    std::string tolerance_error;
    options.tolerances = context.tolerances(overrides, &tolerance_error);
    if (node["preset"]) options.tolerances.forced_preset = node["preset"].Scalar();

    StepResult result;
    std::string reproduce = "diagnose compare -gp " + shell_quote(options.golden_path) + " -mp " +
                            shell_quote(options.my_path);
    if (options.referee_path) reproduce += " --referee " + shell_quote(*options.referee_path);
    if (options.rank) reproduce += " -r " + std::to_string(*options.rank);
    if (node["preset"]) reproduce += " --preset " + shell_quote(node["preset"].Scalar());
    std::vector<std::string> all_overrides = context.workflow().defaults.tolerance_overrides;
    all_overrides.insert(all_overrides.end(), overrides.begin(), overrides.end());
    for (const std::string& assignment : all_overrides) reproduce += " --tol " + shell_quote(assignment);
    for (const RunRecord& run : runs) result.reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
    result.reproduce.push_back(reproduce);
    if (!tolerance_error.empty()) {
      result.status = StepStatus::Error;
      result.summary = "bad tolerances: " + tolerance_error;
      return result;
    }

    compare::CompareResult compared = compare::run_compare(options);
    if (!compared.fatal_error.empty()) {
      result.status = StepStatus::Error;
      result.summary = "cannot compare: " + compared.fatal_error;
      return result;
    }

    std::string out_dir = context.step_dir() + "/compare";
    fs::create_directories(out_dir);
    std::vector<std::string> csv_paths = compare::write_csv_reports(compared, out_dir);
    std::string json_path = out_dir + "/result.json";
    std::ofstream(json_path) << compare::result_to_json(compared, options, csv_paths).dump(2) << "\n";
    for (const std::string& csv : csv_paths) result.evidence.push_back({"file", "comparison table", csv, nullptr});
    result.evidence.push_back({"file", "comparison result (JSON)", json_path, nullptr});

    const compare::CompareSummary& s = compared.summary;
    result.metrics = {{"rows", s.rows}, {"compared", s.compared}, {"passed", s.passed}, {"failed", s.failed},
                      {"not_comparable", s.not_comparable}, {"unmatched", s.unmatched.size()}};
    nlohmann::json source_ops = nlohmann::json::array();
    for (const compare::Divergence& d : s.divergences) {
      std::string where = (d.rank >= 0 ? " rank " + std::to_string(d.rank) : "") +
                          (d.graph >= 0 ? " graph " + std::to_string(d.graph) : "");
      result.findings.push_back({"first failing op" + where + ": " + d.first_failing_op, d.first_failing_op});
      for (const std::string& op : d.source_ops) {
        result.findings.push_back({"error starts at op " + op + " (its inputs pass, an output fails)", op});
        source_ops.push_back(op);
      }
    }
    result.metrics["first_failing_op"] = s.divergences.empty() ? nlohmann::json() : nlohmann::json(s.divergences.front().first_failing_op);
    result.metrics["source_ops"] = source_ops;
    for (const auto& [name, reason] : s.unmatched) result.findings.push_back({"not matched: " + name + " (" + reason + ")", ""});
    size_t limit = node["worst_rows"] ? node["worst_rows"].as<size_t>() : 5;
    nlohmann::json worst = worst_rows(compared, limit);
    if (!worst.empty()) result.evidence.push_back({"table", "worst rows", "", worst});

    std::string counts = std::to_string(s.compared) + " rows compared, " + std::to_string(s.failed) + " failed";
    if (s.compared == 0) {
      result.status = StepStatus::Error;
      result.summary = "nothing could be compared (" + std::to_string(s.rows) + " rows, " +
                       std::to_string(s.not_comparable) + " not comparable)";
    } else if (s.failed > 0) {
      result.status = StepStatus::Fail;
      result.summary = counts;
      if (!s.divergences.empty()) result.summary += "; first divergence at " + s.divergences.front().first_failing_op;
    } else {
      result.status = StepStatus::Pass;
      result.summary = counts;
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<StepKind> make_compare_step() { return std::make_unique<CompareStep>(); }

}  // namespace diagnose
