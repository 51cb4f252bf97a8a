// wanlab: one command, thin subcommands over the emulator, transport and
// harness libraries. The subcommands and their options are in commands.cpp.
#include <fmt/core.h>

#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"
#include "options.hpp"

namespace {

namespace cli = wanlab::cli;

void print_usage() {
  fmt::print("usage: wanlab COMMAND [ARGS]   (wanlab COMMAND --help: what each option takes)\n\ncommands:\n");
  for (const auto& command : cli::commands())
    if (!command.internal) fmt::print("  {}\n      {}\n", cli::usage_line(command), command.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (const cli::Command* command = cli::find_command(argv[1]))
    return cli::run_command(*command, std::vector<std::string>(argv + 2, argv + argc));
  fmt::print(stderr, "wanlab: unknown command \"{}\"\n", argv[1]);
  print_usage();
  return 2;
}
