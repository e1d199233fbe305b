// TorchAir FX npy dumps (debug.data_dump.type="npy"): where the files are and what
// their names say.
//
// Current layout: {path}/worldsize{W}_global_rank{R}/graph_{N}/{step}/*.npy (step from 0).
// Older layout:   {path}/data_dump/{step+1}/gm_{ts}_dump/*.npy (step from 1; the
//                 path may also be the data_dump directory itself).
// File names:     {node}-{target}.INPUT.{i}[.{j}].{ts}.npy and {node}-{target}.OUTPUT.{k}.{ts}.npy
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/dump_tree.h"

namespace diagnose::compare {

struct FxFileName {
  std::string prefix;  // "{node}-{target}"
  std::string node;
  std::string target;  // "aten.add.Tensor"
  bool input = false;
  int index = 0;
  int item = -1;  // element of a list argument, -1 when the argument is a tensor
  std::string timestamp;
};

std::optional<FxFileName> parse_fx_file_name(const std::string& file_name);

struct FxTensorFile {
  int index = 0;
  int item = -1;
  std::string path;
};

// One FX node call in one step: its dumped inputs (sorted by index, then item) and
// outputs (sorted by index).
struct FxNode {
  std::string prefix, target, timestamp;
  std::vector<FxTensorFile> inputs, outputs;
};

// The nodes of one step directory, by prefix. A node dumped more than once keeps its
// first call (by timestamp) and adds a warning.
std::map<std::string, FxNode> index_fx_step(const std::string& dir, std::vector<std::string>* warnings);

// One compiled graph: graph_{N} (current layout) or the i-th gm_*_dump of each step.
struct FxGroup {
  std::string name;
  std::vector<TokenDir> steps;  // by token id
  int graph = -1;               // N of graph_{N}; -1 in the older layout
};

using FxRank = RankDir<FxGroup>;  // groups in graph id order

struct FxDumpLayout {
  bool older_layout = false;
  std::vector<FxRank> ranks;
  std::vector<std::string> warnings;
};

// True when `path` holds an FX dump in either layout; `detail` says which.
bool is_fx_dump(const std::string& path, std::string* detail);
FxDumpLayout scan_fx_dump(const std::string& path);

// "worldsize{W}_global_rank{R}" -> R; nullopt for other names.
std::optional<int> rank_of_dir_name(const std::string& name);

}  // namespace diagnose::compare
