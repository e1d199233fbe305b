// GE's statistics dump (TorchAir's dump_config.dump_data = "stats"): for each op, in the token
// directory where its dump binary would be, GE's dump recorder writes
// {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.csv with a header line and one line per
// dumped tensor (inputs, then outputs, as dump_mode asks):
//   Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,
//   Nan Count,Negative Inf Count,Positive Inf Count
// The statistics columns follow the ones asked for (that is the default set; `Count` moves to
// after Shape and `l2norm` is added for others), so columns are found by name.
// docs/dump-format.md, "GE statistics dump".
#pragma once

#include <string>

#include "compare/ge_dump.h"

namespace diagnose::compare {

// The GeDump of a statistics file's text: stats_only, each tensor with its dtype, shape and
// what GE recorded of it. A malformed file (a missing column, a line cut short, an index twice)
// gives an error naming the line; nothing of it is used.
GeDump parse_ge_stats(const std::string& text, const std::string& path);
GeDump read_ge_stats(const std::string& path);

}  // namespace diagnose::compare
