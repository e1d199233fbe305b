#include "compare/report.h"

#include <cmath>

#include <gtest/gtest.h>

namespace diagnose::compare {
namespace {

TEST(Report, PythonFloatRepr) {
  EXPECT_EQ(python_float_repr(1.0), "1.0");
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(0.30000000000000004), "0.30000000000000004");
  EXPECT_EQ(python_float_repr(1e-07), "1e-07");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(0.00012345), "0.00012345");
  EXPECT_EQ(python_float_repr(1.5e-05), "1.5e-05");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(python_float_repr(123.456), "123.456");
  EXPECT_EQ(python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(python_float_repr(-0.0), "-0.0");
  EXPECT_EQ(python_float_repr(0.0), "0.0");
  EXPECT_EQ(python_float_repr(NAN), "nan");
  EXPECT_EQ(python_float_repr(-INFINITY), "-inf");
  EXPECT_EQ(python_float_repr(1.1920928955078125e-07), "1.1920928955078125e-07");
  EXPECT_EQ(python_float_repr(1e300), "1e+300");
  EXPECT_EQ(python_float_repr(0.9999999999), "0.9999999999");
}

TEST(Report, CsvColumnsStartWithMsitsTwentyFour) {
  const auto& c = csv_columns();
  ASSERT_GT(c.size(), 24u);
  EXPECT_EQ(c[0], "token_id");
  EXPECT_EQ(c[16], "cosine_similarity");
  EXPECT_EQ(c[23], "cmp_fail_reason");
  EXPECT_EQ(c[24], "verdict");
}

}  // namespace
}  // namespace diagnose::compare
