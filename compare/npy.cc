#include "compare/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <variant>
#include <vector>

namespace diagnose::compare {

namespace {

constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMaxHeader = 1 << 20;

// The header is a Python dict literal; these are the only value kinds it may hold.
using Value = std::variant<std::string, bool, std::vector<int64_t>>;

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  bool parse(std::map<std::string, Value>* out, std::string* error) {
    skip_space();
    if (!eat('{')) return fail("expected '{'", error);
    while (true) {
      skip_space();
      if (eat('}')) return true;
      std::string key;
      if (!parse_string(&key)) return fail("expected a quoted key", error);
      skip_space();
      if (!eat(':')) return fail("expected ':' after key '" + key + "'", error);
      skip_space();
      Value value;
      if (!parse_value(&value, error)) return false;
      (*out)[key] = std::move(value);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) return true;
      return fail("expected ',' or '}'", error);
    }
  }

 private:
  bool fail(const std::string& what, std::string* error) {
    *error = "corrupt npy header: " + what + " at offset " + std::to_string(pos_);
    return false;
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool parse_string(std::string* out) {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    const char quote = s_[pos_++];
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') return false;  // numpy never escapes; refuse rather than guess
      out->push_back(s_[pos_++]);
    }
    return eat(quote);
  }
  bool parse_int(int64_t* out) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (v > (INT64_MAX - 9) / 10) return false;
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    *out = v;
    return pos_ > start;
  }
  bool parse_value(Value* out, std::string* error) {
    if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
      std::string v;
      if (!parse_string(&v)) return fail("unterminated string", error);
      *out = v;
      return true;
    }
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      *out = true;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      *out = false;
      return true;
    }
    if (eat('(')) {
      std::vector<int64_t> dims;
      while (true) {
        skip_space();
        if (eat(')')) break;
        int64_t d;
        if (!parse_int(&d)) return fail("expected a dimension", error);
        dims.push_back(d);
        skip_space();
        if (eat(',')) continue;
        skip_space();
        if (eat(')')) break;
        return fail("expected ',' or ')' in shape", error);
      }
      *out = dims;
      return true;
    }
    if (pos_ < s_.size() && s_[pos_] == '[') return fail("structured dtypes (a list descr) are not supported", error);
    return fail("unexpected value", error);
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool decode_descr(const std::string& descr, TensorRef* ref) {
  ref->source_dtype = descr;
  if (descr.size() < 2) {
    ref->error = "npy dtype '" + descr + "' is not understood";
    return false;
  }
  const char order = descr[0];
  const char kind = descr[1];
  if (kind == 'O') {
    ref->error = "npy holds an object array (pickled data), which is never loaded";
    return false;
  }
  if (kind == 'U' || kind == 'S' || kind == 'a') {
    ref->error = "npy holds a string array, not numbers";
    return false;
  }
  int itemsize = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || itemsize > 1000) {
      ref->error = "npy dtype '" + descr + "' is not supported";
      return false;
    }
    itemsize = itemsize * 10 + (descr[i] - '0');
  }
  ref->dtype = dtype_from_numpy(kind, itemsize);
  if (ref->dtype == DType::Unknown) {
    ref->error = "npy dtype '" + descr + "' is not supported";
    return false;
  }
  ref->big_endian = order == '>' && itemsize > 1;
  return true;
}

}  // namespace

TensorRef parse_npy_header(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& path) {
  TensorRef ref;
  ref.path = path;
  if (size < 10 || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    ref.error = "not an npy file (bad magic)";
    return ref;
  }
  const uint8_t major = bytes[6];
  size_t header_len, prefix;
  if (major == 1) {
    header_len = bytes[8] | (static_cast<size_t>(bytes[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) {
      ref.error = "npy header truncated";
      return ref;
    }
    header_len = bytes[8] | (static_cast<size_t>(bytes[9]) << 8) | (static_cast<size_t>(bytes[10]) << 16) |
                 (static_cast<size_t>(bytes[11]) << 24);
    prefix = 12;
  } else {
    ref.error = "npy format version " + std::to_string(major) + " is not supported";
    return ref;
  }
  if (header_len > kMaxHeader || prefix + header_len > size) {
    ref.error = "npy header length " + std::to_string(header_len) + " runs past the end of the file";
    return ref;
  }
  std::map<std::string, Value> fields;
  std::string error;
  HeaderParser parser(std::string_view(reinterpret_cast<const char*>(bytes + prefix), header_len));
  if (!parser.parse(&fields, &error)) {
    ref.error = error;
    return ref;
  }
  const auto descr = fields.find("descr");
  const auto fortran = fields.find("fortran_order");
  const auto shape = fields.find("shape");
  if (descr == fields.end() || !std::holds_alternative<std::string>(descr->second) || fortran == fields.end() ||
      !std::holds_alternative<bool>(fortran->second) || shape == fields.end() ||
      !std::holds_alternative<std::vector<int64_t>>(shape->second)) {
    ref.error = "corrupt npy header: needs 'descr' (string), 'fortran_order' (bool) and 'shape' (tuple)";
    return ref;
  }
  if (!decode_descr(std::get<std::string>(descr->second), &ref)) return ref;
  ref.fortran_order = std::get<bool>(fortran->second);
  ref.shape = std::get<std::vector<int64_t>>(shape->second);
  ref.offset = prefix + header_len;
  ref.byte_size = file_size >= ref.offset ? file_size - ref.offset : 0;
  uint64_t elements = 1;
  for (int64_t d : ref.shape) {
    if (d != 0 && elements > UINT64_MAX / 16 / static_cast<uint64_t>(d)) {
      ref.error = "npy shape " + shape_to_string(ref.shape) + " is too large";
      return ref;
    }
    elements *= static_cast<uint64_t>(d);
  }
  const uint64_t needed = bytes_for_elements(ref.dtype, elements);
  if (needed > ref.byte_size) {
    ref.error = "npy data truncated: shape " + shape_to_string(ref.shape) + " needs " + std::to_string(needed) +
                " bytes, file has " + std::to_string(ref.byte_size);
  }
  return ref;
}

TensorRef read_npy(const std::string& path) {
  TensorRef ref;
  ref.path = path;
  // O_NONBLOCK: a FIFO named like an npy must not hang the run (no effect on regular files).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    ref.error = "cannot open " + path + ": " + std::strerror(errno);
    return ref;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    ref.error = path + " is not a regular file";
    return ref;
  }
  std::vector<uint8_t> head(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), 4096));
  ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  if (got >= 10) {
    // Headers may be longer than the first read.
    size_t len = 10 + (head[8] | (static_cast<size_t>(head[9]) << 8));
    if (head[6] >= 2 && got >= 12)
      len = 12 + (head[8] | (static_cast<size_t>(head[9]) << 8) | (static_cast<size_t>(head[10]) << 16) |
                  (static_cast<size_t>(head[11]) << 24));
    if (len > head.size() && len <= kMaxHeader + 12 && len <= static_cast<uint64_t>(st.st_size)) {
      head.resize(len);
      got = ::pread(fd, head.data(), head.size(), 0);
    }
  }
  ::close(fd);
  if (got < 0) {
    ref.error = "cannot read " + path + ": " + std::strerror(errno);
    return ref;
  }
  return parse_npy_header(head.data(), static_cast<size_t>(got), static_cast<uint64_t>(st.st_size), path);
}

}  // namespace diagnose::compare
