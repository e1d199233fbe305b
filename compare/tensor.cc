#include "compare/tensor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "compare/layout.h"
#include "compare/mapped_file.h"

namespace diagnose::compare {

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

uint64_t element_count(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= d < 0 ? 0 : static_cast<uint64_t>(d);
  return n;
}

namespace {

class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }

  // Reads exactly `size` bytes at `offset`; false with *error on failure or short file.
  bool read_at(void* buffer, uint64_t size, uint64_t offset, std::string* error) const {
    auto* p = static_cast<uint8_t*>(buffer);
    while (size > 0) {
      ssize_t got = ::pread(fd_, p, size, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        *error = std::string("read failed: ") + std::strerror(errno);
        return false;
      }
      if (got == 0) {
        *error = "file ended before the tensor's data";
        return false;
      }
      p += got;
      size -= static_cast<uint64_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return true;
  }

 private:
  int fd_;
};

std::string open_error(const std::string& path) { return "cannot open " + path + ": " + std::strerror(errno); }

// Checks that the file exists, is a regular file and holds the bytes the ref claims.
bool check_extent(const TensorRef& ref, std::string* error) {
  struct stat st;
  if (::stat(ref.path.c_str(), &st) != 0) {
    *error = open_error(ref.path);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = ref.path + " is not a regular file";
    return false;
  }
  const uint64_t needed =
      bytes_for_elements(ref.dtype, element_count(needs_layout_conversion(ref) ? ref.stored_shape : ref.shape));
  if (needed > ref.byte_size) {
    *error = "tensor needs " + std::to_string(needed) + " bytes, only " + std::to_string(ref.byte_size) + " available";
    return false;
  }
  if (ref.offset + needed > static_cast<uint64_t>(st.st_size)) {
    *error = "file has " + std::to_string(st.st_size) + " bytes, tensor needs " + std::to_string(ref.offset + needed);
    return false;
  }
  return true;
}

// Plain row-major data read straight from the file in chunks.
class PlainStream : public TensorStream {
 public:
  PlainStream(const TensorRef& ref, std::unique_ptr<File> file)
      : ref_(ref), file_(std::move(file)), scalars_(element_count(ref.shape) * scalars_per_element(ref.dtype)) {}

  uint64_t scalar_count() const override { return scalars_; }

  bool seek(uint64_t first, std::string* error) override {
    if (first > scalars_ || first % 64 != 0) {
      *error = "bad seek position " + std::to_string(first);
      return false;
    }
    position_ = first;
    return true;
  }

  int64_t read(float* out, uint64_t max, std::string* error) override { return read_into(out, max, error); }
  int64_t read(double* out, uint64_t max, std::string* error) override { return read_into(out, max, error); }

  bool view(uint64_t max, StoredValues* values, uint64_t* count, std::string* error) override {
    const auto [scalars, elements, byte_offset, bytes] = next_span(max);
    *count = scalars;
    if (scalars == 0) return true;
    if (!window_ || !window_->covers(byte_offset, bytes)) {
      window_.reset();
      if (!mapping_refused_) {
        const uint64_t end = ref_.offset + bytes_for_elements(ref_.dtype, scalars_ / scalars_per_element(ref_.dtype));
        window_ = MappedRange::map(file_->fd(), byte_offset, std::max(bytes, std::min(kWindow, end - byte_offset)));
        mapping_refused_ = !window_;
      }
      if (!window_) return TensorStream::view(max, values, count, error);
    }
    const uint8_t* src = window_->data() + (byte_offset - window_->offset());
    const bool kernels_read_it =
        ref_.dtype == DType::Float32 || ref_.dtype == DType::Float16 || ref_.dtype == DType::BFloat16;
    if (kernels_read_it && !ref_.big_endian && reinterpret_cast<uintptr_t>(src) % (bit_width(ref_.dtype) / 8) == 0) {
      *values = {src, ref_.dtype};
    } else {
      view_buffer_.resize(scalars);
      decode_to_float(ref_.dtype, src, elements, ref_.big_endian, view_buffer_.data());
      *values = {view_buffer_.data(), DType::Float32};
    }
    position_ += scalars;
    return true;
  }

