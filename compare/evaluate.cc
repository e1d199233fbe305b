#include "compare/evaluate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>

#include "compare/mapped_file.h"
#include "compare/uninitialized_ops.h"

namespace diagnose::compare {

namespace {

constexpr uint64_t kChunk = 1 << 15;  // scalars read per side per step
constexpr uint64_t kSplit = 1 << 23;  // rows larger than this are split across threads

// A slice of one row's scalars, computed by one worker.
struct Task {
  size_t row;
  uint64_t begin, end;
  bool whole_tensor;  // stats for one side only (element counts differ)
};

struct Partial {
  std::optional<RecordedStats> tensor_stats;  // Plan::stats_of's
  std::unique_ptr<PairAccumulator> pair;
  std::unique_ptr<PairAccumulator> golden_alone, mine_alone;  // when counts differ
  RefereeAccumulator golden_vs_referee, mine_vs_referee;
  std::string error;
};

struct Plan {
  bool recorded = false;  // judged on recorded statistics (judge_recorded)
  // The side of a recorded row that kept its tensor instead: its statistics are computed.
  const TensorRef* stats_of = nullptr;
  bool compute = false;     // metrics over both sides
  bool stats_only = false;  // counts differ: each side's statistics alone
  uint64_t scalars = 0;
  DType target = DType::Unknown;
  AllcloseTolerance tolerance;
};

bool streams_in_place(const TensorRef& t) { return !t.fortran_order && !needs_layout_conversion(t); }

uint64_t scalar_count(const TensorRef& t) { return t.elements() * scalars_per_element(t.dtype); }

// Reads scalars [begin, end) of `ref` chunk by chunk and hands each chunk to `use`.
template <typename T, typename Use>
bool stream_range(const TensorRef& ref, uint64_t begin, uint64_t end, std::vector<T>& buffer, std::string* error,
                  Use use) {
  auto stream = TensorStream::open(ref, error);
  if (!stream || !stream->seek(begin, error)) return false;
  for (uint64_t at = begin; at < end;) {
    const uint64_t want = std::min(kChunk, end - at);
    buffer.resize(want);
    int64_t got = stream->read(buffer.data(), want, error);
    if (got <= 0) {
      if (got == 0) *error = "tensor ended early";
      return false;
    }
    use(buffer.data(), static_cast<uint64_t>(got));
    at += static_cast<uint64_t>(got);
  }
  return true;
}

class Worker {
 public:
  void run(const Task& task, const RowSpec& spec, const Plan& plan, Partial& out) {
    std::string error;
    if (plan.stats_of) {
      out.tensor_stats = stats_of_tensor(*plan.stats_of, &error);
      out.error = error;
      return;
    }
    if (task.whole_tensor) {
      out.golden_alone = side_alone(*spec.golden, plan, &error);
      if (out.golden_alone) out.mine_alone = side_alone(*spec.mine, plan, &error);
      if (!error.empty()) out.error = error;
      return;
    }
    out.pair = std::make_unique<PairAccumulator>(plan.target, plan.tolerance, task.begin);
    auto golden = TensorStream::open(*spec.golden, &error);
    auto mine = golden ? TensorStream::open(*spec.mine, &error) : nullptr;
    std::unique_ptr<TensorStream> referee;
    if (mine && spec.referee) referee = TensorStream::open(*spec.referee, &error);
    if (!golden || !mine || (spec.referee && !referee) || !golden->seek(task.begin, &error) ||
        !mine->seek(task.begin, &error) || (referee && !referee->seek(task.begin, &error))) {
      out.error = error;
      return;
    }
    bool read_ok = true;
    const bool stayed_whole = guard_mapped_reads([&] {
      for (uint64_t at = task.begin; at < task.end;) {
        const uint64_t want = std::min(kChunk, task.end - at);
        StoredValues g{}, m{};
        uint64_t g_count = 0, m_count = 0;
        if (!golden->view(want, &g, &g_count, &error) || !mine->view(want, &m, &m_count, &error)) {
          read_ok = false;
          break;
        }
        if (g_count != want || m_count != want) {
          error = "tensor ended early";
          read_ok = false;
          break;
        }
        if (referee) {
          r_.resize(want);
          if (!read_exact(*referee, r_.data(), want, &error)) {
            error = "referee: " + error;
            read_ok = false;
            break;
          }
          out.golden_vs_referee.add(r_.data(), g, want);
          out.mine_vs_referee.add(r_.data(), m, want);
        }
        out.pair->add(g, m, want, referee ? r_.data() : nullptr);
        at += want;
      }
    });
    if (!stayed_whole)
      out.error = "the file of " + spec.golden->path + " or " + spec.mine->path + " shrank while it was read";
    else if (!read_ok)
      out.error = error;
  }

