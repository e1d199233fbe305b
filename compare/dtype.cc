#include "compare/dtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)  // the F16C conversion; elsewhere (aarch64) the portable one
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace diagnose::compare {

namespace {

struct TypeInfo {
  DType type;
  int bits;
  int scalars;
  bool floating;
  const char* torch;
  const char* short_name;
};

constexpr TypeInfo kTypes[] = {
    {DType::Unknown, 0, 1, false, "unknown", "unknown"},
    {DType::Bool, 8, 1, false, "torch.bool", "bool"},
    {DType::UInt1, 1, 1, false, "torch.uint1", "uint1"},
    {DType::Int4, 4, 1, false, "torch.int4", "int4"},
    {DType::Int8, 8, 1, false, "torch.int8", "int8"},
    {DType::UInt8, 8, 1, false, "torch.uint8", "uint8"},
    {DType::Int16, 16, 1, false, "torch.int16", "int16"},
    {DType::UInt16, 16, 1, false, "torch.uint16", "uint16"},
    {DType::Int32, 32, 1, false, "torch.int32", "int32"},
    {DType::UInt32, 32, 1, false, "torch.uint32", "uint32"},
    {DType::Int64, 64, 1, false, "torch.int64", "int64"},
    {DType::UInt64, 64, 1, false, "torch.uint64", "uint64"},
    {DType::Float16, 16, 1, true, "torch.float16", "fp16"},
    {DType::BFloat16, 16, 1, true, "torch.bfloat16", "bf16"},
    {DType::Float32, 32, 1, true, "torch.float32", "fp32"},
    {DType::Float64, 64, 1, true, "torch.float64", "fp64"},
    {DType::Float8E4M3FN, 8, 1, true, "torch.float8_e4m3fn", "fp8_e4m3fn"},
    {DType::Float8E5M2, 8, 1, true, "torch.float8_e5m2", "fp8_e5m2"},
    {DType::HiFloat8, 8, 1, true, "hifloat8", "hifloat8"},
    {DType::Complex64, 64, 2, true, "torch.complex64", "complex64"},
    {DType::Complex128, 128, 2, true, "torch.complex128", "complex128"},
};

const TypeInfo& info(DType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];
}

template <typename T>
T load(const uint8_t* p, bool swap) {
  T v;
  if (!swap) {
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  uint8_t b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) b[i] = p[sizeof(T) - 1 - i];
  std::memcpy(&v, b, sizeof(T));
  return v;
}

float fp8_decode(uint8_t v, int exp_bits, int man_bits, bool ieee_specials) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const bool negative = v & 0x80;
  const int e = (v >> man_bits) & ((1 << exp_bits) - 1);
  const int m = v & ((1 << man_bits) - 1);
  float mag;
  if (ieee_specials && e == (1 << exp_bits) - 1) {
    mag = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (!ieee_specials && e == (1 << exp_bits) - 1 && m == (1 << man_bits) - 1) {
    mag = std::numeric_limits<float>::quiet_NaN();  // E4M3FN: only S.1111.111 is NaN, no inf
  } else if (e == 0) {
    mag = std::ldexp(static_cast<float>(m), 1 - bias - man_bits);
  } else {
    mag = std::ldexp(1.0f + static_cast<float>(m) / (1 << man_bits), e - bias);
  }
  return negative ? -mag : mag;
}

// 8-bit float types decode through a 256-entry table; the same table gives exact
// ULP spacing (the distance to the neighbouring representable value).
struct ByteFloatTable {
  std::array<float, 256> value;
  std::vector<float> finite_sorted;  // ascending, distinct
};

const ByteFloatTable& byte_table(DType t) {
  static const auto make = [](float (*decode)(uint8_t)) {
    ByteFloatTable table;
    for (int i = 0; i < 256; ++i) {
      table.value[i] = decode(static_cast<uint8_t>(i));
      if (std::isfinite(table.value[i])) table.finite_sorted.push_back(table.value[i]);
    }
    std::sort(table.finite_sorted.begin(), table.finite_sorted.end());
    table.finite_sorted.erase(std::unique(table.finite_sorted.begin(), table.finite_sorted.end()),
                              table.finite_sorted.end());
    return table;
  };
  static const ByteFloatTable e4m3 = make(fp8_e4m3fn_to_float);
  static const ByteFloatTable e5m2 = make(fp8_e5m2_to_float);
  static const ByteFloatTable hif8 = make(hifloat8_to_float);
  if (t == DType::Float8E4M3FN) return e4m3;
  if (t == DType::Float8E5M2) return e5m2;
  return hif8;
}

// The gap between the representable values around |x| (the gap above |x| when |x|
// is representable, as for the IEEE types), the last gap beyond the largest value.
double byte_float_ulp(DType t, double x) {
  const auto& sorted = byte_table(t).finite_sorted;
  const float a = static_cast<float>(std::fabs(x));
  auto above = std::upper_bound(sorted.begin(), sorted.end(), a);
  if (above == sorted.end()) return sorted.back() - *(sorted.end() - 2);
  if (above == sorted.begin()) return *(above + 1) - *above;
  return *above - *(above - 1);
}

#if defined(__x86_64__)
__attribute__((target("f16c,avx"))) void half_to_float_f16c(const uint8_t* src, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    out[i] = half_to_float(h);
  }
}
#endif

