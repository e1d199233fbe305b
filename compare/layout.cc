#include "compare/layout.h"

#include <limits>

namespace diagnose::compare {
namespace {

constexpr int kNCHW = static_cast<int>(Layout::NCHW);
constexpr int kNHWC = static_cast<int>(Layout::NHWC);
constexpr int kND = static_cast<int>(Layout::ND);
constexpr int kNC1HWC0 = static_cast<int>(Layout::NC1HWC0);
constexpr int kFractalZ = static_cast<int>(Layout::FRACTAL_Z);
constexpr int kFractalNZ = static_cast<int>(Layout::FRACTAL_NZ);
constexpr int kNCDHW = 30, kNC = 35, kNCL = 47;

// Product of dims, nullopt on a negative dim or overflow past 2^62.
std::optional<int64_t> checked_product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) {
    if (s[i] < 0) return std::nullopt;
    if (s[i] != 0 && p > (int64_t{1} << 62) / s[i]) return std::nullopt;
    p *= s[i];
  }
  return p;
}

int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > std::numeric_limits<int64_t>::max() / b ? std::numeric_limits<int64_t>::max() : a * b;
}

bool fail(std::string* reason, const std::string& text) {
  if (reason) *reason = text;
  return false;
}

std::string describe(int format, const Shape& stored, const Shape& original) {
  return "no conversion from " + ge_format_name(format) + " " + shape_to_string(stored) + " to original shape " +
         shape_to_string(original);
}

bool plan_nz(const Shape& s, const Shape& o, Shape* logical, std::string* why) {
  if (s.size() < 4) return fail(why, "FRACTAL_NZ needs at least 4 stored dims");
  if (o.empty()) return fail(why, "original_shape is missing");
  const size_t r = s.size();
  const auto stored_batch = checked_product(s, 0, r - 4);
  const auto batch = checked_product(o, 0, o.size() >= 2 ? o.size() - 2 : 0);
  if (!stored_batch || !batch) return fail(why, "bad dims");
  const int64_t n = o.size() >= 2 ? o[o.size() - 2] : 1;
  const int64_t c = o.back();
  if (*stored_batch != *batch) return fail(why, "leading dims differ");
  if (mul_sat(s[r - 3], s[r - 2]) < n || mul_sat(s[r - 4], s[r - 1]) < c)
    return fail(why, "stored blocks are smaller than the original");
  *logical = o;
  return true;
}

bool plan_5hd(const Shape& s, const Shape& o, Shape* logical, std::string* why) {
  if (s.size() != 5 || o.size() != 4) return fail(why, "NC1HWC0 needs 5 stored dims and a 4-D original shape");
  if (s[0] != o[0] || s[2] != o[2] || s[3] != o[3]) return fail(why, "N, H or W differ");
  if (mul_sat(s[1], s[4]) < o[1]) return fail(why, "C1*C0 is smaller than C");
  *logical = o;
  return true;
}

bool plan_fractal_z(const Shape& s, const Shape& o, Shape* logical, std::string* why) {
  if (s.size() != 4 || o.size() != 4) return fail(why, "FRACTAL_Z needs 4 stored dims and a 4-D original shape");
  const int64_t hw = mul_sat(o[2], o[3]);
  if (hw == 0 || s[0] % hw != 0) return fail(why, "first stored dim is not a multiple of H*W");
  const int64_t c1 = s[0] / hw;
  if (mul_sat(s[1], s[2]) < o[0] || mul_sat(c1, s[3]) < o[1])
    return fail(why, "stored blocks are smaller than the original");
  *logical = o;
  return true;
}

}  // namespace

std::string ge_format_name(int format) {
  static const char* const kNames[] = {"NCHW",
                                       "NHWC",
                                       "ND",
                                       "NC1HWC0",
                                       "FRACTAL_Z",
                                       "NC1C0HWPAD",
                                       "NHWC1C0",
                                       "FSR_NCHW",
                                       "FRACTAL_DECONV",
                                       "C1HWNC0",
                                       "FRACTAL_DECONV_TRANSPOSE",
                                       "FRACTAL_DECONV_SP_STRIDE_TRANS",
                                       "NC1HWC0_C04",
                                       "FRACTAL_Z_C04",
                                       "CHWN",
                                       "FRACTAL_DECONV_SP_STRIDE8_TRANS",
                                       "HWCN",
                                       "NC1KHKWHWC0",
                                       "BN_WEIGHT",
                                       "FILTER_HWCK",
                                       "HASHTABLE_LOOKUP_LOOKUPS",
                                       "HASHTABLE_LOOKUP_KEYS",
                                       "HASHTABLE_LOOKUP_VALUE",
                                       "HASHTABLE_LOOKUP_OUTPUT",
                                       "HASHTABLE_LOOKUP_HITS",
                                       "C1HWNCoC0",
                                       "MD",
                                       "NDHWC",
                                       "FRACTAL_ZZ",
                                       "FRACTAL_NZ",
                                       "NCDHW",
                                       "DHWCN",
                                       "NDC1HWC0",
                                       "FRACTAL_Z_3D",
                                       "CN",
                                       "NC",
                                       "DHWNC",
                                       "FRACTAL_Z_3D_TRANSPOSE",
                                       "FRACTAL_ZN_LSTM",
                                       "FRACTAL_Z_G",
                                       "RESERVED",
                                       "ALL",
                                       "NULL",
                                       "ND_RNN_BIAS",
                                       "FRACTAL_ZN_RNN",
                                       "NYUV",
                                       "NYUV_A",
                                       "NCL",
                                       "FRACTAL_Z_WINO",
                                       "C1HWC0"};
  const int count = static_cast<int>(sizeof(kNames) / sizeof(kNames[0]));
  if (format >= 0 && format < count) return kNames[format];
  return "format " + std::to_string(format);
}

