#include "steps/judgement/dump_judgement.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

// A fused kernel's buffer holds the value of its last node, the op the verdict names: its place
// leads (the terminal verdict's `where`), the others follow in graph order, each place once.
TEST(DumpJudgement, TheNamedOpsPlaceLeadsTheFusedNodesPlaces) {
  compare::RowSpec row;
  row.op_key = "_scaled_dot_product_flash_attention_for_cpu-aten._scaled_dot_product_flash_attention_for_cpu.default";
  row.sources = {{"view_2", "self_attn.q_proj", "", "modeling_qwen2.py:199", "q = self.q_proj(h)"},
                 {"cos", "rotary_emb", "", "modeling_qwen2.py:91", "cos = emb.cos()"},
                 {"view_3", "self_attn.q_proj", "", "modeling_qwen2.py:199", "q = self.q_proj(h)"},
                 {"_scaled_dot_product_flash_attention_for_cpu", "self_attn", "", "sdpa_attention.py:182",
                  "attn_output = scaled_dot_product_attention("}};
  EXPECT_EQ(
      source_places(row),
      (std::vector<std::string>{"module self_attn sdpa_attention.py:182 `attn_output = scaled_dot_product_attention(`",
                                "module self_attn.q_proj modeling_qwen2.py:199 `q = self.q_proj(h)`",
                                "module rotary_emb modeling_qwen2.py:91 `cos = emb.cos()`"}));
  row.op_key = "buf3";  // a buffer named after no node of its own: graph order
  EXPECT_EQ(source_places(row).front(), "module self_attn.q_proj modeling_qwen2.py:199 `q = self.q_proj(h)`");
}

}  // namespace
}  // namespace diagnose
