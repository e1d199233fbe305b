// Parsing a command's arguments with CLI11, the same way for every command.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace diagnose {

// What parse_arguments returns when the command goes on; otherwise its exit code
// (0 after --help, kExitUsage after a usage error, which CLI11 has printed).
constexpr int kArgumentsParsed = -1;

int parse_arguments(CLI::App& app, int argc, char** argv);
// `args` in CLI11's reversed order (the last argument first).
int parse_arguments(CLI::App& app, std::vector<std::string> args);

}  // namespace diagnose
