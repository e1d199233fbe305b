// report.md: the verdict, then one section per step, for people.
#pragma once

#include <string>

#include "orchestrator/report/run_report.h"

namespace diagnose {

std::string report_markdown(const RunReport& report);

}  // namespace diagnose
