#include "bench_options.hpp"

#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/process.hpp"

namespace wanlab::bench {

OptionSpec valued(std::string name, std::string metavar, std::string help) {
  return {std::move(name), OptionSpec::Takes::value, std::move(metavar), std::move(help)};
}

OptionSpec flag(std::string name, std::string help) {
  return {std::move(name), OptionSpec::Takes::nothing, "", std::move(help)};
}

std::string usage_line(const Program& program) {
  std::string line = program.name;
  for (const auto& option : program.options) line += " " + base::usage_of(option);
  if (!program.operands.empty()) line += " " + program.operands;
  return line;
}

std::string help_text(const Program& program) {
  std::string text = fmt::format("usage: {}\n\n{}\n", usage_line(program), program.summary);
  if (!program.options.empty()) text += "\noptions:\n" + base::options_help(program.options);
  return text;
}

namespace {

int run_parsed(const Program& program, const std::function<int(const Options&)>& run, int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const Options options(args, program.options);
  if (program.operands.empty() && !options.positionals().empty())
    throw UsageError("unexpected argument " + base::quoted(options.positionals().front()));
  if (!options.rest().empty()) throw UsageError("unexpected arguments after \"--\"");
  return run(options);
}

}  // namespace

int main_of(const Program& program, const std::function<int(const Options&)>& run, int argc, char** argv) {
  const base::InterruptGuard interrupts;
  try {
    return run_parsed(program, run, argc, argv);
  } catch (const base::HelpRequested&) {
    fmt::print("{}", help_text(program));
    return 0;
  } catch (const UsageError& error) {
    fmt::print(stderr, "{}: {}\nusage: {}\n", program.name, error.what(), usage_line(program));
    return 2;
  } catch (const std::exception& error) {
    // A signal may surface as whatever the call it interrupted threw.
    if (const int sig = base::interrupted_by()) {
      fmt::print(stderr, "{}: {}\n", program.name, base::Interrupted(sig).what());
      return 128 + sig;
    }
    fmt::print(stderr, "{}: {}\n", program.name, error.what());
    return 1;
  }
}

std::string wanlab_option(const Options& options) {
  namespace fs = std::filesystem;
  const std::string beside = (fs::path(base::self_exe()).parent_path().parent_path() / "cli" / "wanlab").string();
  const std::string path = fs::absolute(options.get("wanlab").value_or(beside)).string();
  if (::access(path.c_str(), X_OK) != 0)
    throw UsageError("--wanlab: " + base::quoted(path) + " is not an executable (build the wanlab target)");
  return path;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace wanlab::bench
