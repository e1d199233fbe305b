#include "compare/ge_match.h"
#include "compare/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "compare/fx_dump.h"
#include "compare/ge_graph.h"
#include "compare/match.h"
#include "compare/npy.h"

#include <nlohmann/json.hpp>

namespace diagnose::compare {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxWalkDepth = 10;
constexpr int kMaxGraphFileDepth = 3;
const char kGraphPrefix[] = "dynamo_original_graph_";
const char kFusedType[] = "AutomaticBufferFusionOp";
// Why a statistics file's op may stand for more than its graph txt op says.
const char kNoOriginalOp[] =
    " (a statistics file names no OriginalOp: had GE fused the op it feeds into it, its output is that op's)";

std::optional<int64_t> number(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

// Calls visit(dir, depth) for `root` and every directory below it down to `max_depth`,
// without following symlinked directories (so link loops end).
void walk_dirs(const std::string& root, int max_depth, std::vector<std::string>* warnings,
               const std::function<void(const fs::path&, int)>& visit) {
  std::vector<std::pair<fs::path, int>> stack{{fs::path(root), 0}};
  while (!stack.empty()) {
    auto [dir, depth] = stack.back();
    stack.pop_back();
    visit(dir, depth);
    if (depth >= max_depth) continue;
    std::error_code ec;
    std::vector<fs::path> children;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (!it->is_symlink(type_ec) && it->is_directory(type_ec)) children.push_back(it->path());
    }
    if (ec && warnings) warnings->push_back(dir.string() + ": cannot list directory: " + ec.message());
    std::sort(children.rbegin(), children.rend());
    for (auto& c : children) stack.emplace_back(std::move(c), depth + 1);
  }
}

bool has_ge_dump_file(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && parse_ge_dump_name(it->path().filename().string())) return true;
  }
  return false;
}

// N of a group directory .../graph_N/{model_id}; nullopt when its model name is not graph_N.
std::optional<int64_t> graph_number(const std::string& path) {
  const std::string model_name = fs::path(path).parent_path().filename().string();
  return starts_with(model_name, "graph_") ? number(model_name.substr(6)) : std::nullopt;
}

// A number read as a graph id; nullopt when there is none or it is too large for one.
std::optional<int> as_graph_id(std::optional<int64_t> number) {
  if (!number || *number > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(*number);
}

int graph_of_group(const std::string& path) { return as_graph_id(graph_number(path)).value_or(-1); }

// Sort key of a group directory .../{model_name}/{model_id}: graph_N, then model id.
std::tuple<int64_t, int64_t, std::string> group_order(const std::string& path) {
  const auto model_id = number(fs::path(path).filename().string());
  constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
  return {graph_number(path).value_or(kLast), model_id.value_or(kLast), path};
}

std::vector<GeGroup> scan_groups(const std::string& root, std::vector<std::string>* warnings) {
  std::map<std::string, GeGroup> by_path;
  walk_dirs(root, kMaxWalkDepth, warnings, [&](const fs::path& dir, int depth) {
    if (!has_ge_dump_file(dir)) return;
    const std::string group = depth == 0 ? dir.string() : dir.parent_path().string();
    GeGroup& g = by_path[group];
    g.path = group;
    g.graph = graph_of_group(group);
    g.tokens.push_back({number(dir.filename().string()).value_or(0), dir.string()});
  });
  std::vector<GeGroup> groups;
  for (auto& [path, g] : by_path) {
    std::sort(g.tokens.begin(), g.tokens.end(),
              [](const TokenDir& a, const TokenDir& b) { return a.token_id < b.token_id; });
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(),
            [](const GeGroup& a, const GeGroup& b) { return group_order(a.path) < group_order(b.path); });
  return groups;
}

// ---------------------------------------------------------------- matching

// Accumulates rows and unmatched entries for one (rank, graph).
struct GroupContext {
  int rank = -1;
  int graph = -1;
  bool name_graph = false;  // several graphs: unmatched names carry the graph
  MatchResult* out = nullptr;
  std::set<std::string> unmatched_seen;
  const std::map<std::string, std::vector<std::string>>* graph_nodes = nullptr;  // this graph's GeGraphNodes
  const std::vector<int64_t>* calls = nullptr;  // this graph's GeGraphCalls: rows carry the call, not GE's token

  // Whether GE's token `token` of this graph can be given its model call: always without a record.
  bool knows_call_of(int64_t token) const {
    return !calls || (token >= 0 && static_cast<size_t>(token) < calls->size());
  }

  void unmatched(const std::string& name, const std::string& reason) {
    std::string label = name;
    if (name_graph) label = "graph" + std::to_string(graph) + "/" + label;
    if (rank >= 0) label = "rank" + std::to_string(rank) + "/" + label;
    if (unmatched_seen.insert(label).second) out->unmatched.emplace_back(label, reason);
  }
  RowSpec row(int64_t token, const std::string& op_key, Direction d, int index, int64_t order) const {
    RowSpec r;
    r.rank = rank;
    r.graph = graph;
    r.token_id = token;
    if (calls) {
      r.graph_step = token;
      r.token_id = (*calls)[static_cast<size_t>(token)];
    }
    r.op_key = op_key;
    r.direction = d;
    r.index = index;
    r.order = order;
    return r;
  }
};

std::string ge_tensor_path(const std::string& file, Direction d, size_t i) {
  return file + (d == Direction::Input ? ",inputs," : ",outputs,") + std::to_string(i);
}

std::string target_of(const std::string& prefix) {
  const size_t dash = prefix.find('-');
  return dash == std::string::npos ? prefix : prefix.substr(dash + 1);
}

bool is_self_compared_type(const std::string& type) {
  return type.find("Cast") != std::string::npos || type.find("TransData") != std::string::npos;
}

// The GE op of a dump file in the graph: header name first, then the file name.
const GeGraphOp* find_graph_op(const GeGraph& graph, const GeDump& dump, const GeOpFile& file) {
  if (!dump.op_name.empty())
    if (const GeGraphOp* op = graph.find(dump.op_name)) return op;
  return graph.find(file.name.op_name);
}

// Pre-fusion ops of a fused dump: its name split over known names (`from_name`), else
// the OriginalOp names of its outputs, which say nothing about where inputs go.
struct Constituents {
  std::vector<const GeGraphOp*> ops;
  bool from_name = false;
};

Constituents constituents(const GeGraph& graph, const GeDump& dump, const GeOpFile& file,
                          const std::function<bool(const std::string&)>& also_known) {
  Constituents c;
  const auto known = [&](const std::string& n) { return graph.find(n) != nullptr || (also_known && also_known(n)); };
  for (const std::string& name : {dump.op_name, file.name.op_name}) {
    if (name.empty()) continue;
    if (const auto parts = split_fused_name(name, known)) {
      for (const auto& p : *parts) c.ops.push_back(graph.find(p));
      c.from_name = true;
      return c;
    }
  }
  std::set<std::string> seen;
  for (const auto& orig : dump.output_original_ops) {
    if (!orig || !seen.insert(orig->name).second) continue;
    if (const GeGraphOp* op = graph.find(orig->name)) c.ops.push_back(op);
  }
  return c;
}

// One side of an op's inputs or outputs: tensors with their msit path text (and, from a
// statistics file, what GE recorded of each), the op type shown for them, and how count notes
// name the side.
struct Side {
  std::vector<std::optional<TensorRef>> tensors;
  std::vector<std::string> paths;
  std::string op_type;
  std::string description;
  std::vector<std::optional<RecordedStats>> recorded;  // as many as tensors, or none
  size_t size() const { return tensors.size(); }
  std::optional<RecordedStats> recorded_at(size_t i) const { return i < recorded.size() ? recorded[i] : std::nullopt; }
  // Whether tensor i's shape is known: readable, or described by a statistics file.
  bool shape_known(size_t i) const { return tensors[i] && (tensors[i]->ok() || recorded_at(i)); }
  void truncate(size_t n) {
    tensors.resize(std::min(n, tensors.size()));
    paths.resize(tensors.size());
    if (recorded.size() > n) recorded.resize(n);
  }
};

Side ge_side(const GeDump& dump, const GeOpFile& file, Direction d, const std::string& description) {
  Side s{{}, {}, file.name.op_type, description, {}};
  const auto& tensors = d == Direction::Input ? dump.inputs : dump.outputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    s.tensors.push_back(tensors[i]);
    s.paths.push_back(ge_tensor_path(file.path, d, i));
    if (dump.stats_only) s.recorded.push_back(dump.recorded(d, i));
  }
  return s;
}

