// TorchAir GE dump directories: what they hold (ranks, compiled graphs, token
// directories, graph txt files) and which of their files belongs to which op.
// match_ge_vs_fx / match_ge_vs_ge (match.h) are built on these.
//
// GE layout: {root}/dynamo_original_graph_{N}_rank_{r}_pid_{p}_ts_{t}.txt plus
//   [worldsize{W}_global_rank{R}/]{time}/{device}/{model_name}/{model_id}/{token}/<dump files>
// Every directory holding GE dump files is a token directory; its parent is one
// compiled graph (a "group"). Group i pairs with graph txt i and FX group i.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compare/dump_tree.h"
#include "compare/ge_dump.h"

namespace diagnose::compare {

struct GeGroup {
  std::string path;
  std::vector<TokenDir> tokens;  // by token id
  int graph = -1;                // N of its graph_N directory; -1 when the path names none
};

using GeRank = RankDir<GeGroup>;  // groups in graph order (graph_N, then model id)

struct GeDumpLayout {
  std::vector<std::string> graph_files;  // dynamo_original_graph_*.txt by graph id
  std::vector<GeRank> ranks;
  std::vector<std::string> warnings;  // unreadable directories...
};

// True when `path` holds a TorchAir GE dump (a dynamo_original_graph_*.txt near the
// top); `detail` counts what was found.
bool is_ge_dump(const std::string& path, std::string* detail);
GeDumpLayout scan_ge_dump_dir(const std::string& path);

// The graph id in a graph txt name (its first integer); -1 when there is none.
int graph_id_of_file(const std::string& path);
// Graph txt files of one rank (names with "_rank_{r}_"; all of them for rank -1 or
// when no name carries a rank).
std::vector<std::string> graph_files_for_rank(const GeDumpLayout& layout, int rank);

// Which Dynamo-graph nodes (isolation ids, "g0.linear") each node of the ATen graph TorchAir
// converted to GE was traced from, by TorchAir graph id (graph_<N>) and ATen node name: what the
// plugin writes beside its GE dumps (diagnose_graph_nodes_rank_<R>.json, docs/dump-format.md).
using GeGraphNodes = std::map<int, std::map<std::string, std::vector<std::string>>>;

// The map of `rank` (rank 0's for -1) beside its graph txt files `graph_files`; empty when there
// is none (a dump the plugin did not make), with a warning when one is there but unreadable.
GeGraphNodes read_ge_graph_nodes(const std::vector<std::string>& graph_files, int rank,
                                 std::vector<std::string>* warnings);

// Which model call (0-based, the plugin's step) each run of a TorchAir graph belongs to, by graph
// id: entry k is the call of the graph's k-th run, whose GE dump directory is token k. GE numbers
// each graph's runs on its own, so with a prefill and a decode graph token 0 of both is not call 0
// of both. What the plugin writes beside its GE dumps (diagnose_graph_calls_rank_<R>.json,
// docs/dump-format.md). A run in a call the run's `dump.steps` left out (GE chooses its dumps by
// token, so it may have dumped it) is kCallLeftOut, and its token is not compared.
using GeGraphCalls = std::map<int, std::vector<int64_t>>;
constexpr int64_t kCallLeftOut = -1;

// The record of `rank` (rank 0's for -1) beside its graph txt files; empty when there is none (a
// dump the plugin did not make: tokens stay GE's), with a warning when one is there but unreadable.
GeGraphCalls read_ge_graph_calls(const std::vector<std::string>& graph_files, int rank,
                                 std::vector<std::string>* warnings);

struct GeOpFile {
  GeDumpName name;
  std::string path;
  uint64_t size = 0;
};

// The GE dump files of one token directory by op name (as in the file name). When two
// files give the same op, the larger is kept and a warning says so.
std::map<std::string, GeOpFile> index_ge_token(const std::string& dir, std::vector<std::string>* warnings);

}  // namespace diagnose::compare
