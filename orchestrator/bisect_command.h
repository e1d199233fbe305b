// `diagnose bisect`: the fusion-rule bisection on any command, outside a workflow.
#pragma once

namespace diagnose {

int bisect_command(int argc, char** argv);

}  // namespace diagnose
