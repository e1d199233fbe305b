// The verdict's categories: the names a workflow's `diagnoses:` and `verdict.order` may use,
// each with its title and advice. engine/verdict.h decides between them.
#pragma once

#include <string>
#include <vector>

namespace diagnose {

struct VerdictCategory {
  std::string name;
  std::string title;
  std::string advice;
  bool diagnosable;  // a step can diagnose it (others are outcomes of the rules)
};

// Every category, diagnosable ones in the default order of precedence.
const std::vector<VerdictCategory>& verdict_categories();
const VerdictCategory* find_verdict_category(const std::string& name);

}  // namespace diagnose
