#include "compare/ge_dump.h"

#include <gtest/gtest.h>

#include <random>

#include "ge_fixtures.h"

namespace diagnose::compare {
namespace {

using namespace testing;

GeDump parse(const std::string& bytes) {
  return parse_ge_dump(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), bytes.size(), "mem");
}

TEST(GeDumpName, FiveFieldForm) {
  const auto n = parse_ge_dump_name("Add.Add_1.12.3.1700000000000001");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op_type, "Add");
  EXPECT_EQ(n->op_name, "Add_1");
  EXPECT_EQ(n->task_id, 12);
  EXPECT_EQ(n->stream_id, 3);
  EXPECT_EQ(n->timestamp, 1700000000000001);
  EXPECT_FALSE(n->ffts);
}

TEST(GeDumpName, FftsPlusForms) {
  auto n = parse_ge_dump_name("MatMul.MatMul_2.3.45.1700000000000002.AIC.0.1.7");
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->ffts);
  EXPECT_EQ(n->op_type, "MatMul");
  EXPECT_EQ(n->op_name, "MatMul_2");
  EXPECT_EQ(n->stream_id, 3);
  EXPECT_EQ(n->task_id, 45);
  EXPECT_EQ(n->timestamp, 1700000000000002);
  EXPECT_EQ(n->task_type, "AIC");
  EXPECT_EQ(n->context_id, 0);
  EXPECT_EQ(n->thread_id, 1);
  EXPECT_EQ(n->device_id, 7);

  n = parse_ge_dump_name("Cast.Cast_9.45.1700000000000003.MIX_AIV.2.0.1");
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->ffts);
  EXPECT_EQ(n->op_name, "Cast_9");  // msit's parts[1:-3] would have said "Cast_9.45.1700000000000003.MIX_AIV"
  EXPECT_EQ(n->stream_id, -1);
  EXPECT_EQ(n->task_id, 45);
  EXPECT_EQ(n->task_type, "MIX_AIV");
}

TEST(GeDumpName, UnsanitisedDotsStayInTheName) {
  const auto n = parse_ge_dump_name("Add.layer.0.add.4.0.1700000000000001");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->op_name, "layer.0.add");
}

TEST(GeDumpName, Rejects) {
  std::string why;
  EXPECT_FALSE(parse_ge_dump_name("dynamo_original_graph_0.txt", &why));
  EXPECT_NE(why.find(".txt"), std::string::npos);
  EXPECT_FALSE(parse_ge_dump_name("Add.Add_1.12.3.1700000000000001.npy", &why));
  EXPECT_FALSE(parse_ge_dump_name("Add.Add_1.12.3.1700000000000001.bin", &why));
  EXPECT_FALSE(parse_ge_dump_name("Add.Add_1.12.3.17000000", &why));  // short timestamp
  EXPECT_FALSE(parse_ge_dump_name("Add.Add_1.x.3.1700000000000001", &why));
  EXPECT_FALSE(parse_ge_dump_name("README", &why));
  EXPECT_FALSE(parse_ge_dump_name(".Add_1.1.3.1700000000000001", &why));
  EXPECT_EQ(sanitize_ge_name("a.b/c\\d e"), "a_b_c_d_e");
}