// Rows pairing the two sides index by index. When the counts differ (a fused GE op that folded a
// scalar operand of its first FX node), tensors of the same index are still compared, as msit
// does, and every row of that direction says so; a tensor without a counterpart gets a row of
// its own instead of being zipped away.
void pair_rows(GroupContext& ctx, int64_t token, const std::string& op_key, int64_t order, Direction d,
               const Side& golden, const Side& mine) {
  const size_t n = std::max(golden.size(), mine.size());
  const std::string counts = golden.size() == mine.size()
                                 ? ""
                                 : std::string(d == Direction::Input ? "inputs" : "outputs") +
                                       " count differs: " + mine.description + " has " + std::to_string(mine.size()) +
                                       ", " + golden.description + " has " + std::to_string(golden.size());
  for (size_t i = 0; i < n; ++i) {
    RowSpec r = ctx.row(token, op_key, d, static_cast<int>(i), order);
    if (i < golden.size()) {
      r.golden = golden.tensors[i];
      r.golden_path = golden.paths[i];
      r.golden_recorded = golden.recorded_at(i);
    }
    if (i < mine.size()) {
      r.mine = mine.tensors[i];
      r.my_path = mine.paths[i];
      r.my_recorded = mine.recorded_at(i);
    }
    r.golden_op_type = golden.op_type;
    r.my_op_type = mine.op_type;
    if (!counts.empty()) {
      if (i < golden.size() && i < mine.size())
        r.pairing_note = counts + "; compared by position";
      else if (std::min(golden.size(), mine.size()) == 0)
        r.match_note = counts;
      else
        r.match_note = counts + "; " + (i < mine.size() ? golden.description : mine.description) + " has no " +
                       (d == Direction::Input ? "input " : "output ") + std::to_string(i);
    }
    ctx.out->rows.push_back(std::move(r));
  }
}

Side fx_inputs(const FxNode& node) {
  Side s{{}, {}, node.target, "FX node " + node.prefix, {}};
  for (const auto& f : node.inputs) {
    s.tensors.push_back(read_npy(f.path));
    s.paths.push_back(f.path);
  }
  return s;
}

std::optional<FxLink> output_link(const GeGraphOp& op, size_t k) {
  return k < op.output_links.size() ? op.output_links[k] : std::nullopt;
}

struct FxStepIndex {
  std::map<std::string, FxNode> nodes;
  std::set<std::string> used;
};

void output_row_fx(GroupContext& ctx, int64_t token, int64_t order, FxStepIndex& fx, const FxLink& link, size_t k,
                   const GeDump& dump, const GeOpFile& file) {
  RowSpec r = ctx.row(token, link.prefix, Direction::Output, static_cast<int>(k), order);
  r.golden_op_type = target_of(link.prefix);
  r.mine = dump.outputs[k];
  r.my_recorded = dump.recorded(Direction::Output, k);
  r.my_path = ge_tensor_path(file.path, Direction::Output, k);
  r.my_op_type = file.name.op_type;
  const auto node = fx.nodes.find(link.prefix);
  const FxTensorFile* golden = nullptr;
  if (node != fx.nodes.end()) {
    fx.used.insert(link.prefix);
    for (const auto& f : node->second.outputs)
      if (f.index == link.output && f.item < 0) golden = &f;
  }
  if (golden) {
    r.golden = read_npy(golden->path);
    r.golden_path = golden->path;
  } else {
    r.match_note = "FX dump has no " + link.prefix + ".OUTPUT." + std::to_string(link.output);
  }
  ctx.out->rows.push_back(std::move(r));
}

