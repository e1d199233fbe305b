// Where the tests find the checkout and the diagnose binary. Their absolute paths are compiled into
// source_tree.cc alone (a library of its own, tests/CMakeLists.txt), so that every other test
// object is the same in every checkout and ccache serves it to a clone elsewhere.
#pragma once

#include <string>

namespace diagnose::testing_support {

std::string source_dir();       // the checkout's root
std::string diagnose_binary();  // the diagnose binary this build tree makes

}  // namespace diagnose::testing_support
