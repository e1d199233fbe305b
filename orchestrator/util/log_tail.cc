#include "orchestrator/util/log_tail.h"

#include <fstream>

namespace diagnose {

std::string log_tail(const std::string& path, int max_lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  std::streamoff size = in.tellg();
  std::streamoff start =
      size > static_cast<std::streamoff>(max_bytes) ? size - static_cast<std::streamoff>(max_bytes) : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t cut = text.size();
  for (int lines = 0; lines < max_lines && cut != std::string::npos && cut > 0; ++lines)
    cut = text.rfind('\n', cut - 1);
  return cut == std::string::npos || cut == 0 ? text : text.substr(cut + 1);
}

}  // namespace diagnose
