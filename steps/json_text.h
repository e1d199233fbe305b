// Reading files other programs wrote (the plugin's status.json, progress.jsonl): a field may be
// missing or of any type, and reading it must never throw (compare/json_field.h).
#pragma once

#include "steps/layer.h"

#include "compare/json_field.h"

namespace diagnose {

using compare::string_at;

}  // namespace diagnose