 private:
  template <typename T>
  static bool read_exact(TensorStream& s, T* out, uint64_t n, std::string* error) {
    uint64_t done = 0;
    while (done < n) {
      int64_t got = s.read(out + done, n - done, error);
      if (got < 0) return false;
      if (got == 0) {
        *error = "tensor ended early";
        return false;
      }
      done += static_cast<uint64_t>(got);
    }
    return true;
  }

  std::unique_ptr<PairAccumulator> side_alone(const TensorRef& ref, const Plan& plan, std::string* error) {
    auto acc = std::make_unique<PairAccumulator>(plan.target, plan.tolerance);
    if (!stream_range(ref, 0, scalar_count(ref), g_, error, [&](const float* v, uint64_t n) { acc->add(v, v, n); }))
      return nullptr;
    return acc;
  }

  // What a dump records of a tensor (RecordedStats): over its finite elements, and its NaN and
  // Inf counts.
  std::optional<RecordedStats> stats_of_tensor(const TensorRef& ref, std::string* error) {
    double min = INFINITY, max = -INFINITY, sum = 0, squares = 0;
    uint64_t finite = 0;
    RecordedStats s;
    const bool read = stream_range(ref, 0, scalar_count(ref), g_, error, [&](const float* v, uint64_t n) {
      for (uint64_t i = 0; i < n; ++i) {
        const double x = v[i];
        if (std::isnan(x)) {
          ++s.nan;
        } else if (std::isinf(x)) {
          ++s.inf;
        } else {
          ++finite;
          min = std::min(min, x);
          max = std::max(max, x);
          sum += x;
          squares += x * x;
        }
      }
    });
    if (!read) return std::nullopt;
    if (finite > 0) {
      s.min = min;
      s.max = max;
      s.mean = sum / static_cast<double>(finite);
      s.l2 = std::sqrt(squares);
    }
    return s;
  }