 private:
  static constexpr uint64_t kWindow = 4 << 20;  // bytes mapped at a time: what the reader holds resident
  // The next scalars from position_, at most `max` and whole elements, and where they lie in the file.
  struct Span {
    uint64_t scalars, elements, byte_offset, bytes;
  };
  Span next_span(uint64_t max) const {
    const int per = scalars_per_element(ref_.dtype);
    const uint64_t scalars = std::min(max, scalars_ - position_) / per * per;
    const uint64_t elements = scalars / per;
    return {scalars, elements, ref_.offset + bytes_for_elements(ref_.dtype, position_ / per),
            bytes_for_elements(ref_.dtype, elements)};
  }

  template <typename T>
  int64_t read_into(T* out, uint64_t max, std::string* error) {
    const auto [scalars, elements, byte_offset, bytes] = next_span(max);
    if (scalars == 0) return 0;
    if constexpr (std::is_same_v<T, float>) {
      if (ref_.dtype == DType::Float32 && !ref_.big_endian) {
        if (!file_->read_at(out, bytes, byte_offset, error)) return -1;
        position_ += scalars;
        return static_cast<int64_t>(scalars);
      }
    }
    buffer_.resize(bytes);
    if (!file_->read_at(buffer_.data(), bytes, byte_offset, error)) return -1;
    if constexpr (std::is_same_v<T, float>)
      decode_to_float(ref_.dtype, buffer_.data(), elements, ref_.big_endian, out);
    else
      decode_to_double(ref_.dtype, buffer_.data(), elements, ref_.big_endian, out);
    position_ += scalars;
    return static_cast<int64_t>(scalars);
  }

  TensorRef ref_;
  std::unique_ptr<File> file_;
  uint64_t scalars_;
  uint64_t position_ = 0;
  std::vector<uint8_t> buffer_;
  std::unique_ptr<MappedRange> window_;
  bool mapping_refused_ = false;  // then view() reads with pread like read()
};

// Whole tensor decoded in memory, for layouts that need reordering.
template <typename Stored>
class MemoryStream : public TensorStream {
 public:
  explicit MemoryStream(std::vector<Stored> data) : data_(std::move(data)) {}
  uint64_t scalar_count() const override { return data_.size(); }
  bool seek(uint64_t first, std::string* error) override {
    if (first > data_.size()) {
      *error = "bad seek position " + std::to_string(first);
      return false;
    }
    position_ = first;
    return true;
  }
  int64_t read(float* out, uint64_t max, std::string*) override { return copy(out, max); }
  int64_t read(double* out, uint64_t max, std::string*) override { return copy(out, max); }

