// Real files for tests: a scratch directory removed afterwards, and whole-file reads and writes.
#pragma once

#include <boost/filesystem.hpp>
#include <fstream>
#include <sstream>
#include <string>

namespace diagnose::testing_support {

// A fresh directory under the system's temporary directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    namespace fs = boost::filesystem;
    path_ = (fs::temp_directory_path() / fs::unique_path("diagnose-test-%%%%-%%%%-%%%%")).string();
    fs::create_directories(path_);
  }
  ~TempDir() {
    boost::system::error_code ignored;
    boost::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Writes `bytes` to `path`, its parent directories created.
inline void write_text(const std::string& path, const std::string& bytes) {
  boost::filesystem::create_directories(boost::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace diagnose::testing_support
