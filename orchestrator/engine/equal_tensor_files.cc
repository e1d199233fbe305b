#include "orchestrator/engine/equal_tensor_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <utility>

#include "compare/npy.h"
#include "orchestrator/engine/digest.h"

namespace diagnose {

namespace {

constexpr size_t kChunk = 1 << 20;

bool is_tensor_file(const std::filesystem::path& path) {
  return path.extension() == ".npy" && path.parent_path().filename() == "tensors";
}

// A tensor file's data and what else two files must share to hold the same tensor viewed at any
// shape: the element type and the data's size; a column-major file's elements are in the order of
// its shape, which must agree too. A file that is not an npy file is compared whole.
struct TensorData {
  std::string kind;
  uint64_t offset = 0;
};

std::optional<TensorData> tensor_data(const std::filesystem::path& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return std::nullopt;
  const compare::TensorRef npy = compare::read_npy(path.string());
  if (!npy.ok()) return TensorData{"file " + std::to_string(size), 0};
  std::string kind = npy.source_dtype + " " + std::to_string(size - npy.offset);
  if (npy.fortran_order) kind += " column-major " + compare::shape_to_string(npy.shape);
  return TensorData{kind, npy.offset};
}

std::optional<uint64_t> file_digest(const std::filesystem::path& path, uint64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in.seekg(static_cast<std::streamoff>(offset))) return std::nullopt;
  std::string chunk(kChunk, '\0');
  uint64_t hash = kFnv1aOffset;
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0)
    hash = fnv1a(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())), hash);
  return in.bad() ? std::nullopt : std::optional<uint64_t>(hash);
}

// whether the data of two files of one kind (from their offsets on) are the same bytes
bool same_bytes(const std::filesystem::path& a, uint64_t offset_a, const std::filesystem::path& b, uint64_t offset_b) {
  std::ifstream in_a(a, std::ios::binary), in_b(b, std::ios::binary);
  in_a.seekg(static_cast<std::streamoff>(offset_a));
  in_b.seekg(static_cast<std::streamoff>(offset_b));
  std::string chunk_a(kChunk, '\0'), chunk_b(kChunk, '\0');
  while (in_a && in_b) {
    in_a.read(chunk_a.data(), chunk_a.size());
    in_b.read(chunk_b.data(), chunk_b.size());
    if (in_a.gcount() != in_b.gcount() || chunk_a.compare(0, in_a.gcount(), chunk_b, 0, in_b.gcount()) != 0)
      return false;
  }
  return in_a.eof() && in_b.eof() && !in_a.bad() && !in_b.bad();
}

// `path` becomes a link to `kept`: a link made beside it, then renamed over it (never a moment
// without the file).
bool link_to(const std::filesystem::path& kept, const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::path beside = path.string() + ".link";
  std::filesystem::remove(beside, error);
  std::filesystem::create_hard_link(kept, beside, error);
  if (error) return false;
  std::filesystem::rename(beside, path, error);
  if (!error) return true;
  std::filesystem::remove(beside, error);
  return false;
}

}  // namespace

EqualTensorFiles::Linked EqualTensorFiles::share(const std::filesystem::path& dir) {
  std::error_code error;
  std::vector<std::filesystem::path> files;
  for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    if (it->is_regular_file(error) && !it->is_symlink(error) && is_tensor_file(it->path())) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  Linked linked;
  for (const std::filesystem::path& path : files) {
    const uintmax_t size = std::filesystem::file_size(path, error);
    const std::optional<TensorData> data = tensor_data(path);
    if (error || !data) continue;
    std::vector<Kept>& same_kind = by_kind_[data->kind];
    bool shared = false;
    std::optional<uint64_t> digest;
    for (Kept& kept : same_kind) {
      if (std::filesystem::equivalent(kept.path, path, error)) {  // linked already (an earlier invocation)
        shared = true;
        break;
      }
      if (!digest) digest = file_digest(path, data->offset);
      if (!kept.digest) kept.digest = file_digest(kept.path, kept.data_offset);
      if (!digest || kept.digest != digest || !same_bytes(kept.path, kept.data_offset, path, data->offset)) continue;
      if (link_to(kept.path, path)) {
        shared = true;
        ++linked.files;
        linked.bytes += static_cast<int64_t>(size);
      }
      break;
    }
    if (!shared) same_kind.push_back({path, data->offset, digest});
  }
  total_.files += linked.files;
  total_.bytes += linked.bytes;
  return linked;
}

DirectoryUsage directory_usage(const std::filesystem::path& dir) {
  DirectoryUsage usage;
  std::set<std::pair<dev_t, ino_t>> seen;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    struct stat info;
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    if (!seen.insert({info.st_dev, info.st_ino}).second) continue;
    const std::filesystem::path relative = it->path().lexically_relative(dir);
    const auto has = [&](const char* part) {
      return std::find(relative.begin(), relative.end(), part) != relative.end();
    };
    (has("dump") ? usage.dumps : has("outputs") ? usage.outputs : usage.other) += static_cast<int64_t>(info.st_size);
  }
  return usage;
}

}  // namespace diagnose