TEST(GeDump, HeaderFormOffsetsAndShapes) {
  toolkit::dump::DumpData d;
  d.set_op_name("Add_1");
  add_input(&d, kGeFloat, {2, 3}, 24);
  add_input(&d, kGeFloat16, {4}, 8);
  auto* out = add_output(&d, kGeInt32, {2}, 8);
  out->mutable_original_op()->set_name("Add_1_orig");
  out->mutable_original_op()->set_output_index(2);
  d.add_buffer()->set_size(5);
  d.add_space()->set_size(3);
  const std::string payload(24 + 8 + 8 + 5 + 3, '\x01');
  const std::string bytes = ge_dump_bytes(d, payload);
  const GeDump g = parse(bytes);
  ASSERT_TRUE(g.ok()) << g.error;
  EXPECT_FALSE(g.whole_file_format);
  EXPECT_TRUE(g.warnings.empty());
  EXPECT_EQ(g.op_name, "Add_1");
  ASSERT_EQ(g.inputs.size(), 2u);
  ASSERT_EQ(g.outputs.size(), 1u);
  ASSERT_EQ(g.buffers.size(), 1u);
  ASSERT_EQ(g.workspaces.size(), 1u);
  const uint64_t base = bytes.size() - payload.size();
  EXPECT_EQ(g.inputs[0].offset, base);
  EXPECT_EQ(g.inputs[0].byte_size, 24u);
  EXPECT_EQ(g.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(g.inputs[0].shape, (Shape{2, 3}));
  EXPECT_EQ(g.inputs[0].source_dtype, "GE FLOAT");
  EXPECT_EQ(g.inputs[1].offset, base + 24);
  EXPECT_EQ(g.inputs[1].dtype, DType::Float16);
  EXPECT_EQ(g.outputs[0].offset, base + 32);
  EXPECT_EQ(g.outputs[0].dtype, DType::Int32);
  EXPECT_EQ(g.buffers[0].offset, base + 40);
  EXPECT_EQ(g.workspaces[0].offset, base + 45);
  ASSERT_EQ(g.output_original_ops.size(), 1u);
  ASSERT_TRUE(g.output_original_ops[0]);
  EXPECT_EQ(g.output_original_ops[0]->name, "Add_1_orig");
  EXPECT_EQ(g.output_original_ops[0]->output_index, 2);
}

TEST(GeDump, FileReaderReadsValues) {
  TempDir dir;
  const std::string path = dir / "Add.Add_1.1.0.1700000000000001";
  write_file(path, float_ge_dump({{1, 2, 3}}, {{4, 5}}));
  const GeDump g = read_ge_dump(path);
  ASSERT_TRUE(g.ok()) << g.error;
  std::string error;
  const auto out = read_all_float(g.outputs[0], &error);
  ASSERT_TRUE(out) << error;
  EXPECT_EQ(*out, (std::vector<float>{4, 5}));
}

TEST(GeDump, TooSmallFiles) {
  EXPECT_NE(parse("").error.find("too small"), std::string::npos);
  EXPECT_NE(parse(std::string(5, '\0')).error.find("too small"), std::string::npos);
  EXPECT_NE(parse(std::string(8, '\0')).error.find("too small"), std::string::npos);
}

TEST(GeDump, HeaderLengthPastEnd) {
  std::string bytes(8, '\0');
  bytes[0] = 100;
  bytes += "abc";
  const GeDump g = parse(bytes);
  EXPECT_FALSE(g.ok());
  EXPECT_NE(g.error.find("runs past the end"), std::string::npos) << g.error;
  bytes = std::string(8, '\xff') + "abc";
  EXPECT_NE(parse(bytes).error.find("runs past the end"), std::string::npos);
}

TEST(GeDump, SizesThatDoNotAddUp) {
  toolkit::dump::DumpData d;
  add_input(&d, kGeFloat, {6}, 24);
  const GeDump g = parse(ge_dump_bytes(d, std::string(10, 'x')));
  EXPECT_FALSE(g.ok());
  EXPECT_NE(g.error.find("add up to 24 bytes, but only 10"), std::string::npos) << g.error;

  toolkit::dump::DumpData huge;
  add_input(&huge, kGeFloat, {1}, ~uint64_t{0});
  add_input(&huge, kGeFloat, {1}, 16);
  EXPECT_FALSE(parse(ge_dump_bytes(huge, "x")).ok());

  const GeDump extra = parse(ge_dump_bytes(d, std::string(30, 'x')));
  ASSERT_TRUE(extra.ok()) << extra.error;
  ASSERT_EQ(extra.warnings.size(), 1u);
  EXPECT_NE(extra.warnings[0].find("6 bytes"), std::string::npos);
}

TEST(GeDump, TensorSmallerThanItsShape) {
  toolkit::dump::DumpData d;
  add_input(&d, kGeFloat, {6}, 20);
  const GeDump g = parse(ge_dump_bytes(d, std::string(20, 'x')));
  ASSERT_TRUE(g.ok());
  EXPECT_NE(g.inputs[0].error.find("needs 24"), std::string::npos) << g.inputs[0].error;
}

TEST(GeDump, GarbageHeader) {
  std::string bytes(8, '\0');
  bytes[0] = 4;
  bytes += "\xff\xff\xff\xff";
  bytes += "payload";
  const GeDump g = parse(bytes);
  EXPECT_FALSE(g.ok());
  EXPECT_NE(g.error.find("not a valid DumpData"), std::string::npos) << g.error;
}

TEST(GeDump, UnsupportedDtypeAndFormat) {
  toolkit::dump::DumpData d;
  add_input(&d, kGeString, {2}, 4);
  add_input(&d, 99, {2}, 4);
  add_input(&d, kGeFloat, {2, 2, 2, 2}, 64, /*HWCN*/ 16);
  auto* nz = add_input(&d, kGeFloat16, {1, 1, 16, 16}, 512, kFormatNZ);
  set_shape(nz->mutable_original_shape(), {3, 5});
  add_input(&d, kGeFloat16, {1, 1, 16, 16}, 512, kFormatNZ);  // no original_shape
  auto* packed = add_input(&d, kGeFloat16, {1, 1, 16, 16}, 512, kFormatNZ | (1 << 8) | (16 << 24));
  set_shape(packed->mutable_original_shape(), {16, 16});
  const GeDump g = parse(ge_dump_bytes(d, std::string(4 + 4 + 64 + 512 + 512 + 512, '\0')));
  ASSERT_TRUE(g.ok()) << g.error;
  ASSERT_EQ(g.inputs.size(), 6u);
  EXPECT_EQ(g.inputs[0].error, "unsupported dtype DT_STRING");
  EXPECT_NE(g.inputs[1].error.find("unsupported dtype"), std::string::npos) << g.inputs[1].error;
  EXPECT_NE(g.inputs[2].error.find("HWCN"), std::string::npos) << g.inputs[2].error;
  EXPECT_TRUE(g.inputs[3].ok()) << g.inputs[3].error;
  EXPECT_EQ(g.inputs[3].format, kFormatNZ);
  EXPECT_EQ(g.inputs[3].stored_shape, (Shape{1, 1, 16, 16}));
  EXPECT_EQ(g.inputs[3].shape, (Shape{3, 5}));
  EXPECT_NE(g.inputs[4].error.find("original_shape"), std::string::npos) << g.inputs[4].error;
  EXPECT_TRUE(g.inputs[5].ok()) << g.inputs[5].error;
  EXPECT_EQ(g.inputs[5].format, kFormatNZ);
  EXPECT_EQ(g.inputs[5].shape, (Shape{16, 16}));
}

TEST(GeDump, DimsOutOfRange) {
  toolkit::dump::DumpData d;
  add_input(&d, kGeFloat, {uint64_t{1} << 63}, 4);
  add_input(&d, kGeFloat, {uint64_t{1} << 40, uint64_t{1} << 40}, 4);
  const GeDump g = parse(ge_dump_bytes(d, std::string(8, '\0')));
  ASSERT_TRUE(g.ok()) << g.error;
  EXPECT_FALSE(g.inputs[0].ok());
  EXPECT_FALSE(g.inputs[1].ok());
}

TEST(GeDump, WholeFileFormat) {
  toolkit::dump::DumpData d;
  d.set_version("1.0");
  auto* in = add_input(&d, kGeFloat, {2}, 8);
  in->set_data(floats_bytes({1.5f, 2.5f}));
  auto* out = add_output(&d, kGeFloat, {3}, 0);
  out->set_data(floats_bytes({7, 8, 9}));
  TempDir dir;
  const std::string path = dir / "Mul.Mul_3.1.0.1700000000000005";
  write_file(path, d.SerializeAsString());
  const GeDump g = read_ge_dump(path);
  ASSERT_TRUE(g.ok()) << g.error;
  EXPECT_TRUE(g.whole_file_format);
  std::string error;
  const auto a = read_all_float(g.inputs[0], &error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(*a, (std::vector<float>{1.5f, 2.5f}));
  const auto b = read_all_float(g.outputs[0], &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(*b, (std::vector<float>{7, 8, 9}));
}

TEST(GeDump, FieldSevenEitherSchema) {
  // New schema: OpAttr entries, no bytes behind them.
  toolkit::dump::DumpData d;
  add_input(&d, kGeFloat, {1}, 4);
  toolkit::dump::OpAttr attr;
  attr.set_name("key");
  attr.set_value("value");
  *d.add_attr_or_old_space() = attr.SerializeAsString();
  GeDump g = parse(ge_dump_bytes(d, std::string(4, '\0')));
  ASSERT_TRUE(g.ok()) << g.error;
  EXPECT_TRUE(g.workspaces.empty());
  EXPECT_TRUE(g.warnings.empty());

  // Old schema: a Workspace in field 7 whose bytes follow the tensors.
  toolkit::dump::DumpData old;
  add_input(&old, kGeFloat, {1}, 4);
  toolkit::dump::Workspace w;
  w.set_size(6);
  *old.add_attr_or_old_space() = w.SerializeAsString();
  g = parse(ge_dump_bytes(old, std::string(10, '\0')));
  ASSERT_TRUE(g.ok()) << g.error;
  ASSERT_EQ(g.workspaces.size(), 1u);
  EXPECT_EQ(g.workspaces[0].byte_size, 6u);
}

TEST(GeDump, UnknownFieldsAreSkipped) {
  toolkit::dump::DumpData d;
  auto* out = add_output(&d, kGeFloat, {1}, 4);
  auto* unknown = out->GetReflection()->MutableUnknownFields(out);
  unknown->AddVarint(11, 3);
  unknown->AddVarint(12, 1);
  d.GetReflection()->MutableUnknownFields(&d)->AddLengthDelimited(40, "future");
  auto* shape = out->mutable_original_shape();
  shape->GetReflection()->MutableUnknownFields(shape)->AddFixed32(9, 7);
  const GeDump g = parse(ge_dump_bytes(d, floats_bytes({3})));
  ASSERT_TRUE(g.ok()) << g.error;
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_TRUE(g.outputs[0].ok());
}

TEST(GeDump, NonUtf8OpNameStillParses) {
  toolkit::dump::DumpData d;
  d.set_op_name("Add_\xff\xfe");
  add_input(&d, kGeFloat, {1}, 4);
  const GeDump g = parse(ge_dump_bytes(d, floats_bytes({1})));
  ASSERT_TRUE(g.ok()) << g.error;
  EXPECT_EQ(g.op_name, "Add_\xff\xfe");
}

TEST(GeDump, UnreadableFiles) {
  TempDir dir;
  GeDump g = read_ge_dump(dir / "missing");
  EXPECT_NE(g.error.find("cannot open"), std::string::npos) << g.error;
  g = read_ge_dump(dir.path());
  EXPECT_NE(g.error.find("not a regular file"), std::string::npos) << g.error;
}

TEST(GeDump, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  const std::string valid = float_ge_dump({{1, 2}}, {{3}});
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    bytes.resize(rng() % (bytes.size() + 1));
    const GeDump g = parse(bytes);
    EXPECT_TRUE(g.ok() || !g.error.empty());
  }
}

}  // namespace
}  // namespace diagnose::compare
