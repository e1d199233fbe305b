// Conditions on earlier steps' results, as written in `when:` and `fail_if:`:
//
//   steps.compare.status == fail && steps.compare.failed > 3
//
// Operators: == != < <= > >= && || ! (also `and`, `or`, `not`) and parentheses.
// Literals: numbers, 'quoted' or "quoted" strings, true, false, null, and the step
// statuses pass, fail, error, skipped. Every other name is a reference `steps.<id>.<field>`.
// A reference whose value is missing is null; null equals only null, and an ordering
// comparison involving anything but two numbers is false.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace diagnose {

struct ConditionError : std::runtime_error {
  ConditionError(const std::string& message, size_t offset) : std::runtime_error(message), offset(offset) {}
  size_t offset;  // in the condition text
};

struct ConditionReference {
  std::string name;  // "steps.compare.failed"
  size_t offset = 0;
};

using ConditionLookup = std::function<nlohmann::json(const std::string& name)>;

class Condition {
 public:
  // Throws ConditionError.
  static Condition parse(const std::string& text);

  const std::vector<ConditionReference>& references() const { return references_; }
  bool evaluate(const ConditionLookup& lookup) const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::vector<ConditionReference> references_;
};

}  // namespace diagnose
