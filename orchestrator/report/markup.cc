#include "orchestrator/report/markup.h"

namespace diagnose {

std::string markup_escape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r')
          out += static_cast<char>(c);
        else
          out += "?";
    }
  }
  return out;
}

}  // namespace diagnose