// Drops the FX inputs that are scalars (0-d: non-tensor arguments such as `dim` or `alpha`, which
// the GE op holds as attributes or constants) when that makes the counts agree; each one dropped
// is listed with the reason.
void drop_folded_scalars(GroupContext& ctx, Side& golden, size_t ge_inputs, const std::string& prefix,
                         const std::string& op_name) {
  if (golden.size() <= ge_inputs) return;
  std::vector<size_t> scalars;
  for (size_t i = 0; i < golden.size(); ++i)
    if (golden.tensors[i] && golden.tensors[i]->ok() && golden.tensors[i]->shape.empty()) scalars.push_back(i);
  if (golden.size() - scalars.size() != ge_inputs) return;
  for (auto it = scalars.rbegin(); it != scalars.rend(); ++it) {
    ctx.unmatched(prefix + ".INPUT." + std::to_string(*it),
                  "FX scalar argument, folded into GE op " + op_name + " (an attribute there)");
    golden.tensors.erase(golden.tensors.begin() + static_cast<std::ptrdiff_t>(*it));
    golden.paths.erase(golden.paths.begin() + static_cast<std::ptrdiff_t>(*it));
  }
}

// The FX node's inputs against the GE op's, by position, when they line up: as many of them
// (after folded scalars) and of the same shapes. Otherwise no input row is made (msit
// zipped them anyway) and the result's unmatched list says why. For a fused op (`fused`), GE
// inputs past the first op's count belong to later ops of the fusion and are listed as such.
void input_rows_fx(GroupContext& ctx, int64_t token, int64_t order, FxStepIndex& fx, const std::string& prefix,
                   const GeDump& dump, const GeOpFile& file, bool fused = false) {
  const auto node = fx.nodes.find(prefix);
  Side mine = ge_side(dump, file, Direction::Input, "GE op");
  if (node == fx.nodes.end()) {
    const Side none{{}, {}, target_of(prefix), "the FX dump (no files for " + prefix + ")", {}};
    pair_rows(ctx, token, prefix, order, Direction::Input, none, mine);
    return;
  }
  fx.used.insert(prefix);
  Side golden = fx_inputs(node->second);
  const std::string& op_name = file.name.op_name;
  drop_folded_scalars(ctx, golden, mine.size(), prefix, op_name);
  if (fused && mine.size() > golden.size()) {
    for (size_t i = golden.size(); i < mine.size(); ++i)
      ctx.unmatched(op_name + " input " + std::to_string(i),
                    "an input of a later op of the fused op, not of " + prefix);
    mine.truncate(golden.size());
  }
  std::string misaligned;
  if (golden.size() != mine.size()) {
    misaligned = "the GE op has " + std::to_string(mine.size()) + " inputs, FX node " + prefix + " " +
                 std::to_string(golden.size());
  }
  for (size_t i = 0; misaligned.empty() && i < golden.size(); ++i) {
    const auto& g = golden.tensors[i];
    const auto& m = mine.tensors[i];
    const bool vectors = g && m && g->shape.size() <= 1 && m->shape.size() <= 1;  // [n], [] and [1] alike
    if (golden.shape_known(i) && mine.shape_known(i) &&
        (g->elements() != m->elements() || (!vectors && g->shape != m->shape)))
      misaligned = "input " + std::to_string(i) + " is " + shape_to_string(m->shape) + " in the GE op and " +
                   shape_to_string(g->shape) + " in FX node " + prefix;
  }
  if (!misaligned.empty()) {
    ctx.unmatched(op_name + " (inputs)", "inputs do not line up (" + misaligned + "); only outputs are matched");
    return;
  }
  pair_rows(ctx, token, prefix, order, Direction::Input, golden, mine);
}

// The real converters lower one FX node to several GE ops (addmm: Transpose, MatMulV2, Mul, Add)
// and only the last carries the `_fx_tensor_name` link; such an op's inputs are not the FX
// node's, so they are not paired. Returns the helper ops feeding `op`, empty when every data
// input comes from a Data or Const op or from an op linked to an FX node.
std::vector<std::string> helper_inputs(const GeGraph& graph, const GeGraphOp& op) {
  std::vector<std::string> helpers;
  for (const auto& in : op.inputs) {
    if (in.control()) continue;
    const GeGraphOp* producer = graph.find(in.op);
    if (!producer || producer->type == "Data" || producer->type == "Const" || producer->fx_prefix()) continue;
    helpers.push_back(producer->name);
  }
  return helpers;
}

// The linked op an unlinked helper op feeds, following first consumers (depth-bounded).
std::optional<std::string> lowering_of(const GeGraph& graph, const GeGraphOp& helper) {
  const GeGraphOp* at = &helper;
  for (int depth = 0; depth < 8; ++depth) {
    const auto next = graph.first_consumer.find(at->name);
    if (next == graph.first_consumer.end()) return std::nullopt;
    at = &graph.ops[next->second];
    if (const auto prefix = at->fx_prefix()) return prefix;
  }
  return std::nullopt;
}

void self_compare_rows(GroupContext& ctx, int64_t token, int64_t order, const GeDump& dump, const GeOpFile& file,
                       const std::string& op_key) {
  const size_t n = std::min(dump.inputs.size(), dump.outputs.size());
  for (size_t i = 0; i < n; ++i) {
    RowSpec r = ctx.row(token, op_key, Direction::Output, static_cast<int>(i), order);
    r.golden = dump.inputs[i];
    r.golden_recorded = dump.recorded(Direction::Input, i);
    r.golden_path = ge_tensor_path(file.path, Direction::Input, i);
    r.golden_op_type = file.name.op_type;
    r.mine = dump.outputs[i];
    r.my_recorded = dump.recorded(Direction::Output, i);
    r.my_path = ge_tensor_path(file.path, Direction::Output, i);
    r.my_op_type = file.name.op_type;
    r.self_compare = true;
    ctx.out->rows.push_back(std::move(r));
  }
}

std::vector<const GeOpFile*> by_time(const std::map<std::string, GeOpFile>& files) {
  std::vector<const GeOpFile*> out;
  for (const auto& [name, f] : files) out.push_back(&f);
  std::stable_sort(out.begin(), out.end(),
                   [](const GeOpFile* a, const GeOpFile* b) { return a->name.timestamp < b->name.timestamp; });
  return out;
}