template <typename Out>
void decode(DType t, const uint8_t* src, size_t n, bool swap, Out* out) {
  switch (t) {
    case DType::Bool:
      for (size_t i = 0; i < n; ++i) out[i] = src[i] ? 1 : 0;
      return;
    case DType::UInt1:
      for (size_t i = 0; i < n; ++i) out[i] = (src[i / 8] >> (i % 8)) & 1;
      return;
    case DType::Int4:
      for (size_t i = 0; i < n; ++i) {
        int nibble = (src[i / 2] >> (4 * (i % 2))) & 0xF;
        out[i] = static_cast<Out>(nibble >= 8 ? nibble - 16 : nibble);
      }
      return;
    case DType::Int8:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(src[i]);
      return;
    case DType::UInt8:
      for (size_t i = 0; i < n; ++i) out[i] = src[i];
      return;
    case DType::Int16:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<int16_t>(src + 2 * i, swap));
      return;
    case DType::UInt16:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<uint16_t>(src + 2 * i, swap));
      return;
    case DType::Int32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<int32_t>(src + 4 * i, swap));
      return;
    case DType::UInt32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<uint32_t>(src + 4 * i, swap));
      return;
    case DType::Int64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<int64_t>(src + 8 * i, swap));
      return;
    case DType::UInt64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<Out>(load<uint64_t>(src + 8 * i, swap));
      return;
    case DType::Float16:
      for (size_t i = 0; i < n; ++i) out[i] = half_to_float(load<uint16_t>(src + 2 * i, swap));
      return;
    case DType::BFloat16:
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(load<uint16_t>(src + 2 * i, swap));
      return;
    case DType::Float32:
    case DType::Complex64:
      for (size_t i = 0; i < n * scalars_per_element(t); ++i) out[i] = static_cast<Out>(load<float>(src + 4 * i, swap));
      return;
    case DType::Float64:
    case DType::Complex128:
      for (size_t i = 0; i < n * scalars_per_element(t); ++i)
        out[i] = static_cast<Out>(load<double>(src + 8 * i, swap));
      return;
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::HiFloat8: {
      const auto& table = byte_table(t).value;
      for (size_t i = 0; i < n; ++i) out[i] = table[src[i]];
      return;
    }
    case DType::Unknown:
      for (size_t i = 0; i < n; ++i) out[i] = std::numeric_limits<Out>::quiet_NaN();
      return;
  }
}

}  // namespace

int bit_width(DType t) { return info(t).bits; }
int scalars_per_element(DType t) { return info(t).scalars; }
bool is_floating(DType t) { return info(t).floating; }
std::string torch_name(DType t) { return info(t).torch; }
std::string short_name(DType t) { return info(t).short_name; }

