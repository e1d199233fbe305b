// The verdict as a person takes it in at a glance, in the terminal and at the top of
// report.html: a few short lines that say what is wrong, where in the user's code, how sure,
// what to do, and where to look further.
//
//   ✗ Graph structure / fusion defect: GeluFusionPass
//     where      module L.model.mlp  model.py:24
//                  h = self.act(self.fc(x))
//     how sure   12 of 40 judged rows fail; rmse to float64 2.7e-05, 355x eager's 7.6e-08
//     what to do Turn the named rule off (fusion_switch_file) ...
//     look       runs/…/report.html
//                diagnose rerun runs/… graph_compare
//
// Long lists (fused nodes, unmatched records, the other places of the code) stay in the
// report, counted here. No line is wider than the width, except a quoted code line, a path
// and a command, which are never broken.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/report/run_report.h"

namespace diagnose {

struct TerminalStyle {
  size_t width = 80;
  bool colour = false;
};

// The style for the stream on file descriptor `fd`: COLUMNS, else the terminal's width, else 80;
// colour when it is a terminal and NO_COLOR is unset.
TerminalStyle terminal_style(int fd);

// One line of the block: a label ("where", "how sure", ...; empty on the first line and on
// continuations) and its text. Verbatim lines (code, paths, commands) are never wrapped.
struct VerdictLine {
  std::string label, text;
  bool verbatim = false;
  size_t most_lines = 3;  // wrapped in the terminal to at most this many, the last ending in "…"
};

// The block's lines, unwrapped: what the terminal prints and report.html's verdict box leads with.
// `report_paths` are the files written (report.html is named when among them).
std::vector<VerdictLine> verdict_lines(const RunReport& report, const std::vector<std::string>& report_paths);

// The block wrapped to the style's width, coloured when the style says so.
std::string terminal_verdict(const RunReport& report, const std::vector<std::string>& report_paths,
                             const TerminalStyle& style);

// The verdict's summary cut to its first sentence, the deciding step's first clause in it:
// "Graph structure / fusion defect: GeluFusionPass (step 'fusion': culprits found ...)".
std::string verdict_sentence(const Verdict& verdict);

// Columns of `text` on a terminal: its UTF-8 code points, escape sequences not counted.
size_t display_width(const std::string& text);
// `text` cut to `width` columns, ending in "…" when cut.
std::string shortened(const std::string& text, size_t width);

}  // namespace diagnose