  std::vector<float> g_;  // one side alone (side_alone, stats_of_tensor)
  std::vector<double> r_;
};

// An output of torch.empty and its relatives on the golden side, or an input reading one: values
// nobody wrote. Only the golden side decides: a target that returns uninitialised memory where
// the golden computed values is a defect to judge.
bool holds_uninitialized_memory(const RowSpec& spec) {
  if (spec.direction == Direction::Input) return spec.golden_reads_uninitialized;
  return is_uninitialized_op(spec.golden_op_type.empty() ? spec.op_key : spec.golden_op_type);
}

Plan plan_row(const RowSpec& spec, const Tolerances& tolerances, Row& row) {
  Plan plan;
  if (holds_uninitialized_memory(spec)) {
    row.reasons.push_back(kUninitializedMemory);
    row.verdict = Verdict::NotJudged;
    return plan;
  }
  if (!spec.match_note.empty()) row.reasons.push_back(spec.match_note);
  if (!spec.pairing_note.empty()) row.reasons.push_back(spec.pairing_note);
  if (!spec.golden || !spec.mine) {
    if (spec.match_note.empty())
      row.reasons.push_back(!spec.golden ? "no golden tensor to compare with" : "no tensor on my side");
    return plan;
  }
  if (spec.golden_recorded || spec.my_recorded) {
    const TensorRef& kept = spec.golden_recorded ? *spec.mine : *spec.golden;
    const bool both = spec.golden_recorded && spec.my_recorded;
    plan.recorded = both || kept.ok();
    if (!both && kept.ok()) plan.stats_of = &kept;
    if (!plan.recorded) row.reasons.push_back(std::string(spec.golden_recorded ? "mine: " : "golden: ") + kept.error);
    return plan;
  }
  const TensorRef& g = *spec.golden;
  const TensorRef& m = *spec.mine;
  if (!g.ok()) row.reasons.push_back("golden: " + g.error);
  if (!m.ok()) row.reasons.push_back("mine: " + m.error);
  if (spec.referee && !spec.referee->ok()) row.reasons.push_back("referee: " + spec.referee->error);
  const bool unreadable = !g.ok() || !m.ok() || (spec.referee && !spec.referee->ok());
  if (unreadable || !spec.match_note.empty()) return plan;

  plan.target = m.logical_dtype();
  const TolerancePreset& preset = tolerances.for_dtype(plan.target);
  plan.tolerance = {preset.atol, preset.rtol};
  if (scalar_count(g) != scalar_count(m)) {
    row.reasons.push_back("data shape doesn't match.");
    plan.stats_only = true;
    return plan;
  }
  if (g.shape != m.shape) row.shape_differs = true;
  if (spec.referee && scalar_count(*spec.referee) != scalar_count(g)) {
    row.reasons.push_back("referee: element count differs from golden");
    return plan;
  }
  plan.compute = true;
  plan.scalars = scalar_count(g);
  return plan;
}

// The coarsest floating type among `types` (by unit roundoff); Float64 when none is floating.
DType coarsest_precision(std::initializer_list<DType> types) {
  DType coarsest = DType::Float64;
  for (DType t : types)
    if (is_floating(t) && ulp_at(t, 1.0) > ulp_at(coarsest, 1.0)) coarsest = t;
  return coarsest;
}

SideStats side_stats(const RecordedStats& r) {
  SideStats s;
  s.max = r.max.value_or(NAN);
  s.min = r.min.value_or(NAN);
  s.mean = r.mean.value_or(NAN);
  s.nan_count = r.nan;
  s.inf_count = r.inf;
  return s;
}

constexpr std::optional<double> RecordedStats::*kRecordedValues[] = {&RecordedStats::min, &RecordedStats::max,
                                                                     &RecordedStats::mean, &RecordedStats::l2};

// A tensor's statistics as far as `recorded` has them (GE records no L2 norm by default, and no
// extreme or mean that is not finite).
RecordedStats as_recorded(RecordedStats computed, const RecordedStats& recorded) {
  for (auto field : kRecordedValues)
    if (!(recorded.*field)) computed.*field = std::nullopt;
  computed.counts_known = recorded.counts_known;
  return computed;
}

// Statistics-only rows: equal hashes are equal tensors; otherwise NaN/Inf counts must
// match and min, max, mean and L2 norm each agree within atol + max_relative_l2 * |golden|,
// widened by how the values were rounded when recorded.
// One side's tensor (Plan::stats_of) is compared through the statistics the other recorded.
void judge_recorded(Row& row, const Tolerances& tolerances, const std::optional<RecordedStats>& of_tensor) {
  RowSpec& spec = row.spec;
  if (of_tensor && spec.golden_recorded)
    spec.my_recorded = as_recorded(*of_tensor, *spec.golden_recorded);
  else if (of_tensor)
    spec.golden_recorded = as_recorded(*of_tensor, *spec.my_recorded);
  const RecordedStats& g = *spec.golden_recorded;
  const RecordedStats& m = *spec.my_recorded;
  row.golden_stats = side_stats(g);
  row.my_stats = side_stats(m);
  row.reasons.push_back(of_tensor ? "compared on statistics (one side recorded statistics only)"
                                  : "compared on recorded statistics (tensors not dumped)");
  const TolerancePreset& preset = tolerances.for_dtype(spec.mine->logical_dtype());
  if (!g.hash.empty() && g.hash == m.hash) {
    row.verdict = Verdict::Pass;
    row.judged_by = preset.name + " statistics (equal hash)";
    return;
  }
  const bool counts = g.counts_known && m.counts_known;
  bool pass = !preset.exact && (!counts || (g.nan == m.nan && g.inf == m.inf));
  bool compared = counts;
  for (auto field : kRecordedValues) {
    const auto& a = g.*field;
    const auto& b = m.*field;
    compared = compared || a || b;
    if (a.has_value() != b.has_value())
      pass = false;
    else if (a && std::fabs(*b - *a) > preset.atol + preset.max_relative_l2 * std::fabs(*a) +
                                           (g.rounding + m.rounding) * std::max(std::fabs(*a), std::fabs(*b)))
      pass = false;
  }
  if (!compared) {
    row.reasons.push_back("no statistic recorded on both sides");
    return;
  }
  row.verdict = pass ? Verdict::Pass : Verdict::Fail;
  row.passed_on_statistics = pass;
  row.judged_by = preset.name + " statistics";
}

void finish_row(Row& row, const Plan& plan, const Tolerances& tolerances, std::vector<Partial*> parts) {
  for (Partial* p : parts) {
    if (!p->error.empty()) {
      row.reasons.push_back(p->error);
      row.verdict = Verdict::NotComparable;
      return;
    }
  }
  if (plan.stats_only) {
    row.golden_stats = parts[0]->golden_alone->golden_stats();
    row.my_stats = parts[0]->mine_alone->golden_stats();
    row.verdict = Verdict::NotComparable;
    return;
  }
  PairAccumulator total(plan.target, plan.tolerance);
  RefereeAccumulator golden_ref, mine_ref;
  for (Partial* p : parts) {
    total.merge(*p->pair);
    golden_ref.merge(p->golden_vs_referee);
    mine_ref.merge(p->mine_vs_referee);
  }
  row.golden_stats = total.golden_stats();
  row.my_stats = total.my_stats();
  const bool g_special = total.has_nan_or_inf_golden(), m_special = total.has_nan_or_inf_mine();
  if (g_special) row.reasons.push_back("golden_data includes NAN or inf.");
  if (m_special) row.reasons.push_back("my_data includes NAN or inf.");
  PairMetrics metrics = total.metrics();
  std::optional<TruthErrors> truth;
  if (row.spec.referee) {
    truth = TruthErrors{golden_ref.rmse(), mine_ref.rmse(), std::max(golden_ref.truth_rms(), row.spec.input_scale),
                        golden_ref.count(),
                        coarsest_precision({row.spec.precision, row.spec.golden->logical_dtype(), plan.target})};
    row.referee_rmse_golden = truth->golden_rmse;
    row.referee_rmse_mine = truth->mine_rmse;
  }
  const TensorRef& golden = *row.spec.golden;
  for (const NonFiniteDisagreement& d : metrics.non_finite) {
    const std::string text = non_finite_text(d, plan.scalars, golden.shape, scalars_per_element(golden.dtype));
    row.reasons.push_back(text);
    if (d.target_wrong()) row.non_finite += (row.non_finite.empty() ? "" : "; ") + text;
  }
  const Judgement j = judge(tolerances, plan.target, metrics, {g_special, m_special}, truth);
  row.verdict = j.pass ? Verdict::Pass : Verdict::Fail;
  row.judged_by = j.rule;
  row.truth_bound = j.truth_bound;
  row.metrics = metrics;
  row.metrics_valid = !(g_special || m_special);
}

}  // namespace

std::vector<Row> evaluate_rows(std::vector<RowSpec> specs, const Tolerances& tolerances, int threads) {
  std::vector<Row> rows(specs.size());
  std::vector<Plan> plans(specs.size());
  std::vector<Task> tasks;
  for (size_t i = 0; i < specs.size(); ++i) {
    rows[i].spec = std::move(specs[i]);
    plans[i] = plan_row(rows[i].spec, tolerances, rows[i]);
    const Plan& plan = plans[i];
    if (plan.stats_only || plan.stats_of) {
      tasks.push_back({i, 0, 0, true});
    } else if (plan.compute) {
      const RowSpec& s = rows[i].spec;
      const bool splittable =
          streams_in_place(*s.golden) && streams_in_place(*s.mine) && (!s.referee || streams_in_place(*s.referee));
      const uint64_t step = splittable ? kSplit : std::max<uint64_t>(plan.scalars, 1);
      for (uint64_t b = 0; b < plan.scalars || b == 0; b += step)
        tasks.push_back({i, b, std::min(plan.scalars, b + step), false});
    }
  }

  std::vector<Partial> partials(tasks.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    Worker worker;
    for (size_t t; (t = next.fetch_add(1)) < tasks.size();)
      worker.run(tasks[t], rows[tasks[t].row].spec, plans[tasks[t].row], partials[t]);
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t count = std::min<size_t>(threads > 0 ? threads : cores, std::max<size_t>(tasks.size(), 1));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < count; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  std::vector<std::vector<Partial*>> by_row(rows.size());
  for (size_t t = 0; t < tasks.size(); ++t) by_row[tasks[t].row].push_back(&partials[t]);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (plans[i].recorded) {
      const Partial* computed = by_row[i].empty() ? nullptr : by_row[i].front();
      if (computed && !computed->error.empty()) {
        rows[i].reasons.push_back(computed->error);
        rows[i].verdict = Verdict::NotComparable;
        continue;
      }
      judge_recorded(rows[i], tolerances, computed ? computed->tensor_stats : std::nullopt);
      continue;
    }
    if (by_row[i].empty()) {
      if (rows[i].verdict != Verdict::NotJudged) rows[i].verdict = Verdict::NotComparable;
      continue;
    }
    finish_row(rows[i], plans[i], tolerances, by_row[i]);
  }
  return rows;
}

}  // namespace diagnose::compare