uint64_t bytes_for_elements(DType t, uint64_t n) {
  const uint64_t bits = static_cast<uint64_t>(bit_width(t));
  if (bits >= 8) return n * (bits / 8);
  return (n * bits + 7) / 8;
}

DType dtype_from_numpy(char kind, int itemsize) {
  switch (kind) {
    case 'b': return itemsize == 1 ? DType::Bool : DType::Unknown;
    case 'i':
      switch (itemsize) {
        case 1: return DType::Int8;
        case 2: return DType::Int16;
        case 4: return DType::Int32;
        case 8: return DType::Int64;
      }
      return DType::Unknown;
    case 'u':
      switch (itemsize) {
        case 1: return DType::UInt8;
        case 2: return DType::UInt16;
        case 4: return DType::UInt32;
        case 8: return DType::UInt64;
      }
      return DType::Unknown;
    case 'f':
      switch (itemsize) {
        case 2: return DType::Float16;
        case 4: return DType::Float32;
        case 8: return DType::Float64;
      }
      return DType::Unknown;
    case 'c':
      switch (itemsize) {
        case 8: return DType::Complex64;
        case 16: return DType::Complex128;
      }
      return DType::Unknown;
  }
  return DType::Unknown;
}

DType dtype_from_ge(int code, std::string* unsupported_reason) {
  switch (code) {
    case 1: return DType::Float32;
    case 2: return DType::Float16;
    case 3: return DType::Int8;
    case 4: return DType::UInt8;
    case 5: return DType::Int16;
    case 6: return DType::UInt16;
    case 7: return DType::Int32;
    case 8: return DType::Int64;
    case 9: return DType::UInt32;
    case 10: return DType::UInt64;
    case 11: return DType::Bool;
    case 12: return DType::Float64;
    case 16: return DType::Complex64;
    case 17: return DType::Complex128;
    case 18: return DType::Int8;    // QINT8: quantized values, compared as stored integers
    case 19: return DType::Int16;   // QINT16
    case 20: return DType::Int32;   // QINT32
    case 21: return DType::UInt8;   // QUINT8
    case 22: return DType::UInt16;  // QUINT16
    case 27: return DType::BFloat16;
    case 28: return DType::Int4;
    case 29: return DType::UInt1;
    case 33: return DType::HiFloat8;
    case 34: return DType::Float8E5M2;
    case 35: return DType::Float8E4M3FN;
  }
  static const char* const kNames[] = {
      "DT_UNDEFINED",      "DT_FLOAT",       "DT_FLOAT16",       "DT_INT8",        "DT_UINT8",
      "DT_INT16",          "DT_UINT16",      "DT_INT32",         "DT_INT64",       "DT_UINT32",
      "DT_UINT64",         "DT_BOOL",        "DT_DOUBLE",        "DT_STRING",      "DT_DUAL_SUB_INT8",
      "DT_DUAL_SUB_UINT8", "DT_COMPLEX64",   "DT_COMPLEX128",    "DT_QINT8",       "DT_QINT16",
      "DT_QINT32",         "DT_QUINT8",      "DT_QUINT16",       "DT_RESOURCE",    "DT_STRING_REF",
      "DT_DUAL",           "DT_VARIANT",     "DT_BF16",          "DT_INT4",        "DT_UINT1",
      "DT_INT2",           "DT_UINT2",       "DT_COMPLEX32",     "DT_HIFLOAT8",    "DT_FLOAT8_E5M2",
      "DT_FLOAT8_E4M3FN",  "DT_FLOAT8_E8M0", "DT_FLOAT6_E3M2",   "DT_FLOAT6_E2M3", "DT_FLOAT4_E2M1",
      "DT_FLOAT4_E1M2",    "DT_HIFLOAT4",    "DT_HIFLOAT4_SCALE"};
  if (unsupported_reason) {
    const int count = static_cast<int>(sizeof(kNames) / sizeof(kNames[0]));
    *unsupported_reason =
        "unsupported dtype " + (code >= 0 && code < count ? std::string(kNames[code]) : "code " + std::to_string(code));
  }
  return DType::Unknown;
}

