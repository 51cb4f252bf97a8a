// A small argv parser shared by the subcommands: `--name value`,
// `--name=value`, boolean `--flag`, positionals, and everything after `--`.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"

namespace wanlab::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Options {
 public:
  // `valued` options take a value, `flags` do not; anything else is an error.
  Options(Args args, std::set<std::string> valued, std::set<std::string> flags);

  std::optional<std::string> get(const std::string& name) const;
  bool flag(const std::string& name) const { return flags_set_.count(name) != 0; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::vector<std::string>& rest() const { return rest_; }  // after "--"
  // Valued options in the order given (for `set`).
  const std::vector<std::pair<std::string, std::string>>& ordered() const { return ordered_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::pair<std::string, std::string>> ordered_;
  std::set<std::string> flags_set_;
  std::vector<std::string> positionals_;
  std::vector<std::string> rest_;
};

}  // namespace wanlab::cli
