// report.json: the machine-readable result of a run (format "diagnose-report",
// version 1; docs/report-schema.json is its JSON Schema), the RunReport written out.
#pragma once

#include <nlohmann/json.hpp>

#include "orchestrator/engine/verdict.h"

namespace diagnose {

constexpr int kReportVersion = 1;

// Time as ISO 8601 UTC ("2026-11-29T19:40:00Z"); null for 0.
nlohmann::json iso_time(double seconds_since_epoch);

// report.json's "verdict" object (what `--json` prints).
nlohmann::json verdict_json(const Verdict& v);

}  // namespace diagnose
