#include "orchestrator/workflow/template.h"

namespace diagnose {

namespace {

// Calls on_text for literal pieces and on_reference for each ${name}.
template <typename OnText, typename OnReference>
void scan(const std::string& text, OnText on_text, OnReference on_reference) {
  size_t i = 0;
  while (i < text.size()) {
    size_t dollar = text.find('$', i);
    if (dollar == std::string::npos || dollar + 1 >= text.size()) {
      on_text(text.substr(i));
      return;
    }
    on_text(text.substr(i, dollar - i));
    char next = text[dollar + 1];
    if (next == '$') {
      on_text("$");
      i = dollar + 2;
    } else if (next == '{') {
      size_t close = text.find('}', dollar + 2);
      if (close == std::string::npos) throw TemplateError("'${' without a closing '}'", dollar);
      std::string name = text.substr(dollar + 2, close - dollar - 2);
      size_t first = name.find_first_not_of(' ');
      size_t last = name.find_last_not_of(' ');
      if (first == std::string::npos) throw TemplateError("empty reference '${}'", dollar);
      on_reference(name.substr(first, last - first + 1), dollar);
      i = close + 1;
    } else {
      on_text("$");
      i = dollar + 1;
    }
  }
}

}  // namespace

std::vector<TemplateReference> template_references(const std::string& text) {
  std::vector<TemplateReference> references;
  scan(
      text, [](const std::string&) {},
      [&](const std::string& name, size_t offset) {
        references.push_back({name, offset});
      });
  return references;
}

std::string expand_template(const std::string& text, const TemplateLookup& lookup) {
  std::string out;
  scan(
      text, [&](const std::string& piece) { out += piece; },
      [&](const std::string& name, size_t offset) {
        std::optional<std::string> value = lookup(name);
        if (!value) throw TemplateError("unknown reference '${" + name + "}'", offset);
        out += *value;
      });
  return out;
}

}  // namespace diagnose
