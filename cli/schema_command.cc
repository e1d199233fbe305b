#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "orchestrator/workflow/workflow_schema.h"

namespace diagnose {

int schema_command(int argc, char** argv) {
  CLI::App app{"Print the JSON Schema of the workflow format.", "diagnose schema"};
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;
  std::cout << workflow_json_schema().dump(2) << "\n";
  return 0;
}

}  // namespace diagnose
