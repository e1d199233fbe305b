#include "compare/ge_graph.h"

#include <gtest/gtest.h>

#include <set>

#include "ge_fixtures.h"

namespace diagnose::compare {
namespace {

const char* const kGraph = R"pb(
  name: "graph_1"
  op {
    name: "arg0_1"
    type: "Data"
    output_desc {
      name: "y"
      dtype: DT_FLOAT16
      shape { dim: 2 dim: 2 }
      layout: "ND"
    }
  }
  op {
    name: "Add_1"
    type: "Add"
    input: "arg0_1:0"
    input: "arg0_1:0"
    input: "Const_3:-1"
    attr {
      key: "_input_name_key"
      value { list { s: "x1" s: "x2" val_type: VT_LIST_STRING } }
    }
    attr_groups { other_group_def {} }
    future_field: 12
    output_desc {
      name: "y"
      dtype: DT_FLOAT16
      attr {
        key: "_fx_tensor_name"
        value { s: "add_1-aten.add.Tensor.OUTPUT.0" }
      }
      attr {
        key: "_meta"
        value { s: "Tensor(dtype=torch.float16, shape=torch.Size([2, 2]))" }
      }
      attr { name: "tt2" }
    }
  }
  op {
    name: "Cast_9"
    type: "Cast"
    input: "Add_1:0"
    output_desc { name: "y" dtype: DT_FLOAT }
  }
  op {
    name: "Split_2"
    type: "SplitV"
    input: "Cast_9:0"
    output_desc {
      attr {
        key: "_fx_tensor_name"
        value { s: "split-aten.split.Tensor.OUTPUT.0" }
      }
    }
    output_desc {
      attr {
        key: "_fx_tensor_name"
        value { s: "split-aten.split.Tensor.OUTPUT.1" }
      }
    }
  }
)pb";

TEST(GeGraph, IndexesOpsInputsAndLinks) {
  std::string error;
  const auto g = parse_ge_graph(kGraph, "g.txt", &error);
  ASSERT_TRUE(g) << error;
  EXPECT_EQ(g->name, "graph_1");
  ASSERT_EQ(g->ops.size(), 4u);
  const GeGraphOp* add = g->find("Add_1");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->type, "Add");
  ASSERT_EQ(add->inputs.size(), 3u);
  EXPECT_EQ(add->inputs[0].op, "arg0_1");
  EXPECT_EQ(add->inputs[0].index, 0);
  EXPECT_TRUE(add->inputs[2].control());
  ASSERT_EQ(add->output_links.size(), 1u);
  ASSERT_TRUE(add->output_links[0]);
  EXPECT_EQ(add->output_links[0]->prefix, "add_1-aten.add.Tensor");
  EXPECT_EQ(add->output_links[0]->output, 0);
  EXPECT_EQ(add->fx_prefix(), "add_1-aten.add.Tensor");
  EXPECT_EQ(add->output_meta[0], "Tensor(dtype=torch.float16, shape=torch.Size([2, 2]))");

  const GeGraphOp* cast = g->find("Cast_9");
  ASSERT_TRUE(cast);
  EXPECT_FALSE(cast->fx_prefix());
  const GeGraphOp* split = g->find("Split_2");
  ASSERT_TRUE(split);
  ASSERT_EQ(split->output_links.size(), 2u);
  EXPECT_EQ(split->output_links[1]->output, 1);
  EXPECT_EQ(g->find("missing"), nullptr);
}

TEST(GeGraph, StringsWithEscapesAndColons) {
  const std::string text = R"pb(
    op {
      name: "layer.0/attn: proj"
      type: "MatMul"
      output_desc {
        attr {
          key: "_meta"
          value { s: "a \"quoted\": value\n\001\377" }
        }
        attr {
          key: "_fx_tensor_name"
          value { s: "mm-aten.mm.default.OUTPUT.0" }
        }
      }
    }
  )pb";
  std::string error;
  const auto g = parse_ge_graph(text, "g.txt", &error);
  ASSERT_TRUE(g) << error;
  const GeGraphOp* op = g->find("layer.0/attn: proj");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->output_meta[0], std::string("a \"quoted\": value\n\x01\xff"));
  EXPECT_EQ(op->fx_prefix(), "mm-aten.mm.default");
  // GE dump file names carry the sanitised form of the name.
  EXPECT_EQ(g->find("layer_0_attn:_proj"), op);
}

TEST(GeGraph, NonUtf8NamesParse) {
  std::string error;
  const auto g = parse_ge_graph("op { name: \"Add_\\377\" type: \"Add\" }", "g.txt", &error);
  ASSERT_TRUE(g) << error;
  EXPECT_TRUE(g->find("Add_\xff"));
}

TEST(GeGraph, MalformedTextSaysWhere) {
  std::string error;
  EXPECT_FALSE(parse_ge_graph("op {\n  name: \"Add_1\"\n  type: \n}\n", "bad.txt", &error));
  EXPECT_EQ(error.rfind("bad.txt:", 0), 0u) << error;
  EXPECT_NE(error.find("bad.txt:4:1: "), std::string::npos) << error;

  EXPECT_FALSE(parse_ge_graph("op { name: \"unterminated }", "bad.txt", &error));
  EXPECT_FALSE(parse_ge_graph("op { output_desc { dtype: DT_NOT_A_TYPE } }", "bad.txt", &error));
  EXPECT_FALSE(read_ge_graph("/nonexistent/graph.txt", &error));
  EXPECT_NE(error.find("cannot read"), std::string::npos);
}

TEST(GeGraph, DeepNestingIsRejectedNotCrashing) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "x {";
  std::string error;
  EXPECT_FALSE(parse_ge_graph(text, "deep.txt", &error));
}

TEST(GeGraph, FxTensorNames) {
  auto l = parse_fx_tensor_name("add_1-aten.add.Tensor.OUTPUT.12");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->prefix, "add_1-aten.add.Tensor");
  EXPECT_EQ(l->output, 12);
  EXPECT_FALSE(parse_fx_tensor_name("add_1-aten.add.Tensor"));
  EXPECT_FALSE(parse_fx_tensor_name("add_1-aten.add.Tensor.OUTPUT."));
  EXPECT_FALSE(parse_fx_tensor_name("add_1-aten.add.Tensor.OUTPUT.x"));
  EXPECT_FALSE(parse_fx_tensor_name(".OUTPUT.0"));
}

TEST(GeGraph, FusedNameSplit) {
  const std::set<std::string> names = {"Add", "Add_2", "Cast_9", "ConcatV2", "Add_1", "Add_10", "0Mul"};
  const auto known = [&](const std::string& n) { return names.count(n) > 0; };
  EXPECT_EQ(split_fused_name("Add_2Cast_9ConcatV2", known), (std::vector<std::string>{"Add_2", "Cast_9", "ConcatV2"}));
  // Longest first ("Add_10") leaves "Mul", which is unknown: backtrack to "Add_1" + "0Mul".
  EXPECT_EQ(split_fused_name("Add_10Mul", known), (std::vector<std::string>{"Add_1", "0Mul"}));
  EXPECT_FALSE(split_fused_name("Add_2Unknown", known));
  EXPECT_FALSE(split_fused_name("", known));
}

}  // namespace
}  // namespace diagnose::compare
