// Reading the TOML files wanlab writes for itself (state.toml, changes.toml)
// as strictly as the files people write: every key known, every value of its
// type and range, and every error one line, "PATH:LINE:COLUMN: field: ...".
// These files live under the run directory, where anything may have been
// changed since we wrote them; a bad one must give a message, not a crash.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include <toml++/toml.h>

namespace wanlab::emulator::detail {

class StrictToml {
 public:
  /// Reads `path` (a regular file, not through a symbolic link, at most
  /// `max_bytes`) and parses it. Throws std::runtime_error.
  StrictToml(std::string path, std::size_t max_bytes);

  const toml::table& root() const { return root_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const toml::node& node, std::string_view field, std::string_view message) const;
  /// Fails on the first key of `table` that is not in `known`.
  void only_keys(const toml::table& table, std::span<const std::string_view> known, std::string_view where) const;

  const toml::node& need(const toml::table& table, std::string_view key, std::string_view field) const;
  std::string string(const toml::table& table, std::string_view key, std::string_view field) const;
  std::int64_t integer(const toml::table& table, std::string_view key, std::string_view field, std::int64_t min,
                       std::int64_t max) const;
  bool boolean(const toml::table& table, std::string_view key, std::string_view field) const;
  const toml::array& array(const toml::table& table, std::string_view key, std::string_view field) const;
  const toml::table& table(const toml::node& node, std::string_view field) const;
  /// One table of an array of tables, holding only `known` keys.
  const toml::table& entry(const toml::node& node, std::string_view field, std::span<const std::string_view> known) const;
  std::string string(const toml::node& node, std::string_view field) const;

 private:
  std::string path_;
  toml::table root_;
};

}  // namespace wanlab::emulator::detail