GeDump read_or_report(GroupContext& ctx, const GeOpFile& file) {
  GeDump dump = read_ge_dump(file.path);
  for (const auto& w : dump.warnings) ctx.out->warnings.push_back(file.path + ": " + w);
  if (!dump.ok()) {
    ctx.out->warnings.push_back(file.path + ": " + dump.error);
    ctx.unmatched(file.name.op_name, "GE dump file unreadable: " + dump.error);
  }
  return dump;
}

// The FX nodes a GE op computes (a fused op: those its constituents stand for), in order, set
// on the rows it gave from `first` on.
void note_fx_nodes(GroupContext& ctx, size_t first, const std::vector<const GeGraphOp*>& ops) {
  std::vector<std::string> nodes;
  for (const GeGraphOp* op : ops) {
    const auto prefix = op ? op->fx_prefix() : std::nullopt;
    if (!prefix) continue;
    const std::string node = prefix->substr(0, prefix->find('-'));  // "{node}-{target}"
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  std::vector<std::string> graph_nodes;
  if (ctx.graph_nodes)
    for (const std::string& node : nodes)
      if (const auto found = ctx.graph_nodes->find(node); found != ctx.graph_nodes->end())
        for (const std::string& id : found->second)
          if (std::find(graph_nodes.begin(), graph_nodes.end(), id) == graph_nodes.end()) graph_nodes.push_back(id);
  for (size_t i = first; i < ctx.out->rows.size(); ++i) {
    ctx.out->rows[i].fx_nodes = nodes;
    ctx.out->rows[i].graph_nodes = graph_nodes;
  }
}

// What a plugin record beside the dump says of `graph` (GeGraphNodes, GeGraphCalls); nullptr when nothing.
template <typename ByGraph>
const typename ByGraph::mapped_type* of_graph(const ByGraph& record, int graph) {
  const auto found = record.find(graph);
  return found == record.end() ? nullptr : &found->second;
}

// The FX output a dump output stands for: through its OriginalOp (a fused op names the op of the
// graph each output belongs to), else through the op's own link.
std::optional<FxLink> dump_output_link(const GeGraph& graph, const GeDump& dump, const GeGraphOp* op, size_t k) {
  if (k < dump.output_original_ops.size() && dump.output_original_ops[k])
    if (const GeGraphOp* orig = graph.find(dump.output_original_ops[k]->name))
      if (const auto link = output_link(*orig, static_cast<size_t>(dump.output_original_ops[k]->output_index)))
        return link;
  return op ? output_link(*op, k) : std::nullopt;
}

void match_op_fx(GroupContext& ctx, const GeGraph& graph, int64_t token, FxStepIndex& fx, const GeOpFile& file) {
  const GeDump dump = read_or_report(ctx, file);
  if (!dump.ok()) return;
  const int64_t order = file.name.timestamp;
  const std::string& op_name = file.name.op_name;
  const size_t first_row = ctx.out->rows.size();

  if (const GeGraphOp* op = find_graph_op(graph, dump, file)) {
    // Graph fusion keeps the name of one op it replaced; OriginalOp names the others.
    std::vector<const GeGraphOp*> parts{op};
    for (const auto& orig : dump.output_original_ops)
      if (orig)
        if (const GeGraphOp* o = graph.find(orig->name); o && std::find(parts.begin(), parts.end(), o) == parts.end())
          parts.push_back(o);
    std::vector<std::optional<FxLink>> links;
    for (size_t k = 0; k < dump.outputs.size(); ++k) links.push_back(dump_output_link(graph, dump, op, k));
    if (std::none_of(links.begin(), links.end(), [](const auto& l) { return l.has_value(); })) {
      if (is_self_compared_type(file.name.op_type) || is_self_compared_type(op->type)) {
        self_compare_rows(ctx, token, order, dump, file, op_name);
      } else if (const auto lowered = lowering_of(graph, *op)) {
        ctx.unmatched(op_name, "GE op has no _fx_tensor_name link: a helper op of the lowering of " + *lowered +
                                   (dump.stats_only ? kNoOriginalOp : ""));
      } else {
        ctx.unmatched(op_name, "GE op has no _fx_tensor_name link");
      }
      return;
    }
    const auto helpers = helper_inputs(graph, *op);
    if (parts.size() == 1 && helpers.empty()) {
      if (const auto prefix = op->fx_prefix()) input_rows_fx(ctx, token, order, fx, *prefix, dump, file);
    } else {
      std::string names;
      for (const auto& h : helpers) names += (names.empty() ? "" : ", ") + h;
      ctx.unmatched(op_name + " (inputs)",
                    parts.size() > 1 ? "fused op: its inputs are those of several FX nodes; only outputs are matched"
                                     : "inputs come from helper ops of the same lowering (" + names +
                                           "), not from the FX node's inputs; only outputs are matched");
    }
    for (size_t k = 0; k < links.size(); ++k)
      if (links[k]) output_row_fx(ctx, token, order, fx, *links[k], k, dump, file);
    note_fx_nodes(ctx, first_row, parts);
    return;
  }

  const Constituents fused = constituents(graph, dump, file, nullptr);
  const auto& parts = fused.ops;
  if (parts.empty()) {
    if (is_self_compared_type(file.name.op_type)) {
      self_compare_rows(ctx, token, order, dump, file, op_name);
    } else {
      ctx.unmatched(op_name, file.name.op_type == kFusedType ? "fused op name cannot be split into ops of the graph txt"
                                                             : "GE op not found in the graph txt");
    }
    return;
  }
  // Fused op: the first constituent's FX inputs against the fused inputs (when its inputs are
  // the FX node's); each output against the FX output its OriginalOp names, else the last
  // constituent's.
  if (!fused.from_name) {
    ctx.unmatched(op_name + " (inputs)",
                  "fused op name cannot be split into ops of the graph txt; "
                  "only outputs are matched, through OriginalOp");
  } else if (const auto prefix = parts.front()->fx_prefix(); prefix && helper_inputs(graph, *parts.front()).empty()) {
    input_rows_fx(ctx, token, order, fx, *prefix, dump, file, true);
  } else {
    ctx.unmatched(op_name + " (inputs)", "first op of the fused op (" + parts.front()->name +
                                             ") is a helper op with no _fx_tensor_name link; only outputs are matched");
  }
  for (size_t k = 0; k < dump.outputs.size(); ++k)
    if (const auto link = dump_output_link(graph, dump, parts.back(), k))
      output_row_fx(ctx, token, order, fx, *link, k, dump, file);
  note_fx_nodes(ctx, first_row, parts);
}

struct LoadedGraph {
  int graph = -1;  // the id in its file name
  std::optional<GeGraph> graph_txt;
};

std::vector<LoadedGraph> load_graphs(const std::vector<std::string>& files, MatchResult& out) {
  std::vector<LoadedGraph> graphs;
  for (const auto& f : files) {
    std::string error;
    LoadedGraph g{graph_id_of_file(f), read_ge_graph(f, &error)};
    if (!g.graph_txt) out.warnings.push_back("graph txt skipped: " + error);
    graphs.push_back(std::move(g));
  }
  return graphs;
}

template <typename A, typename B>
std::vector<std::pair<const A*, const B*>> pair_ranks(const std::vector<A>& golden, const std::vector<B>& mine,
                                                      std::optional<int> rank, MatchResult& out) {
  std::vector<std::pair<const A*, const B*>> pairs;
  const auto ranked = [](const auto& v) { return !v.empty() && v.front().rank >= 0; };
  const auto pick = [&](const auto& v, int r) -> decltype(&v.front()) {
    for (const auto& x : v)
      if (x.rank == r || x.rank < 0) return &x;
    return nullptr;
  };
  if (golden.empty() || mine.empty()) return pairs;
  if (rank) {
    const A* g = pick(golden, *rank);
    const B* m = pick(mine, *rank);
    if (!g || !m)
      out.fatal_error = "rank " + std::to_string(*rank) + " is not in both dumps";
    else
      pairs.emplace_back(g, m);
    return pairs;
  }
  if (ranked(golden) && ranked(mine)) {
    for (const auto& m : mine) {
      const A* g = pick(golden, m.rank);
      if (g)
        pairs.emplace_back(g, &m);
      else
        out.warnings.push_back("rank " + std::to_string(m.rank) + " has no golden dump; skipped");
    }
    for (const auto& g : golden)
      if (!pick(mine, g.rank))
        out.warnings.push_back("golden rank " + std::to_string(g.rank) + " has no counterpart; skipped");
    return pairs;
  }
  if (golden.size() == 1 && mine.size() == 1) {
    pairs.emplace_back(&golden.front(), &mine.front());
    return pairs;
  }
  out.fatal_error = "one dump has " + std::to_string(std::max(golden.size(), mine.size())) +
                    " rank directories and the other has none; pass --rank";
  return pairs;
}

// Graph txt i, my group j and golden group k of one rank, paired: by graph id where every graph txt
// and group names one (each once) and the groups of one side all find the graph txt and the other
// side's group of their id (a side that dumped fewer graphs: `dump.steps` chose calls none of
// their runs made), the other side's groups without a partner skipped with a warning; else by
// position (two dumps made in one process number their graphs on), with a warning when the counts
// differ. A group of mine whose every run the record of calls leaves out (`dump.steps` chose none
// of its calls) has nothing to compare: it needs no partner, and it is not paired.
struct GroupPair {
  size_t graph, mine, golden;
};

template <typename Groups>
bool graphs_named_once(const Groups& groups) {
  std::set<int> seen;
  return std::all_of(groups.begin(), groups.end(),
                     [&](const auto& g) { return g.graph >= 0 && seen.insert(g.graph).second; });
}

// The index of the group with graph id `graph`; groups.size() when none has it.
template <typename Groups>
size_t index_of_graph(const Groups& groups, int graph) {
  return static_cast<size_t>(
      std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.graph == graph; }) - groups.begin());
}

