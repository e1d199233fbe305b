#include "steps/bisection/subgraph_culprits.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

TEST(SubgraphCulprits, ARepeatedCulpritIsNamedOnceWithItsCountAndGraphs) {
  EXPECT_EQ(grouped_culprits({{"layer_norm", {"g0.layer_norm"}},
                              {"mul+add", {"g0.mul", "g0.add"}},
                              {"layer_norm", {"g0.layer_norm_1"}},
                              {"layer_norm", {"g2.layer_norm"}}}),
            (std::vector<std::string>{"layer_norm (3 subgraphs, graphs g0, g2)", "mul+add"}));
  EXPECT_EQ(grouped_culprits({{"layer_norm", {"g1.layer_norm"}}, {"layer_norm", {"g1.layer_norm_2"}}}),
            (std::vector<std::string>{"layer_norm (2 subgraphs, graph g1)"}));
}

TEST(SubgraphCulprits, DistinctCulpritsStayAsTheyWere) {
  EXPECT_EQ(grouped_culprits({{"gelu", {"g0.gelu"}}, {"mul", {"g0.mul"}}}), (std::vector<std::string>{"gelu", "mul"}));
  EXPECT_TRUE(grouped_culprits({}).empty());
}

}  // namespace
}  // namespace diagnose
