// `diagnose compare`: the comparison core on the command line, with msit's flags.
#pragma once

namespace diagnose {

// argv[0] is "compare". Returns the process exit code (0 pass, 1 fail, 2 usage, 3 unreadable).
int compare_command(int argc, char** argv);

}  // namespace diagnose
