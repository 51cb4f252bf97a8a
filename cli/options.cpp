#include "options.hpp"

namespace wanlab::cli {

Options::Options(Args args, std::set<std::string> valued, std::set<std::string> flags) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      rest_.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return;
    }
    if (!arg.starts_with("--") || arg.size() == 2) {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (flags.count(name)) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      flags_set_.insert(name);
    } else if (valued.count(name)) {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError("--" + name + " needs a value");
        inline_value = args[++i];
      }
      values_[name] = *inline_value;
      ordered_.emplace_back(name, *inline_value);
    } else {
      throw UsageError("unknown option --" + name);
    }
  }
}

std::optional<std::string> Options::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

}  // namespace wanlab::cli
