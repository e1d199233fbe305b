// junit.xml: one test case per step, for CI systems (failure, error or skipped).
#pragma once

#include <string>

#include "orchestrator/report/run_report.h"

namespace diagnose {

std::string report_junit(const RunReport& report);

}  // namespace diagnose