DType dtype_from_name(const std::string& raw) {
  std::string name = raw;
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  static const std::pair<const char*, DType> kAliases[] = {
      {"float32", DType::Float32},
      {"float", DType::Float32},
      {"fp32", DType::Float32},
      {"float16", DType::Float16},
      {"half", DType::Float16},
      {"fp16", DType::Float16},
      {"bfloat16", DType::BFloat16},
      {"bf16", DType::BFloat16},
      {"float64", DType::Float64},
      {"double", DType::Float64},
      {"fp64", DType::Float64},
      {"int8", DType::Int8},
      {"uint8", DType::UInt8},
      {"int16", DType::Int16},
      {"short", DType::Int16},
      {"uint16", DType::UInt16},
      {"int32", DType::Int32},
      {"int", DType::Int32},
      {"uint32", DType::UInt32},
      {"int64", DType::Int64},
      {"long", DType::Int64},
      {"uint64", DType::UInt64},
      {"bool", DType::Bool},
      {"int4", DType::Int4},
      {"uint1", DType::UInt1},
      {"float8_e4m3fn", DType::Float8E4M3FN},
      {"fp8_e4m3fn", DType::Float8E4M3FN},
      {"float8_e5m2", DType::Float8E5M2},
      {"fp8_e5m2", DType::Float8E5M2},
      {"hifloat8", DType::HiFloat8},
      {"complex64", DType::Complex64},
      {"complex128", DType::Complex128},
  };
  for (const auto& [alias, type] : kAliases)
    if (name == alias) return type;
  return DType::Unknown;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  float mag;
  if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 0x1F) {
    mag = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    uint32_t bits = ((exp + 112) << 23) | (man << 13);
    std::memcpy(&mag, &bits, 4);
  }
  uint32_t bits;
  std::memcpy(&bits, &mag, 4);
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

bool cpu_has_f16c() {
#if defined(__x86_64__)
  // cpuid leaf 1, ecx bit 29 (clang's __builtin_cpu_supports does not know "f16c").
  static const bool has = [] {
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) && __builtin_cpu_supports("avx");
  }();
  return has;
#else
  return false;
#endif
}

float fp8_e4m3fn_to_float(uint8_t v) { return fp8_decode(v, 4, 3, false); }
float fp8_e5m2_to_float(uint8_t v) { return fp8_decode(v, 5, 2, true); }

void decode_to_float(DType t, const uint8_t* src, size_t n, bool swap, float* out) {
  if (t == DType::Float32 && !swap) {
    std::memcpy(out, src, n * 4);
    return;
  }
#if defined(__x86_64__)
  if (t == DType::Float16 && !swap && cpu_has_f16c()) {
    half_to_float_f16c(src, n, out);
    return;
  }
#endif
  decode(t, src, n, swap, out);
}

void decode_to_double(DType t, const uint8_t* src, size_t n, bool swap, double* out) { decode(t, src, n, swap, out); }

double ulp_at(DType t, double x) {
  int mantissa_bits, min_exponent;
  switch (t) {
    case DType::Float16:
      mantissa_bits = 10;
      min_exponent = -14;
      break;
    case DType::BFloat16:
      mantissa_bits = 7;
      min_exponent = -126;
      break;
    case DType::Float32:
    case DType::Complex64:
      mantissa_bits = 23;
      min_exponent = -126;
      break;
    case DType::Float64:
    case DType::Complex128:
      mantissa_bits = 52;
      min_exponent = -1022;
      break;
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::HiFloat8: return byte_float_ulp(t, x);
    default: return 1.0;
  }
  int exponent = min_exponent;
  if (x != 0 && std::isfinite(x)) exponent = std::max(std::ilogb(x), min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

}  // namespace diagnose::compare