template <typename G>
std::vector<GroupPair> paired_groups(const std::vector<LoadedGraph>& graphs, const std::vector<GeGroup>& mine,
                                     const std::vector<G>& golden, const GeGraphCalls& graph_calls, int rank,
                                     MatchResult& out) {
  const std::string where = rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string();
  std::vector<GroupPair> pairs;
  const auto all_left_out = [&](const GeGroup& g) {
    const std::vector<int64_t>* runs = of_graph(graph_calls, g.graph);
    return runs && std::all_of(runs->begin(), runs->end(), [](int64_t call) { return call == kCallLeftOut; });
  };
  const auto paired_by_id = [&](const GeGroup& g) {
    return index_of_graph(graphs, g.graph) < graphs.size() && index_of_graph(golden, g.graph) < golden.size();
  };
  const bool every_mine_paired =
      std::all_of(mine.begin(), mine.end(), [&](const GeGroup& g) { return all_left_out(g) || paired_by_id(g); });
  const bool every_golden_paired = !golden.empty() && std::all_of(golden.begin(), golden.end(), [&](const G& g) {
    const size_t j = index_of_graph(mine, g.graph);
    return j < mine.size() && paired_by_id(mine[j]);
  });
  if (graphs_named_once(graphs) && graphs_named_once(mine) && graphs_named_once(golden) &&
      (every_mine_paired || every_golden_paired)) {
    for (size_t j = 0; j < mine.size(); ++j) {
      if (all_left_out(mine[j])) continue;
      if (paired_by_id(mine[j]))
        pairs.push_back({index_of_graph(graphs, mine[j].graph), j, index_of_graph(golden, mine[j].graph)});
      else
        out.warnings.push_back(
            where + "graph " + std::to_string(mine[j].graph) + " has a GE dump directory and no " +
            (index_of_graph(graphs, mine[j].graph) < graphs.size() ? "golden directory" : "graph txt file") +
            "; skipped");
    }
    for (const G& g : golden)
      if (index_of_graph(mine, g.graph) == mine.size())
        out.warnings.push_back(where + "graph " + std::to_string(g.graph) +
                               " has a golden directory and no GE dump directory; skipped");
    return pairs;
  }
  const size_t n = std::min({graphs.size(), mine.size(), golden.size()});
  if (graphs.size() != mine.size() || mine.size() != golden.size()) {
    out.warnings.push_back(where + std::to_string(graphs.size()) + " graph txt file(s), " +
                           std::to_string(mine.size()) + " GE graph dir(s), " + std::to_string(golden.size()) +
                           " golden graph dir(s); pairing the first " + std::to_string(n) + " by position");
  }
  for (size_t i = 0; i < n; ++i) pairs.push_back({i, i, i});
  return pairs;
}

