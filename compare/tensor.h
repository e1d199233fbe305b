// Where a tensor's bytes live and how to read them in logical (row-major) order.
//
// A TensorRef never holds data: readers (npy, GE dump, manifest) describe the bytes,
// TensorStream decodes them chunk by chunk so memory stays bounded for plain layouts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compare/dtype.h"

namespace diagnose::compare {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape& s);  // "[1, 128, 4096]"
uint64_t element_count(const Shape& s);       // product; 1 for a scalar

// Device (private) layouts a GE tensor can be stored in. Values are GE's
// OutputFormat numbers.
enum class Layout : int {
  NCHW = 0,
  NHWC = 1,
  ND = 2,
  NC1HWC0 = 3,
  FRACTAL_Z = 4,
  FRACTAL_NZ = 29,
};

struct TensorRef {
  std::string path;              // file holding the bytes
  uint64_t offset = 0;           // byte offset of the first element
  uint64_t byte_size = 0;        // bytes available for this tensor
  DType dtype = DType::Unknown;  // how the bytes are stored
  // The dtype the producer says the tensor had, when it was stored widened
  // (bf16 saved as float32 in npy). Unknown: same as `dtype`.
  DType declared_dtype = DType::Unknown;
  bool big_endian = false;
  bool fortran_order = false;  // npy column-major data
  Shape shape;                 // logical shape (what is compared)

  // Private device layout: when `format` is not a plain one, the bytes hold
  // `stored_shape` in `format` and TensorStream converts them to `shape`.
  int format = static_cast<int>(Layout::ND);
  Shape stored_shape;

  // Numpy-style dtype description of the source, for messages ("<f4", "GE FLOAT16").
  std::string source_dtype;
  // When non-empty the tensor cannot be read and this says why; the row that
  // uses it becomes "not comparable" with this reason.
  std::string error;
  // When set, the tensor is this one plus `plus`, element by element, added in float64: a
  // float64 truth stored as its float32 difference from the record's value (truth_delta_file).
  std::shared_ptr<const TensorRef> plus;

  bool ok() const { return error.empty(); }
  uint64_t elements() const { return element_count(shape); }
  DType logical_dtype() const { return declared_dtype == DType::Unknown ? dtype : declared_dtype; }
};

// True when `format` needs conversion to reach the logical layout.
bool needs_layout_conversion(const TensorRef& t);

// Reads a tensor's elements in logical order as float32 (msit's working type) or
// float64 (for fp64 referees). Plain layouts stream with pread in chunks; private
// layouts and Fortran order are converted in memory once.
class TensorStream {
 public:
  // Returns nullptr and sets *error when the tensor cannot be opened or its
  // bytes do not add up.
  static std::unique_ptr<TensorStream> open(const TensorRef& ref, std::string* error);
  virtual ~TensorStream() = default;

  // Element count after decoding (complex types count 2 scalars per element).
  virtual uint64_t scalar_count() const = 0;
  // Positions the stream at scalar index `first` (a multiple of 64).
  virtual bool seek(uint64_t first, std::string* error) = 0;
  // Reads up to `max` scalars; returns how many were read (0 at end), or -1 on error.
  virtual int64_t read(float* out, uint64_t max, std::string* error) = 0;
  virtual int64_t read(double* out, uint64_t max, std::string* error) = 0;
  // Up to `max` scalars: *values (valid until the next call on this stream) and their count in
  // *count (0 at the end); false with *error on failure. Plain layouts come from a mapping of
  // the file, as it stores them where that is aligned little-endian float32, float16 or
  // bfloat16 (the metric kernels read those), else decoded to float32. Call it, and read
  // *values, only inside guard_mapped_reads (mapped_file.h).
  virtual bool view(uint64_t max, StoredValues* values, uint64_t* count, std::string* error);

 protected:
  std::vector<float> view_buffer_;  // what view() returns when it cannot point into the file
};

// Reads the whole tensor into memory (tests, small tensors, layout conversion).
std::optional<std::vector<float>> read_all_float(const TensorRef& ref, std::string* error);

}  // namespace diagnose::compare