 private:
  template <typename T>
  int64_t copy(T* out, uint64_t max) {
    const uint64_t n = std::min<uint64_t>(max, data_.size() - position_);
    std::copy(data_.begin() + position_, data_.begin() + position_ + n, out);
    position_ += n;
    return static_cast<int64_t>(n);
  }
  std::vector<Stored> data_;
  uint64_t position_ = 0;
};

// Column-major (numpy Fortran order) to row-major.
template <typename T>
std::vector<T> fortran_to_c_order(const std::vector<T>& in, const Shape& shape, int per) {
  std::vector<T> out(in.size());
  const size_t rank = shape.size();
  std::vector<uint64_t> col_stride(rank, 1);
  for (size_t d = 1; d < rank; ++d) col_stride[d] = col_stride[d - 1] * shape[d - 1];
  std::vector<int64_t> index(rank, 0);
  const uint64_t elements = in.size() / per;
  for (uint64_t i = 0; i < elements; ++i) {
    uint64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += index[d] * col_stride[d];
    for (int k = 0; k < per; ++k) out[i * per + k] = in[src * per + k];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

template <typename T>
std::unique_ptr<TensorStream> open_in_memory(const TensorRef& ref, const File& file, std::string* error) {
  const bool convert = needs_layout_conversion(ref);
  const Shape& stored = convert ? ref.stored_shape : ref.shape;
  const uint64_t elements = element_count(stored);
  const int per = scalars_per_element(ref.dtype);
  std::vector<uint8_t> bytes(bytes_for_elements(ref.dtype, elements));
  if (!file.read_at(bytes.data(), bytes.size(), ref.offset, error)) return nullptr;
  std::vector<T> values(elements * per);
  if constexpr (std::is_same_v<T, float>)
    decode_to_float(ref.dtype, bytes.data(), elements, ref.big_endian, values.data());
  else
    decode_to_double(ref.dtype, bytes.data(), elements, ref.big_endian, values.data());
  if (ref.fortran_order) values = fortran_to_c_order(values, ref.shape, per);
  if (convert) {
    std::vector<T> logical;
    if (!convert_to_logical<T>(ref.format, ref.stored_shape, ref.shape, values, &logical, error)) return nullptr;
    values = std::move(logical);
  }
  return std::make_unique<MemoryStream<T>>(std::move(values));
}

// The element-wise sum, in float64, of two streams of the same scalar count (TensorRef::plus).
class SumStream : public TensorStream {
 public:
  SumStream(std::unique_ptr<TensorStream> first, std::unique_ptr<TensorStream> second)
      : first_(std::move(first)), second_(std::move(second)) {}
  uint64_t scalar_count() const override { return first_->scalar_count(); }
  bool seek(uint64_t first, std::string* error) override {
    return first_->seek(first, error) && second_->seek(first, error);
  }
  int64_t read(double* out, uint64_t max, std::string* error) override {
    const int64_t got = first_->read(out, max, error);
    if (got <= 0) return got;
    addend_.resize(static_cast<uint64_t>(got));
    for (int64_t done = 0; done < got;) {
      const int64_t more = second_->read(addend_.data() + done, static_cast<uint64_t>(got - done), error);
      if (more < 0) return -1;
      if (more == 0) {
        *error = "the two parts of a summed tensor differ in length";
        return -1;
      }
      done += more;
    }
    for (int64_t i = 0; i < got; ++i) out[i] += addend_[static_cast<size_t>(i)];
    return got;
  }
  int64_t read(float* out, uint64_t max, std::string* error) override {
    sum_.resize(max);
    const int64_t got = read(sum_.data(), max, error);
    for (int64_t i = 0; i < got; ++i) out[i] = static_cast<float>(sum_[static_cast<size_t>(i)]);
    return got;
  }

 private:
  std::unique_ptr<TensorStream> first_, second_;
  std::vector<double> addend_, sum_;
};

}  // namespace

bool TensorStream::view(uint64_t max, StoredValues* values, uint64_t* count, std::string* error) {
  view_buffer_.resize(std::max<uint64_t>(max, 1));
  const int64_t got = read(view_buffer_.data(), max, error);
  if (got < 0) return false;
  *values = {view_buffer_.data(), DType::Float32};
  *count = static_cast<uint64_t>(got);
  return true;
}

std::unique_ptr<TensorStream> TensorStream::open(const TensorRef& ref, std::string* error) {
  if (!ref.ok()) {
    *error = ref.error;
    return nullptr;
  }
  if (ref.dtype == DType::Unknown) {
    *error = "unsupported dtype " + ref.source_dtype;
    return nullptr;
  }
  if (ref.plus) {
    TensorRef first = ref;
    first.plus.reset();
    auto a = open(first, error);
    auto b = a ? open(*ref.plus, error) : nullptr;
    if (!b) return nullptr;
    if (a->scalar_count() != b->scalar_count()) {
      *error = "the two parts of a summed tensor differ in length";
      return nullptr;
    }
    return std::make_unique<SumStream>(std::move(a), std::move(b));
  }
  if (!check_extent(ref, error)) return nullptr;
  auto file = std::make_unique<File>(ref.path);
  if (file->fd() < 0) {
    *error = open_error(ref.path);
    return nullptr;
  }
  if (!ref.fortran_order && !needs_layout_conversion(ref)) return std::make_unique<PlainStream>(ref, std::move(file));
  const bool wide = ref.dtype == DType::Float64 || ref.dtype == DType::Complex128 || ref.dtype == DType::Int64 ||
                    ref.dtype == DType::UInt64;
  return wide ? open_in_memory<double>(ref, *file, error) : open_in_memory<float>(ref, *file, error);
}

std::optional<std::vector<float>> read_all_float(const TensorRef& ref, std::string* error) {
  auto stream = TensorStream::open(ref, error);
  if (!stream) return std::nullopt;
  std::vector<float> out(stream->scalar_count());
  uint64_t done = 0;
  while (done < out.size()) {
    int64_t got = stream->read(out.data() + done, out.size() - done, error);
    if (got < 0) return std::nullopt;
    if (got == 0) break;
    done += static_cast<uint64_t>(got);
  }
  return out;
}

}  // namespace diagnose::compare
