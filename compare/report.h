// Writers for a comparison result: msit-compatible CSV, versioned JSON, terminal summary.
// Formats: docs/compare-output.md.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"

namespace diagnose::compare {

// msit's 24 column names, in order, then the project's extra columns.
const std::vector<std::string>& csv_columns();

// Writes one CSV per (rank, graph) group into out_dir, never overwriting an
// existing file; returns the paths written (in group order). Throws std::runtime_error
// when out_dir cannot be written.
std::vector<std::string> write_csv_reports(const CompareResult& result, const std::string& out_dir);

// Writes `text` to out_dir/{stem}_{UTC %Y%m%d%H%M%S}{ext}, appending _1, _2...
// when that name is taken (created with O_EXCL, so concurrent runs never share a
// file). Returns the path; throws std::runtime_error when it cannot write.
std::string write_unique_file(const std::string& out_dir, const std::string& stem, const std::string& ext,
                              const std::string& text);

// The JSON result (format "diagnose-compare-result", version 1).
nlohmann::json result_to_json(const CompareResult& result, const CompareOptions& options,
                              const std::vector<std::string>& csv_paths);

// What the verdict rests on, in one line: "judged 39 of 41 rows; 2 not comparable: integer
// indices (2); 12 record(s) of one side unmatched (listed in result.json)".
std::string coverage_text(const CompareSummary& summary);

// Short human summary: counts, first divergence, worst rows.
void print_summary(const CompareResult& result, std::ostream& out);

// Python's repr() of a double ("1.0", "1e-07", "0.30000000000000004", "nan", "inf").
std::string python_float_repr(double v);

}  // namespace diagnose::compare
