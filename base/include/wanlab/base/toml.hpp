// The TOML reader skeleton every file reader of wanlab shares (scenarios,
// experiments, state.toml, changes.toml, releaser.toml): toml++ underneath,
// every error one line "PATH:LINE:COLUMN: message", an unknown key named with
// the known one it is closest to ("did you mean"). A reader derives from
// TomlReader and overrides raise() to throw its own error type.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wanlab::base {

/// "a table", "500", "\"fast\"": how a value of the wrong type is shown.
std::string describe_value(const toml::node& node);

/// A parser's message on one line, as every error here is: newlines become
/// spaces, other control characters (toml++ shows the bytes it stopped at as
/// they are) \xNN as quoted() shows them.
std::string one_line(std::string_view text);

/// "file:line:column" of a region: in its own file (a value moved in from
/// another document, as `wanlab whatif` does, keeps its position there), else
/// in `path`; a node made in memory has no position: `path` alone.
std::string source_position(const toml::source_region& region, const std::string& path);

class TomlReader {
 public:
  explicit TomlReader(std::string path) : path_(std::move(path)) {}
  virtual ~TomlReader() = default;
  TomlReader(const TomlReader&) = default;
  TomlReader& operator=(const TomlReader&) = default;

  const std::string& path() const { return path_; }

  /// "PATH:LINE:COLUMN" of where `region` begins (source_position).
  std::string where(const toml::source_region& region) const;
  /// raise("PATH:LINE:COLUMN: message").
  [[noreturn]] void fail(const toml::source_region& region, std::string_view message) const;
  /// raise("PATH:LINE:COLUMN: field: message"), at `node`.
  [[noreturn]] void fail(const toml::node& node, std::string_view field, std::string_view message) const;
  /// raise("PATH:1:1: message"): for what is missing from the whole file.
  [[noreturn]] void fail_at_start(std::string_view message) const;

  /// The document; a syntax error fails at its position.
  toml::table parse_toml(std::string_view text) const;
  /// Fails on the first key of `table` in file order that is neither in
  /// `known` nor in `more_known`: "unknown key "dealy" in [[link]]; did you
  /// mean "delay"?".
  void check_known_keys(const toml::table& table, std::span<const std::string_view> known, std::string_view table_label,
                        std::span<const std::string_view> more_known = {}) const;
  /// parent[key] if it is there, and must then be a table ([key]).
  const toml::table* optional_table(const toml::table& parent, std::string_view key) const;
  /// parent[key]'s entries ([[key]]); none if absent; anything else fails.
  std::vector<const toml::table*> array_of_tables(const toml::table& parent, std::string_view key) const;
  /// The string at `node`, else "field: expected EXPECTED, got ...".
  const std::string& expect_string(const toml::node& node, std::string_view field, std::string_view expected) const;
  /// A file's name at `node`: a string, not empty, without control characters
  /// (a NUL byte would cut the name the system opens: "a\u0000b" opened "a").
  const std::string& expect_file_name(const toml::node& node, std::string_view field, std::string_view expected) const;

  /// A string value through `parse` (which throws std::invalid_argument, e.g.
  /// emulator::units::parse_rate), its message prefixed with the field.
  template <typename Parse>
  auto parse_string(const toml::node& node, std::string_view field, std::string_view expected, Parse parse) const {
    const std::string& text = expect_string(node, field, expected);
    try {
      return parse(text);
    } catch (const std::invalid_argument& error) {
      fail(node, field, error.what());
    }
  }

  /// Whether key `a` comes before `b` in the file.
  static bool comes_before(const toml::key& a, const toml::key& b);

 protected:
  /// Throws `message` as the reader's error; std::runtime_error by default.
  [[noreturn]] virtual void raise(const std::string& message) const;

 private:
  [[noreturn]] void throw_error(const std::string& message) const;

  std::string path_;
};

}  // namespace wanlab::base
