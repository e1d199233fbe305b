// Text for XML, HTML and SVG: escaped for character data and attribute values alike.
#pragma once

#include <string>

namespace diagnose {

// & < > " ' as references; tab, newline and carriage return kept; other control characters,
// which XML 1.0 does not allow even as references, as '?'.
std::string markup_escape(const std::string& text);

}  // namespace diagnose
