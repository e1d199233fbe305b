// Equal tensor files stored once. The runs of one diagnosis write many tensors more than once:
// the final outputs of every run that computes them as eager does (the reference, its repeat,
// Dynamo's backends), the compiled target's outputs dumped and undumped, a transposed weight
// dumped by the ATen-level and the FX-level runs, the single-op check's eager and compiled
// outputs where they agree, the logits row of a module-output dump ([128, V]) and the final
// output that is its view ([1, 128, V]). After each step the engine replaces every tensor file of
// that step whose data equal a file it kept before (same element type and bytes, whatever shape its
// .npy header gives) by a hard link to that file: the run directory holds those bytes once, and
// readers view a file at its record's shape (docs/dump-format.md). Tensor files are the .npy files
// of a dump's tensors/ folder; one that is not an npy file is compared whole. No writer writes into
// one again once its record is appended (the plugin replaces a file of that name instead).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace diagnose {

class EqualTensorFiles {
 public:
  struct Linked {
    int64_t files = 0;  // files that became links to an equal file kept before
    int64_t bytes = 0;  // the bytes they no longer hold
  };

  // Links each tensor file under `dir` (in path order) to an equal file seen before, here or in
  // an earlier call, and remembers the others. A file that cannot be read or linked stays as it is.
  Linked share(const std::filesystem::path& dir);
  const Linked& total() const { return total_; }

 private:
  struct Kept {
    std::filesystem::path path;
    uint64_t data_offset = 0;        // where its data start (after the .npy header)
    std::optional<uint64_t> digest;  // of its data, computed when another file of its kind comes
  };
  // by what must agree besides the data: the element type, the data's size (and, column-major,
  // the shape)
  std::map<std::string, std::vector<Kept>> by_kind_;
  Linked total_;
};

// The bytes of the files under `dir`, a file with several links counted once, by part: op dumps
// (under a folder named dump/), final outputs (outputs/) and the rest (the single-op check's
// outputs, logs, reports).
struct DirectoryUsage {
  int64_t dumps = 0;
  int64_t outputs = 0;
  int64_t other = 0;
  int64_t total() const { return dumps + outputs + other; }
};
DirectoryUsage directory_usage(const std::filesystem::path& dir);

}  // namespace diagnose
