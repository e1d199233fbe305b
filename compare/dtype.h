// Element types the comparison core understands, and their decoding to float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace diagnose::compare {

enum class DType {
  Unknown,
  Bool,
  UInt1,  // packed bits, LSB first
  Int4,   // packed nibbles, low nibble first
  Int8,
  UInt8,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Float8E4M3FN,
  Float8E5M2,
  HiFloat8,
  Complex64,   // compared as interleaved float32 (real, imag) pairs
  Complex128,  // compared as interleaved float64 pairs
};

// Bits per element (4 for Int4, 1 for UInt1, 128 for Complex128).
int bit_width(DType t);
// Number of real scalars one element decodes to (2 for complex types).
int scalars_per_element(DType t);
bool is_floating(DType t);
// Name as torch prints it ("torch.float16"); "unknown" for Unknown.
std::string torch_name(DType t);
// Short name used in presets and tables ("fp16", "bf16", "int8"...).
std::string short_name(DType t);

// numpy dtype kind+itemsize ("f2", "u1"...) to DType; Unknown if not numeric.
DType dtype_from_numpy(char kind, int itemsize);
// GE dump OutputDataType numbering (see docs/formats.md). Unknown with a reason
// for types with no numeric meaning here.
DType dtype_from_ge(int code, std::string* unsupported_reason);
// "torch.float32" / "float32" / "fp32" / "bf16" ... to DType.
DType dtype_from_name(const std::string& name);

// Bytes needed to hold `n` elements starting at element 0.
uint64_t bytes_for_elements(DType t, uint64_t n);

// Decodes `n` elements from `src` (which starts at an element boundary; for
// sub-byte types a multiple of 8 elements) into n * scalars_per_element floats.
// `swap` reverses byte order of multi-byte elements (big-endian data).
// Float64 is rounded to float32 here, as msit does; use decode_to_double for referees.
void decode_to_float(DType t, const uint8_t* src, size_t n, bool swap, float* out);
void decode_to_double(DType t, const uint8_t* src, size_t n, bool swap, double* out);

// One side's values as a file holds them: float32, or float16 / bfloat16 bits (little-endian,
// aligned to their size), which the metric kernels widen to float32 as they read them.
struct StoredValues {
  const void* data;
  DType dtype;  // Float32, Float16 or BFloat16
};

// Whether this CPU converts float16 in hardware (F16C, with AVX).
bool cpu_has_f16c();

// Scalar decoders, exposed for tests.
float half_to_float(uint16_t h);
float bf16_to_float(uint16_t b);
float fp8_e4m3fn_to_float(uint8_t v);
float fp8_e5m2_to_float(uint8_t v);
float hifloat8_to_float(uint8_t v);

// Spacing of representable values of `t` at magnitude |x| (unit in the last place).
// For integer types 1. Used for ULP error measured in the target's dtype.
double ulp_at(DType t, double x);

}  // namespace diagnose::compare
