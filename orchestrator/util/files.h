// Whole files read and written, as the run directory's JSON documents are.
#pragma once

#include <optional>
#include <string>

namespace diagnose {

// The whole file; nullopt when it cannot be read (missing, a directory...).
std::optional<std::string> read_file(const std::string& path);
// Atomic: readers see the old or the new file, never half of one.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace diagnose
