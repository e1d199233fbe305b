// The directory tree TorchAir's FX and GE dumps share: ranks, each with its compiled graphs,
// each with one directory per token (step). fx_dump.h and ge_match.h name their graphs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace diagnose::compare {

struct TokenDir {
  int64_t token_id = 0;  // FX: 0-based, lined up with GE's data_index; GE: the directory name, 0 when not a number
  std::string path;
};

template <class Group>
struct RankDir {
  int rank = -1;  // -1 when the layout has no rank directories
  std::string path;
  std::vector<Group> groups;  // in graph order
};

}  // namespace diagnose::compare
