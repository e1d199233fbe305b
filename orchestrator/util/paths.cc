#include "orchestrator/util/paths.h"

#include <boost/filesystem.hpp>

namespace diagnose {

namespace fs = boost::filesystem;

std::string absolute_path(const std::string& path, const std::string& base) {
  fs::path p(path);
  if (p.is_relative()) p = fs::path(base) / p;
  std::string normal = p.lexically_normal().string();
  // lexically_normal keeps a trailing "." ("/w/." for "/w" + ".").
  while (normal.size() > 2 && normal.compare(normal.size() - 2, 2, "/.") == 0) normal.resize(normal.size() - 2);
  return normal;
}

}  // namespace diagnose
