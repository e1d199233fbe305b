#include "orchestrator/workflow/condition.h"

#include <gtest/gtest.h>

#include "orchestrator/workflow/template.h"

namespace diagnose {
namespace {

nlohmann::json values(const std::string& name) {
  if (name == "steps.cmp.status") return "fail";
  if (name == "steps.cmp.failed") return 3;
  if (name == "steps.cmp.first_failing_op") return "add_1";
  if (name == "steps.cmp.source_ops") return nlohmann::json::array();
  return nullptr;
}

bool holds(const std::string& text) { return Condition::parse(text).evaluate(values); }

TEST(Condition, ComparesAndCombines) {
  EXPECT_TRUE(holds("steps.cmp.status == fail"));
  EXPECT_TRUE(holds("steps.cmp.status == 'fail'"));
  EXPECT_FALSE(holds("steps.cmp.status != \"fail\""));
  EXPECT_TRUE(holds("steps.cmp.failed > 2 && steps.cmp.failed <= 3"));
  EXPECT_TRUE(holds("steps.cmp.failed >= 3.0 and not (steps.cmp.failed < 1)"));
  EXPECT_TRUE(holds("steps.cmp.failed == 0 || steps.cmp.first_failing_op == 'add_1'"));
  EXPECT_TRUE(holds("steps.cmp.first_failing_op"));
  EXPECT_FALSE(holds("steps.cmp.source_ops"));  // empty list
  EXPECT_TRUE(holds("!steps.cmp.source_ops"));
  EXPECT_TRUE(holds("-1 < 0"));
}

TEST(Condition, MissingValuesAreNull) {
  EXPECT_FALSE(holds("steps.gone.failed > 0"));
  EXPECT_FALSE(holds("steps.gone.failed <= 0"));
  EXPECT_TRUE(holds("steps.gone.failed == null"));
  EXPECT_TRUE(holds("steps.gone.status != pass"));
  EXPECT_FALSE(holds("steps.cmp.status > 1"));  // ordering needs two numbers
}

TEST(Condition, ListsItsReferencesWithOffsets) {
  Condition c = Condition::parse("steps.a.status == pass && steps.b.failed > 0");
  ASSERT_EQ(c.references().size(), 2u);
  EXPECT_EQ(c.references()[0].name, "steps.a.status");
  EXPECT_EQ(c.references()[0].offset, 0u);
  EXPECT_EQ(c.references()[1].name, "steps.b.failed");
  EXPECT_EQ(c.references()[1].offset, 26u);
}

TEST(Condition, ErrorsNameTheirOffset) {
  struct Case {
    const char* text;
    const char* message;
    size_t offset;
  } cases[] = {
      {"", "empty condition", 0},
      {"steps.a.status = fail", "'=' is not an operator; use '=='", 15},
      {"steps.a.status == 'fail", "unterminated string", 18},
      {"(steps.a.status == fail", "missing ')'", 23},
      {"steps.a.status ==", "condition ends where a value was expected", 17},
      {"steps.a.failed > 0 steps.b.failed", "unexpected 'steps.b.failed' after a complete condition", 19},
      {"status == fail", "unknown name 'status': refer to results as steps.<id>.<field>, quote other strings", 0},
      {"steps.a.x & 1", "use '&&'", 10},
      {"steps.a.x == #", "unexpected character '#'", 13},
      {"== 1", "unexpected '==' where a value was expected", 0},
  };
  for (const Case& c : cases) {
    try {
      Condition::parse(c.text);
      ADD_FAILURE() << c.text << " parsed";
    } catch (const ConditionError& e) {
      EXPECT_EQ(std::string(e.what()), c.message) << c.text;
      EXPECT_EQ(e.offset, c.offset) << c.text;
    }
  }
}

TEST(Template, ExpandsWithoutAShell) {
  auto lookup = [](const std::string& name) -> std::optional<std::string> {
    if (name == "run.dump_dir") return "/runs/x/dump";
    if (name == "steps.a.status") return "pass";
    return std::nullopt;
  };
  EXPECT_EQ(expand_template("--dump=${run.dump_dir}", lookup), "--dump=/runs/x/dump");
  EXPECT_EQ(expand_template("${ steps.a.status }/$(rm -rf /) `x` $HOME", lookup), "pass/$(rm -rf /) `x` $HOME");
  EXPECT_EQ(expand_template("cost: $$5, literal $${run.dump_dir}", lookup), "cost: $5, literal ${run.dump_dir}");
  EXPECT_EQ(expand_template("trailing $", lookup), "trailing $");
  try {
    expand_template("a ${nope} b", lookup);
    ADD_FAILURE();
  } catch (const TemplateError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown reference '${nope}'");
    EXPECT_EQ(e.offset, 2u);
  }
  EXPECT_THROW(template_references("x ${unclosed"), TemplateError);
  EXPECT_THROW(template_references("${}"), TemplateError);
  auto refs = template_references("${a}${b.c}");
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[1].name, "b.c");
  EXPECT_EQ(refs[1].offset, 4u);
}

}  // namespace
}  // namespace diagnose