// Whether GE's token `token` can be given its model call and is one of the calls the run chose;
// warns and says no when the record of calls lacks it, says no quietly for a call left out.
bool call_recorded(const GroupContext& ctx, const TokenDir& token) {
  if (ctx.knows_call_of(token.token_id))
    return !ctx.calls || (*ctx.calls)[static_cast<size_t>(token.token_id)] != kCallLeftOut;
  ctx.out->warnings.push_back(token.path + ": token " + std::to_string(token.token_id) + " of graph " +
                              std::to_string(ctx.graph) + " is not in the record of calls (" +
                              std::to_string(ctx.calls->size()) + " runs recorded); skipped");
  return false;
}

const std::vector<TokenDir>& tokens_of(const GeGroup& group) { return group.tokens; }
const std::vector<TokenDir>& tokens_of(const FxGroup& group) { return group.steps; }

// Calls match(ctx, graph txt, my token, golden token) for each token of each graph of one rank, its
// graph paired with my and the golden group and its token with the golden one of the same number
// (`golden_token` names that directory in the warning when there is none); `ctx` carries what the
// plugin's records beside `my_graph_files` say of the graph.
template <typename G, typename MatchToken>
void match_tokens(const std::vector<LoadedGraph>& graphs, const std::vector<GeGroup>& mine,
                  const std::vector<G>& golden, int rank, const std::vector<std::string>& my_graph_files,
                  const std::string& golden_token, MatchResult& out, const MatchToken& match) {
  // the Dynamo nodes of my run's graphs (what an intervention on it runs eagerly), and their calls
  const GeGraphNodes graph_nodes = read_ge_graph_nodes(my_graph_files, rank, &out.warnings);
  const GeGraphCalls graph_calls = read_ge_graph_calls(my_graph_files, rank, &out.warnings);
  const std::vector<GroupPair> pairs = paired_groups(graphs, mine, golden, graph_calls, rank, out);
  for (const GroupPair& pair : pairs) {
    const LoadedGraph& loaded = graphs[pair.graph];
    if (!loaded.graph_txt) continue;
    const int graph = loaded.graph >= 0 ? loaded.graph : static_cast<int>(pair.graph);
    GroupContext ctx{
        rank, graph, pairs.size() > 1, &out, {}, of_graph(graph_nodes, graph), of_graph(graph_calls, graph)};
    if (!graph_calls.empty() && !ctx.calls)
      out.warnings.push_back("graph " + std::to_string(graph) + " has no entry in the record of calls beside " +
                             my_graph_files.front() + ": its rows carry GE's tokens, not model calls");
    std::map<int64_t, const TokenDir*> golden_tokens;
    for (const TokenDir& t : tokens_of(golden[pair.golden])) golden_tokens.emplace(t.token_id, &t);
    for (const TokenDir& token : mine[pair.mine].tokens) {
      if (!call_recorded(ctx, token)) continue;
      const auto found = golden_tokens.find(token.token_id);
      if (found == golden_tokens.end()) {
        out.warnings.push_back(token.path + ": token " + std::to_string(token.token_id) + " has no " + golden_token +
                               "; skipped");
        continue;
      }
      match(ctx, *loaded.graph_txt, token, *found->second);
    }
  }
}

void no_rows_is_fatal(MatchResult& out, const std::string& what) {
  if (!out.rows.empty() || !out.fatal_error.empty()) return;
  out.fatal_error = "nothing could be matched between " + what;
  if (!out.unmatched.empty()) out.fatal_error += " (" + std::to_string(out.unmatched.size()) + " unmatched ops)";
}

// ---------------------------------------------------------------- GE vs GE

struct GoldenToken {
  std::map<std::string, GeOpFile> files;
  std::set<std::string> used;
  const GeOpFile* find(const std::string& name) const {
    auto it = files.find(name);
    if (it == files.end()) it = files.find(sanitize_ge_name(name));
    return it == files.end() ? nullptr : &it->second;
  }
};

std::string ge_op_key(const GeGraph& graph, const GeDump& dump, const GeOpFile& file) {
  const GeGraphOp* op = find_graph_op(graph, dump, file);
  const auto prefix = op ? op->fx_prefix() : std::nullopt;
  return prefix ? *prefix : file.name.op_name;
}

