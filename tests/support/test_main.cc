// The tests' composition root, as the diagnose binary's main is: the built-in step kinds
// registered with the engine, then every test.
#include <gtest/gtest.h>

#include "steps/kinds/step_kinds.h"

int main(int argc, char** argv) {
  diagnose::register_step_kinds();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
