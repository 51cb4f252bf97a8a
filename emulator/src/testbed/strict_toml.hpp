// Reading the TOML files wanlab writes for itself (state.toml, changes.toml)
// as strictly as the files people write: every key known, every value of its
// type and range, and every error one line, "PATH:LINE:COLUMN: field: ...",
// through the reader skeleton of base/toml.hpp that the scenario and
// experiment parsers use.
// These files live under the run directory, where anything may have been
// changed since we wrote them; a bad one must give a message, not a crash.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "wanlab/base/toml.hpp"

namespace wanlab::emulator::detail {

class StrictToml : public base::TomlReader {
 public:
  /// Reads `path` (a regular file, not through a symbolic link, at most
  /// `max_bytes`) and parses it. Throws std::runtime_error.
  StrictToml(std::string path, std::size_t max_bytes);

  const toml::table& root() const { return root_; }

  /// Fails on the first key of `table` that is not in `known` ("unknown key
  /// "x" in WHERE; did you mean ...").
  void only_keys(const toml::table& table, std::span<const std::string_view> known, std::string_view where) const {
    check_known_keys(table, known, where);
  }

  const toml::node& need(const toml::table& table, std::string_view key, std::string_view field) const;
  std::string string(const toml::table& table, std::string_view key, std::string_view field) const;
  std::int64_t integer(const toml::table& table, std::string_view key, std::string_view field, std::int64_t min,
                       std::int64_t max) const;
  bool boolean(const toml::table& table, std::string_view key, std::string_view field) const;
  const toml::array& array(const toml::table& table, std::string_view key, std::string_view field) const;
  const toml::table& table(const toml::node& node, std::string_view field) const;
  /// One table of an array of tables, holding only `known` keys.
  const toml::table& entry(const toml::node& node, std::string_view field,
                           std::span<const std::string_view> known) const;
  std::string string(const toml::node& node, std::string_view field) const;

 private:
  toml::table root_;
};

}  // namespace wanlab::emulator::detail
