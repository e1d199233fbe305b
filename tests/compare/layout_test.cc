#include <gtest/gtest.h>

#include <numeric>

#include "compare/layout.h"

namespace diagnose::compare {
namespace {

// A tiny numpy: row-major arrays with transpose and leading-corner slicing, used to
// evaluate the reference formulas independently of layout.cc's index math.
struct Array {
  Shape shape;
  std::vector<double> data;
};

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Array reshape(Array a, const Shape& s) {
  EXPECT_EQ(element_count(a.shape), element_count(s));
  a.shape = s;
  return a;
}

Array transpose(const Array& a, const std::vector<int>& perm) {
  Array out;
  for (int p : perm) out.shape.push_back(a.shape[p]);
  const auto in_strides = strides_of(a.shape);
  out.data.resize(a.data.size());
  std::vector<int64_t> idx(out.shape.size(), 0);
  for (size_t flat = 0; flat < out.data.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * in_strides[perm[d]];
    out.data[flat] = a.data[src];
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < out.shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Array slice(const Array& a, const Shape& limits) {
  Array out;
  out.shape = limits;
  const auto st = strides_of(a.shape);
  std::vector<int64_t> idx(limits.size(), 0);
  const uint64_t n = element_count(limits);
  for (uint64_t flat = 0; flat < n; ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * st[d];
    out.data.push_back(a.data[src]);
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < limits[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Array iota(const Shape& s) {
  Array a{s, std::vector<double>(element_count(s))};
  std::iota(a.data.begin(), a.data.end(), 1.0);
  return a;
}

std::vector<double> convert(int format, const Shape& stored, const Shape& original, const std::vector<double>& in) {
  std::string reason;
  const auto logical = plan_logical_shape(format, stored, original, &reason);
  EXPECT_TRUE(logical) << reason;
  if (!logical) return {};
  EXPECT_EQ(*logical, original);
  std::vector<double> out;
  std::string error;
  EXPECT_TRUE(convert_to_logical(format, stored, *logical, in, &out, &error)) << error;
  return out;
}

TEST(Layout, FractalNzToNdWithPadding) {
  // original [2, 3, 17, 20]: H = 6, N = 17, C = 20; C0 = 16 -> C1 = 2; Ni = 16 -> No = 2.
  const int64_t H = 6, N = 17, C = 20, C1 = 2, No = 2, Ni = 16, C0 = 16;
  const Shape stored{2, 3, C1, No, Ni, C0};
  const Shape original{2, 3, N, C};
  const Array x = iota(stored);
  Array ref = reshape(x, {H, C1, No, Ni, C0});
  ref = transpose(ref, {0, 2, 3, 1, 4});
  ref = reshape(ref, {H, No * Ni, C1 * C0});
  ref = slice(ref, {H, N, C});
  EXPECT_EQ(convert(29, stored, original, x.data), ref.data);
}

TEST(Layout, FractalNzTwoDimsAndOneDim) {
  const Shape stored{1, 1, 16, 16};
  Array x = iota(stored);
  Array ref = slice(reshape(transpose(reshape(x, {1, 1, 1, 16, 16}), {0, 2, 3, 1, 4}), {1, 16, 16}), {1, 3, 5});
  EXPECT_EQ(convert(29, stored, {3, 5}, x.data), ref.data);
  // A 1-D original is one row.
  Array row = slice(reshape(transpose(reshape(x, {1, 1, 1, 16, 16}), {0, 2, 3, 1, 4}), {1, 16, 16}), {1, 1, 7});
  EXPECT_EQ(convert(29, stored, {7}, x.data), row.data);
}

TEST(Layout, Nc1hwc0ToNchwWithPadding) {
  const int64_t N = 2, C = 19, H = 3, W = 4, C1 = 2, C0 = 16;
  const Shape stored{N, C1, H, W, C0};
  const Array x = iota(stored);
  Array ref = transpose(x, {0, 1, 4, 2, 3});
  ref = reshape(ref, {N, C1 * C0, H, W});
  ref = slice(ref, {N, C, H, W});
  EXPECT_EQ(convert(3, stored, {N, C, H, W}, x.data), ref.data);
}

TEST(Layout, FractalZToNchwWithPadding) {
  const int64_t N = 18, C = 5, H = 2, W = 3, C1 = 1, No = 2, Ni = 16, C0 = 16;
  const Shape stored{C1 * H * W, No, Ni, C0};
  const Array x = iota(stored);
  Array ref = reshape(x, {C1, H, W, No, Ni, C0});
  ref = transpose(ref, {3, 4, 0, 5, 1, 2});
  ref = reshape(ref, {No * Ni, C1 * C0, H, W});
  ref = slice(ref, {N, C, H, W});
  EXPECT_EQ(convert(4, stored, {N, C, H, W}, x.data), ref.data);
}

TEST(Layout, NhwcToNchw) {
  const Shape stored{2, 3, 4, 5};
  const Array x = iota(stored);
  const Array ref = transpose(x, {0, 3, 1, 2});
  std::string reason;
  const auto logical = plan_logical_shape(1, stored, {}, &reason);
  ASSERT_TRUE(logical) << reason;
  EXPECT_EQ(*logical, (Shape{2, 5, 3, 4}));
  std::vector<double> out;
  ASSERT_TRUE(convert_to_logical(1, stored, *logical, x.data, &out, &reason)) << reason;
  EXPECT_EQ(out, ref.data);
}

TEST(Layout, FloatInstantiation) {
  const Shape stored{1, 1, 16, 16};
  std::vector<float> in(256);
  std::iota(in.begin(), in.end(), 0.0f);
  std::vector<float> out;
  std::string error;
  ASSERT_TRUE(convert_to_logical(29, stored, {2, 2}, in, &out, &error)) << error;
  EXPECT_EQ(out, (std::vector<float>{0, 1, 16, 17}));
}

TEST(Layout, PlainFormatsPassThrough) {
  std::string reason;
  EXPECT_EQ(plan_logical_shape(2, {3, 4}, {}, &reason), (Shape{3, 4}));
  EXPECT_EQ(plan_logical_shape(0, {1, 2, 3, 4}, {9}, &reason), (Shape{1, 2, 3, 4}));
  EXPECT_TRUE(is_plain_format(2));
  EXPECT_FALSE(is_plain_format(29));
}

TEST(Layout, MissingConversionsSayWhy) {
  std::string reason;
  EXPECT_FALSE(plan_logical_shape(16, {2, 2, 2, 2}, {2, 2, 2, 2}, &reason));
  EXPECT_NE(reason.find("HWCN"), std::string::npos) << reason;
  EXPECT_FALSE(plan_logical_shape(29, {1, 1, 16, 16}, {}, &reason));
  EXPECT_NE(reason.find("original_shape is missing"), std::string::npos) << reason;
  EXPECT_FALSE(plan_logical_shape(29, {1, 1, 16, 16}, {17, 3}, &reason));
  EXPECT_FALSE(plan_logical_shape(29, {1, 1, 16, 16}, {2, 3, 3}, &reason));  // batch differs
  EXPECT_FALSE(plan_logical_shape(3, {1, 1, 2, 2, 16}, {1, 17, 2, 2}, &reason));
  EXPECT_FALSE(plan_logical_shape(3, {1, 1, 2, 2, 16}, {1, 3, 2, 5}, &reason));
  EXPECT_FALSE(plan_logical_shape(4, {5, 1, 16, 16}, {1, 1, 2, 2}, &reason));
  EXPECT_FALSE(plan_logical_shape(1, {2, 3}, {}, &reason));
  EXPECT_FALSE(plan_logical_shape(777, {2}, {2}, &reason));
  EXPECT_NE(reason.find("format 777"), std::string::npos) << reason;
  EXPECT_FALSE(plan_logical_shape(29, {-1, 1, 16, 16}, {3, 3}, &reason));
  EXPECT_FALSE(plan_logical_shape(29, {1, 1, int64_t{1} << 40, int64_t{1} << 40}, {3, 3}, &reason));
}

TEST(Layout, ConvertRejectsInconsistentInput) {
  std::vector<double> in(100), out;
  std::string error;
  EXPECT_FALSE(convert_to_logical(29, {1, 1, 16, 16}, {3, 5}, in, &out, &error));
  EXPECT_NE(error.find("elements"), std::string::npos) << error;
  in.resize(256);
  EXPECT_FALSE(convert_to_logical(29, {1, 1, 16, 16}, {3, 50}, in, &out, &error));
}

TEST(Layout, EmptyTensors) {
  std::vector<double> out{1.0};
  std::string error;
  ASSERT_TRUE(convert_to_logical(29, {0, 1, 1, 16, 16}, {0, 3, 5}, std::vector<double>{}, &out, &error)) << error;
  EXPECT_TRUE(out.empty());
}

TEST(Layout, NeedsConversion) {
  TensorRef t;
  EXPECT_FALSE(needs_layout_conversion(t));
  t.format = 29;
  EXPECT_TRUE(needs_layout_conversion(t));
  t.format = 1;
  t.stored_shape = {1, 2, 3, 4};
  EXPECT_TRUE(needs_layout_conversion(t));
  t.stored_shape = {1, 2};
  EXPECT_FALSE(needs_layout_conversion(t));
}

}  // namespace
}  // namespace diagnose::compare