void match_op_ge(GroupContext& ctx, const GeGraph& graph, int64_t token, GoldenToken& golden, const GeOpFile& file) {
  const GeDump dump = read_or_report(ctx, file);
  if (!dump.ok()) return;
  const int64_t order = file.name.timestamp;
  const std::string op_key = ge_op_key(graph, dump, file);

  const size_t first_row = ctx.out->rows.size();
  if (const GeOpFile* g = golden.find(file.name.op_name)) {
    golden.used.insert(g->name.op_name);
    const GeDump gd = read_or_report(ctx, *g);
    if (!gd.ok()) return;
    for (Direction d : {Direction::Input, Direction::Output})
      pair_rows(ctx, token, op_key, order, d, ge_side(gd, *g, d, "golden GE op"), ge_side(dump, file, d, "GE op"));
    note_fx_nodes(ctx, first_row, {find_graph_op(graph, dump, file)});
    return;
  }
  const Constituents fused =
      constituents(graph, dump, file, [&](const std::string& n) { return golden.find(n) != nullptr; });
  const auto& parts = fused.ops;
  if (!fused.from_name || std::find(parts.begin(), parts.end(), nullptr) != parts.end()) {
    ctx.unmatched(file.name.op_name, "no op of this name in the golden GE dump");
    return;
  }
  // Fused op: inputs of its constituents that come from outside the group, and the
  // last constituent's outputs.
  std::set<std::string> group;
  for (const GeGraphOp* op : parts) group.insert(sanitize_ge_name(op->name));
  Side inputs{{}, {}, parts.front()->type, "the fused ops' outside inputs in the golden dump", {}};
  Side outputs{{}, {}, parts.back()->type, "the last fused op (" + parts.back()->name + ") in the golden dump", {}};
  for (const GeGraphOp* op : parts) {
    const GeOpFile* g = golden.find(op->name);
    if (!g) {
      ctx.out->warnings.push_back(file.path + ": golden dump has no " + op->name +
                                  " (part of the fused op); its inputs are left out");
      continue;
    }
    golden.used.insert(g->name.op_name);
    const GeDump gd = read_or_report(ctx, *g);
    if (!gd.ok()) continue;
    size_t data_input = 0;
    for (const auto& in : op->inputs) {
      if (in.control()) continue;
      const size_t i = data_input++;
      if (i >= gd.inputs.size() || group.count(sanitize_ge_name(in.op))) continue;
      inputs.tensors.push_back(gd.inputs[i]);
      inputs.paths.push_back(ge_tensor_path(g->path, Direction::Input, i));
      inputs.recorded.push_back(gd.recorded(Direction::Input, i));
    }
    if (op == parts.back()) outputs = ge_side(gd, *g, Direction::Output, outputs.description);
  }
  pair_rows(ctx, token, op_key, order, Direction::Input, inputs, ge_side(dump, file, Direction::Input, "GE op"));
  pair_rows(ctx, token, op_key, order, Direction::Output, outputs, ge_side(dump, file, Direction::Output, "GE op"));
  note_fx_nodes(ctx, first_row, parts);
}

}  // namespace

// ---------------------------------------------------------------- layout

int graph_id_of_file(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const size_t begin = name.find_first_of("0123456789");
  if (begin == std::string::npos) return -1;
  const size_t end = name.find_first_not_of("0123456789", begin);
  const auto n = number(name.substr(begin, std::min<size_t>(end - begin, 9)));
  return n ? static_cast<int>(*n) : -1;
}

GeDumpLayout scan_ge_dump_dir(const std::string& path) {
  GeDumpLayout l;
  walk_dirs(path, kMaxGraphFileDepth, &l.warnings, [&](const fs::path& dir, int) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code type_ec;
      if (starts_with(name, kGraphPrefix) && ends_with(name, ".txt") && it->is_regular_file(type_ec))
        l.graph_files.push_back(it->path().string());
    }
  });
  std::sort(l.graph_files.begin(), l.graph_files.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(graph_id_of_file(a), a) < std::make_pair(graph_id_of_file(b), b);
  });

  std::vector<std::pair<int, std::string>> rank_dirs;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    if (const auto r = rank_of_dir_name(it->path().filename().string()))
      rank_dirs.emplace_back(*r, it->path().string());
  }
  std::sort(rank_dirs.begin(), rank_dirs.end());
  for (const auto& [rank, dir] : rank_dirs) {
    if (!l.ranks.empty() && l.ranks.back().rank == rank) {
      l.warnings.push_back("two directories for rank " + std::to_string(rank) + "; using " + l.ranks.back().path);
      continue;
    }
    l.ranks.push_back({rank, dir, scan_groups(dir, &l.warnings)});
  }
  if (l.ranks.empty()) l.ranks.push_back({-1, path, scan_groups(path, &l.warnings)});
  return l;
}

bool is_ge_dump(const std::string& path, std::string* detail) {
  const GeDumpLayout l = scan_ge_dump_dir(path);
  if (l.graph_files.empty()) return false;
  if (detail) {
    size_t groups = 0, tokens = 0;
    for (const auto& r : l.ranks) {
      groups += r.groups.size();
      for (const auto& g : r.groups) tokens += g.tokens.size();
    }
    *detail = std::to_string(l.graph_files.size()) + " graph txt file(s), " +
              (l.ranks.front().rank >= 0 ? std::to_string(l.ranks.size()) + " rank(s), " : "") +
              std::to_string(groups) + " graph dir(s), " + std::to_string(tokens) + " token dir(s)";
  }
  return true;
}

std::vector<std::string> graph_files_for_rank(const GeDumpLayout& layout, int rank) {
  if (rank < 0) return layout.graph_files;
  std::vector<std::string> out;
  bool any_ranked = false;
  const std::string tag = "_rank_" + std::to_string(rank) + "_";
  for (const auto& f : layout.graph_files) {
    const std::string name = fs::path(f).filename().string();
    any_ranked |= name.find("_rank_") != std::string::npos;
    if (name.find(tag) != std::string::npos) out.push_back(f);
  }
  return any_ranked ? out : layout.graph_files;
}

namespace {

// The "graphs" object of the plugin's JSON file `name` beside `graph_files`; nullopt when there is
// no such file, and with a warning when it holds no such object.
std::optional<nlohmann::json> plugin_graphs(const std::vector<std::string>& graph_files, const std::string& name,
                                            const std::string& expected, std::vector<std::string>* warnings) {
  if (graph_files.empty()) return std::nullopt;
  const fs::path path = fs::path(graph_files.front()).parent_path() / name;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("graphs") || !j["graphs"].is_object()) {
    if (warnings) warnings->push_back(path.string() + ": not " + expected + " ({\"graphs\": {...}}); ignored");
    return std::nullopt;
  }
  return std::move(j["graphs"]);
}

std::string rank_file(const char* stem, int rank) {
  return std::string(stem) + "_rank_" + std::to_string(std::max(rank, 0)) + ".json";
}

}  // namespace

GeGraphNodes read_ge_graph_nodes(const std::vector<std::string>& graph_files, int rank,
                                 std::vector<std::string>* warnings) {
  GeGraphNodes out;
  const auto graphs =
      plugin_graphs(graph_files, rank_file("diagnose_graph_nodes", rank), "a map of graph nodes", warnings);
  if (!graphs) return out;
  for (const auto& [id, nodes] : graphs->items()) {
    const std::optional<int> graph = as_graph_id(number(id));
    if (!graph || !nodes.is_object()) continue;
    auto& table = out[*graph];
    for (const auto& [node, ids] : nodes.items()) {
      if (!ids.is_array()) continue;
      for (const nlohmann::json& one : ids)
        if (one.is_string()) table[node].push_back(one.get<std::string>());
    }
  }
  return out;
}

