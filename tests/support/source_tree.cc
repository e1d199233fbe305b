#include "tests/support/source_tree.h"

namespace diagnose::testing_support {

std::string source_dir() { return DIAGNOSE_SOURCE_DIR; }
std::string diagnose_binary() { return DIAGNOSE_BINARY; }

}  // namespace diagnose::testing_support
