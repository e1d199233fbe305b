// Reads what a run's log file gained since the last call and hands out whole lines (the
// live tail of --verbose), for local processes and Slurm jobs alike.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace diagnose {

class LogFollower {
 public:
  LogFollower(std::string path, bool from_stderr) : path_(std::move(path)), from_stderr_(from_stderr) {}
  // `flush_partial`: also hand out a last line without its newline (the writer is done).
  void poll(const std::function<void(const std::string&, bool)>& on_line, bool flush_partial);

 private:
  std::string path_;
  bool from_stderr_;
  size_t offset_ = 0;
  std::string pending_;
};

}  // namespace diagnose
