#include "compare/ge_stats.h"

#include <gtest/gtest.h>

#include "tests/compare/test_files.h"

namespace diagnose::compare {
namespace {

using diagnose::testing::kStatsHeader;
using diagnose::testing::TempDir;
using diagnose::testing::write_bytes;

TEST(GeStats, ReadsTheDefaultStatistics) {
  const GeDump d = parse_ge_stats(kStatsHeader +
                                      "Input,0,1024,DT_FLOAT,ND,8x32,2.5,-1.25,0.0123457,256,0,0,0\n"
                                      "Input,1,64,DT_FLOAT16,ND,32,1,1,1,32,0,0,0\n"
                                      "Output,0,32,DT_INT64,ND,-,7,3,5,1,0,0,0\n",
                                  "/d/MatMulV2.MatMulV2.3.0.1700000000000001.csv");
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_TRUE(d.stats_only);
  ASSERT_EQ(d.inputs.size(), 2u);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].shape, (Shape{8, 32}));
  EXPECT_EQ(d.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(d.inputs[1].dtype, DType::Float16);
  EXPECT_EQ(d.inputs[0].byte_size, 1024u);
  EXPECT_EQ(d.outputs[0].shape, Shape{});  // "-": no dims
  EXPECT_EQ(d.outputs[0].source_dtype, "GE INT64");
  EXPECT_NE(d.inputs[0].error.find("statistics only"), std::string::npos);  // no bytes to read
  const RecordedStats& s = d.input_stats[0];
  EXPECT_EQ(*s.max, 2.5);
  EXPECT_EQ(*s.min, -1.25);
  EXPECT_DOUBLE_EQ(*s.mean, 0.0123457);
  EXPECT_FALSE(s.l2);  // not recorded by default
  EXPECT_TRUE(s.counts_known);
  EXPECT_EQ(s.nan + s.inf, 0u);
  EXPECT_EQ(*d.recorded(Direction::Output, 0)->max, 7);
  EXPECT_TRUE(d.warnings.empty());
}

TEST(GeStats, NonFiniteAndMissingStatisticsAreLeftOut) {
  const GeDump d = parse_ge_stats(kStatsHeader +
                                      "Output,1,16,DT_FLOAT,ND,4,inf,-2,inf,4,0,0,1\r\n"
                                      "Output,0,16,DT_FLOAT,ND,4,nan,nan,nan,4,4,0,0\r\n"
                                      "Input,0,16,DT_NEWTYPE,ND,4,NA,NA,NA,4,NA,NA,NA\r\n"
                                      "Input,1,1024,DT_FLOAT16,FRACTAL_NZ,1x1x16x16,3,0,0.01,256,0,1,0\r\n",
                                  "x.csv");
  ASSERT_TRUE(d.ok()) << d.error;
  const RecordedStats& inf = d.output_stats[1];  // lines in any order, placed by index
  EXPECT_FALSE(inf.max);                         // GE's extremes take in infinities
  EXPECT_EQ(*inf.min, -2);
  EXPECT_FALSE(inf.mean);
  EXPECT_EQ(inf.inf, 1u);
  EXPECT_EQ(d.output_stats[0].nan, 4u);
  EXPECT_FALSE(d.output_stats[0].min);
  EXPECT_FALSE(d.input_stats[0].counts_known);
  EXPECT_EQ(d.inputs[0].dtype, DType::Unknown);  // a dtype this reader does not know: its statistics still count
  const RecordedStats& nz = d.input_stats[1];    // padding counts in GE's extremes and mean, not in its counts
  EXPECT_FALSE(nz.max || nz.min || nz.mean);
  EXPECT_EQ(nz.inf, 1u);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("input 1 is stored as FRACTAL_NZ: its extremes and mean cover the device layout"),
            std::string::npos);
}

