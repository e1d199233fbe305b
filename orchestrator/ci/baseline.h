// A stored baseline for the CI gate: the final outputs (and op dump) of an accepted model
// version with what produced them.
//
//   DIR/baseline.json   format "diagnose-baseline", version 1: created, source, model_version,
//                       torch_version, backend, mode, switches, machine, and every file with its
//                       size and FNV-1a 64 hash (a changed or damaged baseline is detected)
//   DIR/outputs/        the final outputs (diagnose dump: manifest.jsonl + tensors/)
//   DIR/dump/           the op dump, when the source has one (for gating chosen layers)
//   DIR/status.json     the plugin's record of the run, when the source has one
//
// Saving builds the directory beside DIR and renames it into place, so DIR is either absent,
// the old baseline or the complete new one, also with several savers at once.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace diagnose {

struct Baseline {
  std::string dir;
  nlohmann::json metadata;  // baseline.json
  std::string outputs_dir() const { return dir + "/outputs"; }
  std::string dump_dir() const { return dir + "/dump"; }
  bool has_dump() const;
};

struct BaselineSource {
  std::string path;           // a run directory, a plugin run directory or a dump directory
  std::string run;            // in a run directory: "STEP" or "STEP/RUN"; empty: the first plugin run found
  std::string model_version;  // empty: the source's, else "unknown"
};

// Throws std::runtime_error saying what is wrong; refuses an existing DIR unless `force`.
// Returns the saved baseline.
Baseline save_baseline(const BaselineSource& source, const std::string& dir, bool force);

// Reads and verifies DIR (every file present, sizes and hashes as recorded). Throws
// std::runtime_error naming DIR and the first problem.
Baseline load_baseline(const std::string& dir);

}  // namespace diagnose
