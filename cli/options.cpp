#include "options.hpp"

#include "wanlab/emulator/names.hpp"

namespace wanlab::cli {

std::string usage_of(const OptionSpec& option) {
  switch (option.takes) {
    case OptionSpec::Takes::nothing: return "[--" + option.name + "]";
    case OptionSpec::Takes::value: return "[--" + option.name + " " + option.metavar + "]";
    case OptionSpec::Takes::optional_value: return "[--" + option.name + "[=" + option.metavar + "]]";
  }
  return "";
}

namespace {

const OptionSpec* find_spec(const OptionSpecs& specs, const std::string& name) {
  for (const auto& spec : specs)
    if (spec.name == name) return &spec;
  return nullptr;
}

}  // namespace

Options::Options(Args args, const OptionSpecs& specs) {
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
    if (!arg.starts_with("--")) throw UsageError("unknown option " + base::quoted(arg));
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* spec = find_spec(specs, name);
    if (!spec) throw UsageError("unknown option " + base::quoted("--" + name));
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
    return base::parse_decimal(*text, min, max);
  } catch (const base::ParseError& error) {
    throw UsageError("--" + name + ": " + error.what());
  }
}

namespace {

// A valued option through `parse`, whose std::invalid_argument becomes a
// UsageError naming the option.
template <typename Parse>
auto parsed(const Options& options, const std::string& name, Parse parse) -> std::optional<decltype(parse(""))> {
  const auto text = options.get(name);
  if (!text) return std::nullopt;
  try {
    return parse(*text);
  } catch (const std::invalid_argument& error) {
    throw UsageError("--" + name + ": " + error.what());
  }
}

}  // namespace

emulator::VerifyOptions verify_options(const Options& options, const std::string& tolerance, const std::string& slack) {
  emulator::VerifyOptions verify;
  verify.tolerance = parsed(options, tolerance, emulator::parse_verify_tolerance).value_or(verify.tolerance);
  verify.slack_ns = parsed(options, slack, emulator::parse_verify_slack).value_or(verify.slack_ns);
  return verify;
}

std::string checked_testbed_name(const std::string& name, std::string_view where) {
  try {
    emulator::check_testbed_name(name, where);
  } catch (const emulator::InvalidName& error) {
    throw UsageError(error.what());
  }
  return name;
}

emulator::ReleaseChoice release_option(const Options& options) {
  try {
    return emulator::parse_release_choice(options.get("release").value_or("auto"));
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

std::optional<std::string> testbed_option(const Options& options) {
  const auto name = options.get("testbed");
  if (!name) return std::nullopt;
  return checked_testbed_name(*name, "--testbed");
}

std::optional<base::OutputDir> out_dir_option(const Options& options,
                                              const std::function<void(const base::OutputDir&)>& check) {
  const auto path = options.get("out");
  if (!path) return std::nullopt;
  if (path->empty()) throw UsageError("--out: expected a directory");
  try {
    auto dir = base::OutputDir::open(*path);
    if (check) check(dir);
    return dir;
  } catch (const base::FileError& error) {
    throw UsageError(std::string("--out: ") + error.what());
  }
}

std::optional<std::string> out_file_option(const Options& options) {
  const auto path = options.get("out");
  if (!path) return std::nullopt;
  if (path->empty()) throw UsageError("--out: expected a file");
  try {
    base::check_output_file(*path);
  } catch (const base::FileError& error) {
    throw UsageError(std::string("--out: ") + error.what());
  }
  return path;
}

}  // namespace wanlab::cli