bool is_plain_format(int format) {
  return format == kNCHW || format == kND || format == kNCDHW || format == kNC || format == kNCL;
}

bool needs_layout_conversion(const TensorRef& t) {
  return t.format == kFractalNZ || t.format == kNC1HWC0 || t.format == kFractalZ ||
         (t.format == kNHWC && t.stored_shape.size() == 4);
}

std::optional<Shape> plan_logical_shape(int format, const Shape& stored, const Shape& original, std::string* reason) {
  if (!checked_product(stored, 0, stored.size())) {
    if (reason) *reason = "bad stored shape " + shape_to_string(stored);
    return std::nullopt;
  }
  if (is_plain_format(format)) return stored;
  if (!checked_product(original, 0, original.size())) {
    if (reason) *reason = "bad original shape " + shape_to_string(original);
    return std::nullopt;
  }
  Shape logical;
  std::string why;
  bool ok = false;
  switch (format) {
    case kNHWC:
      if (stored.size() == 4) {
        return Shape{stored[0], stored[3], stored[1], stored[2]};
      }
      why = "NHWC conversion needs 4 dims";
      break;
    case kFractalNZ: ok = plan_nz(stored, original, &logical, &why); break;
    case kNC1HWC0: ok = plan_5hd(stored, original, &logical, &why); break;
    case kFractalZ: ok = plan_fractal_z(stored, original, &logical, &why); break;
    default: why = "this layout is not supported"; break;
  }
  if (ok) return logical;
  if (reason) *reason = describe(format, stored, original) + ": " + why;
  return std::nullopt;
}

template <typename T>
bool convert_to_logical(int format, const Shape& stored, const Shape& logical, const std::vector<T>& in,
                        std::vector<T>* out, std::string* error) {
  std::string reason;
  const auto planned = plan_logical_shape(format, stored, logical, &reason);
  if (!planned) {
    if (error) *error = reason;
    return false;
  }
  if (*planned != logical) {
    if (error) *error = describe(format, stored, logical) + ": shapes are inconsistent";
    return false;
  }
  if (in.size() != static_cast<size_t>(element_count(stored))) {
    if (error) {
      *error = ge_format_name(format) + " tensor holds " + std::to_string(in.size()) + " elements, stored shape " +
               shape_to_string(stored) + " needs " + std::to_string(element_count(stored));
    }
    return false;
  }
  if (is_plain_format(format)) {
    *out = in;
    return true;
  }
  out->assign(static_cast<size_t>(element_count(logical)), T{});
  T* dst = out->data();
  const auto& s = stored;
  const auto& o = logical;
  switch (format) {
    case kNHWC: {
      const int64_t N = s[0], H = s[1], W = s[2], C = s[3];
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) *dst++ = in[((n * H + h) * W + w) * C + c];
      break;
    }
    case kFractalNZ: {
      const size_t r = s.size();
      const int64_t C1 = s[r - 4], No = s[r - 3], Ni = s[r - 2], C0 = s[r - 1];
      const int64_t N = o.size() >= 2 ? o[o.size() - 2] : 1, C = o.back();
      const int64_t batch = element_count(Shape(s.begin(), s.end() - 4));
      for (int64_t h = 0; h < batch; ++h)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) *dst++ = in[(((h * C1 + c / C0) * No + n / Ni) * Ni + n % Ni) * C0 + c % C0];
      break;
    }
    case kNC1HWC0: {
      const int64_t C1 = s[1], C0 = s[4];
      const int64_t N = o[0], C = o[1], H = o[2], W = o[3];
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) *dst++ = in[(((n * C1 + c / C0) * H + h) * W + w) * C0 + c % C0];
      break;
    }
    case kFractalZ: {
      const int64_t No = s[1], Ni = s[2], C0 = s[3];
      const int64_t N = o[0], C = o[1], H = o[2], W = o[3];
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w)
              *dst++ = in[(((((c / C0) * H + h) * W + w) * No + n / Ni) * Ni + n % Ni) * C0 + c % C0];
      break;
    }
  }
  return true;
}

template bool convert_to_logical<float>(int, const Shape&, const Shape&, const std::vector<float>&, std::vector<float>*,
                                        std::string*);
template bool convert_to_logical<double>(int, const Shape&, const Shape&, const std::vector<double>&,
                                         std::vector<double>*, std::string*);

}  // namespace diagnose::compare