GeGraphCalls read_ge_graph_calls(const std::vector<std::string>& graph_files, int rank,
                                 std::vector<std::string>* warnings) {
  GeGraphCalls out;
  const auto graphs = plugin_graphs(graph_files, rank_file("diagnose_graph_calls", rank),
                                    "a record of the calls each graph ran in", warnings);
  if (!graphs) return out;
  for (const auto& [id, calls] : graphs->items()) {
    const std::optional<int> graph = as_graph_id(number(id));
    if (!graph || !calls.is_array()) continue;
    std::vector<int64_t>& runs = out[*graph];
    for (const nlohmann::json& call : calls) {
      if (call.is_null()) {
        runs.push_back(kCallLeftOut);
        continue;
      }
      if (!call.is_number_integer()) break;  // the runs after one unreadable are not known
      runs.push_back(call.get<int64_t>());
    }
  }
  return out;
}

std::map<std::string, GeOpFile> index_ge_token(const std::string& dir, std::vector<std::string>* warnings) {
  std::map<std::string, GeOpFile> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    const auto name = parse_ge_dump_name(it->path().filename().string());
    if (!name) continue;
    GeOpFile f{*name, it->path().string(), static_cast<uint64_t>(it->file_size(type_ec))};
    auto [pos, inserted] = files.emplace(name->op_name, f);
    if (inserted) continue;
    const GeOpFile& kept = f.size > pos->second.size ? f : pos->second;
    if (warnings) {
      warnings->push_back(dir + ": two dump files for op " + name->op_name + " (" +
                          fs::path(pos->second.path).filename().string() + ", " + it->path().filename().string() +
                          "); keeping the larger, " + fs::path(kept.path).filename().string());
    }
    pos->second = kept;
  }
  if (ec && warnings) warnings->push_back(dir + ": cannot list directory: " + ec.message());
  return files;
}

// ---------------------------------------------------------------- matchers

MatchResult match_ge_vs_fx(const std::string& fx_dir, const std::string& ge_dir, std::optional<int> rank) {
  MatchResult out;
  const GeDumpLayout ge = scan_ge_dump_dir(ge_dir);
  const FxDumpLayout fx = scan_fx_dump(fx_dir);
  out.warnings = ge.warnings;
  out.warnings.insert(out.warnings.end(), fx.warnings.begin(), fx.warnings.end());
  if (ge.graph_files.empty()) {
    out.fatal_error = ge_dir + ": no " + kGraphPrefix + "*.txt graph file";
    return out;
  }
  if (fx.ranks.empty()) {
    out.fatal_error = fx_dir + ": no TorchAir FX npy dump found";
    return out;
  }
  for (const auto& [fx_rank, ge_rank] : pair_ranks(fx.ranks, ge.ranks, rank, out)) {
    const int rank_id = std::max(ge_rank->rank, fx_rank->rank);
    const std::vector<std::string> files = graph_files_for_rank(ge, ge_rank->rank);
    match_tokens(load_graphs(files, out), ge_rank->groups, fx_rank->groups, rank_id, files, "FX step directory", out,
                 [&](GroupContext& ctx, const GeGraph& graph, const TokenDir& token, const TokenDir& step) {
                   FxStepIndex fx_index{index_fx_step(step.path, &out.warnings), {}};
                   const auto ge_files = index_ge_token(token.path, &out.warnings);
                   for (const GeOpFile* f : by_time(ge_files)) match_op_fx(ctx, graph, token.token_id, fx_index, *f);
                   for (const auto& [prefix, node] : fx_index.nodes)
                     if (!fx_index.used.count(prefix))
                       ctx.unmatched(prefix, "FX node has no linked GE op in the GE dump");
                 });
  }
  no_rows_is_fatal(out, fx_dir + " and " + ge_dir);
  return out;
}

MatchResult match_ge_vs_ge(const std::string& golden_ge_dir, const std::string& my_ge_dir, std::optional<int> rank) {
  MatchResult out;
  const GeDumpLayout golden = scan_ge_dump_dir(golden_ge_dir);
  const GeDumpLayout mine = scan_ge_dump_dir(my_ge_dir);
  out.warnings = mine.warnings;
  out.warnings.insert(out.warnings.end(), golden.warnings.begin(), golden.warnings.end());
  const GeDumpLayout& graph_source = mine.graph_files.empty() ? golden : mine;
  if (graph_source.graph_files.empty()) {
    out.fatal_error = "neither " + my_ge_dir + " nor " + golden_ge_dir + " has a " + kGraphPrefix + "*.txt graph file";
    return out;
  }
  for (const auto& [golden_rank, my_rank] : pair_ranks(golden.ranks, mine.ranks, rank, out)) {
    const int rank_id = std::max(golden_rank->rank, my_rank->rank);
    match_tokens(load_graphs(graph_files_for_rank(graph_source, my_rank->rank), out), my_rank->groups,
                 golden_rank->groups, rank_id, graph_files_for_rank(mine, my_rank->rank), "golden token directory", out,
                 [&](GroupContext& ctx, const GeGraph& graph, const TokenDir& token, const TokenDir& golden_token) {
                   GoldenToken golden_index{index_ge_token(golden_token.path, &out.warnings), {}};
                   const auto files = index_ge_token(token.path, &out.warnings);
                   for (const GeOpFile* f : by_time(files)) match_op_ge(ctx, graph, token.token_id, golden_index, *f);
                   for (const auto& [name, f] : golden_index.files)
                     if (!golden_index.used.count(name))
                       ctx.unmatched(name, "golden GE op has no counterpart in my dump");
                 });
  }
  no_rows_is_fatal(out, golden_ge_dir + " and " + my_ge_dir);
  return out;
}

}  // namespace diagnose::compare
