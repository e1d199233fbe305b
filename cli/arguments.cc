#include "cli/arguments.h"

#include "orchestrator/engine/verdict.h"

namespace diagnose {

namespace {

template <typename Parse>
int parse_with(CLI::App& app, Parse parse) {
  try {
    parse();
    return kArgumentsParsed;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
}

}  // namespace

int parse_arguments(CLI::App& app, int argc, char** argv) {
  return parse_with(app, [&] { app.parse(argc, argv); });
}

int parse_arguments(CLI::App& app, std::vector<std::string> args) {
  return parse_with(app, [&] { app.parse(args); });
}

}  // namespace diagnose
