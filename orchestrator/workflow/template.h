// ${name} references in strings, expanded from a lookup; no shell is involved.
// "$$" stands for a literal "$".
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace diagnose {

struct TemplateReference {
  std::string name;   // "steps.eager.dump_dir"
  size_t offset = 0;  // of the "${" in the text
};

struct TemplateError : std::runtime_error {
  TemplateError(const std::string& message, size_t offset) : std::runtime_error(message), offset(offset) {}
  size_t offset;
};

// The references in `text`. Throws TemplateError for "${" without "}" or an empty name.
std::vector<TemplateReference> template_references(const std::string& text);

using TemplateLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Replaces every reference by its value. Throws TemplateError for a name the lookup does not know.
std::string expand_template(const std::string& text, const TemplateLookup& lookup);

}  // namespace diagnose
