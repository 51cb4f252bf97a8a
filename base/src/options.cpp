#include "wanlab/base/options.hpp"

#include <fmt/core.h>

namespace wanlab::base {

std::string usage_of(const OptionSpec& option) {
  switch (option.takes) {
    case OptionSpec::Takes::nothing: return "[--" + option.name + "]";
    case OptionSpec::Takes::value: return "[--" + option.name + " " + option.metavar + "]";
    case OptionSpec::Takes::optional_value: return "[--" + option.name + "[=" + option.metavar + "]]";
  }
  return "";
}

std::string options_help(const OptionSpecs& options) {
  std::string text;
  for (const auto& option : options) {
    std::string shown = "--" + option.name;
    if (option.takes == OptionSpec::Takes::value) shown += " " + option.metavar;
    if (option.takes == OptionSpec::Takes::optional_value) shown += "[=" + option.metavar + "]";
    // A long option and its value on a line of their own, the help below.
    text += shown.size() < 34 ? fmt::format("  {:<34} {}\n", shown, option.help)
                              : fmt::format("  {}\n  {:<34} {}\n", shown, "", option.help);
  }
  return text;
}

namespace {

const OptionSpec* find_spec(const OptionSpecs& specs, const std::string& name) {
  for (const auto& spec : specs)
    if (spec.name == name) return &spec;
  return nullptr;
}

}  // namespace

Options::Options(std::span<const std::string> args, const OptionSpecs& specs) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      rest_.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return;
    }
    if (arg == "-h" || arg == "--help") throw HelpRequested();
    if (!arg.starts_with("-") || arg == "-") {
      positionals_.push_back(arg);
      continue;
    }
    if (!arg.starts_with("--")) throw UsageError("unknown option " + quoted(arg));
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* spec = find_spec(specs, name);
    if (!spec) throw UsageError("unknown option " + quoted("--" + name));
    if (spec->takes == OptionSpec::Takes::value && !inline_value) {
      if (i + 1 >= args.size()) throw UsageError("--" + name + " needs a value");
      inline_value = args[++i];
    }
    take(*spec, inline_value);
  }
}

void Options::take(const OptionSpec& spec, const std::optional<std::string>& value) {
  if (spec.takes == OptionSpec::Takes::nothing && value) throw UsageError("--" + spec.name + " takes no value");
  if (spec.takes != OptionSpec::Takes::value) flags_set_.insert(spec.name);
  if (value) {
    values_[spec.name] = *value;
    ordered_.emplace_back(spec.name, *value);
  }
}

std::optional<std::string> Options::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> Options::decimal(const std::string& name, double min, double max) const {
  const auto text = get(name);
  if (!text) return std::nullopt;
  try {
    return parse_decimal(*text, min, max);
  } catch (const ParseError& error) {
    throw UsageError("--" + name + ": " + error.what());
  }
}

std::optional<std::string> output_file_option(const Options& options, const std::string& name) {
  const auto path = options.get(name);
  if (!path) return std::nullopt;
  if (path->empty()) throw UsageError("--" + name + ": expected a file");
  try {
    check_output_file(*path);
  } catch (const FileError& error) {
    throw UsageError("--" + name + ": " + error.what());
  }
  return path;
}

std::optional<OutputDir> output_dir_option(const Options& options, const std::string& name,
                                           const std::function<void(const OutputDir&)>& check) {
  const auto path = options.get(name);
  if (!path) return std::nullopt;
  if (path->empty()) throw UsageError("--" + name + ": expected a directory");
  try {
    auto dir = OutputDir::open(*path);
    if (check) check(dir);
    return dir;
  } catch (const FileError& error) {
    throw UsageError("--" + name + ": " + error.what());
  }
}

}  // namespace wanlab::base