TEST(GeStats, OtherStatisticsSetsAreFoundByName) {
  const GeDump d = parse_ge_stats(
      "Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value,l2norm\n"
      "Output,0,24,DT_FLOAT,ND,2x3,6,1,0,1.5\n",
      "x.csv");
  ASSERT_TRUE(d.ok()) << d.error;
  const RecordedStats& s = d.output_stats[0];
  EXPECT_EQ(*s.l2, 1.5);
  EXPECT_FALSE(s.mean);
  EXPECT_FALSE(s.counts_known);  // no NaN or Inf counts asked for
}

TEST(GeStats, MalformedFilesSayWhereAndGiveNothing) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty statistics file"},
      {"Op Type,Op Name\nMatMul,MatMul_1\n", "no 'input/output' column"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\nOutput,1,16,DT_FL",
       "line 3: 4 fields, the header has 13"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0,9\n", "line 2: 14 fields"},
      {kStatsHeader + "Sideways,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\n", "line 2: Input/Output is 'Sideways'"},
      {kStatsHeader + "Output,-1,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\n", "Index is '-1'"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4x,1,0,0.5,4,0,0,0\n", "Shape is '4x'"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,99999999999999999x99999999,1,0,0.5,4,0,0,0\n", "Shape is"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4,1e,0,0.5,4,0,0,0\n", "max value is '1e'"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4,1,0,0.5,4,-3,0,0\n", "nan count is '-3'"},
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\nOutput,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\n",
       "output 0 is listed twice"},
      {kStatsHeader + "Input,1,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\nInput,2,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\n",
       "input 2 in a file of 2 tensors"},
      {kStatsHeader + "Input,1,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\nOutput,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\n",
       "inputs up to 1 are listed, but not 0"},
      {kStatsHeader, "no tensor in the statistics file"},
      {kStatsHeader + "Out\xff\x01put,0,16,DT_FLOAT,ND,4,1,0,0.5,4,0,0,0\n",
       "Input/Output is 'Out??put'"},  // quoted safely
      {kStatsHeader + "Output,0,16,DT_FLOAT,ND,4," + std::string(100, '9') + "x,0,0.5,4,0,0,0\n",
       "max value is '" + std::string(40, '9') + "...'"},
  };
  std::string many = kStatsHeader;
  for (int i = 0; i <= 1 << 16; ++i) many += "Output," + std::to_string(i) + ",4,DT_FLOAT,ND,1,1,1,1,1,0,0,0\n";
  EXPECT_NE(parse_ge_stats(many, "x.csv").error.find("more than 65536 lines"), std::string::npos);
  for (const auto& [text, expected] : cases) {
    const GeDump d = parse_ge_stats(text, "x.csv");
    EXPECT_FALSE(d.ok()) << text;
    EXPECT_NE(d.error.find(expected), std::string::npos) << d.error << " / " << expected;
  }
}

TEST(GeStats, FileNamesAndReading) {
  const auto name = parse_ge_dump_name("MatMulV2.MatMulV2_1.3.0.1700000000000001.csv");
  ASSERT_TRUE(name);
  EXPECT_TRUE(name->stats);
  EXPECT_EQ(name->op_type, "MatMulV2");
  EXPECT_EQ(name->op_name, "MatMulV2_1");
  EXPECT_EQ(name->timestamp, 1700000000000001);
  EXPECT_FALSE(parse_ge_dump_name("MatMulV2.MatMulV2_1.3.0.1700000000000001")->stats);
  EXPECT_FALSE(parse_ge_dump_name("result_20240101.csv"));  // msit's output, not a GE statistics file

  TempDir dir;
  const std::string path = dir / "Add.Add_1.1.0.1700000000000001.csv";
  write_bytes(path, kStatsHeader + "Output,0,8,DT_FLOAT,ND,2,1,0,0.5,2,0,0,0\n");
  const GeDump d = read_ge_dump(path);  // a dump file that is a statistics file reads as one
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_TRUE(d.stats_only);
  EXPECT_EQ(d.outputs[0].path, path);
  EXPECT_FALSE(read_ge_stats(dir / "missing.csv").ok());
}

}  // namespace
}  // namespace diagnose::compare
