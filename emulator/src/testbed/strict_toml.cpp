#include "testbed/strict_toml.hpp"

#include <fmt/format.h>

#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"

namespace wanlab::emulator::detail {

using base::describe_value;

StrictToml::StrictToml(std::string path, std::size_t max_bytes) : TomlReader(std::move(path)) {
  std::string text;
  try {
    text = base::read_regular_file(this->path(), base::ReadRules{max_bytes, false});
  } catch (const base::FileError& error) {
    throw std::runtime_error(error.what());
  }
  root_ = parse_toml(text);
}

const toml::node& StrictToml::need(const toml::table& table, std::string_view key, std::string_view field) const {
  const toml::node* node = table.get(key);
  if (node == nullptr) fail(table, field, "missing key");
  return *node;
}

std::string StrictToml::string(const toml::node& node, std::string_view field) const {
  const auto* text = node.as_string();
  if (text == nullptr) fail(node, field, fmt::format("expected a string, got {}", describe_value(node)));
  return text->get();
}

std::string StrictToml::string(const toml::table& table, std::string_view key, std::string_view field) const {
  return string(need(table, key, field), field);
}

std::int64_t StrictToml::integer(const toml::table& table, std::string_view key, std::string_view field,
                                 std::int64_t min, std::int64_t max) const {
  const toml::node& node = need(table, key, field);
  const auto* number = node.as_integer();
  if (number == nullptr || number->get() < min || number->get() > max)
    fail(node, field, fmt::format("expected an integer from {} to {}, got {}", min, max, describe_value(node)));
  return number->get();
}

bool StrictToml::boolean(const toml::table& table, std::string_view key, std::string_view field) const {
  const toml::node& node = need(table, key, field);
  const auto* flag = node.as_boolean();
  if (flag == nullptr) fail(node, field, fmt::format("expected true or false, got {}", describe_value(node)));
  return flag->get();
}

const toml::array& StrictToml::array(const toml::table& table, std::string_view key, std::string_view field) const {
  const toml::node& node = need(table, key, field);
  const auto* list = node.as_array();
  if (list == nullptr) fail(node, field, fmt::format("expected an array, got {}", describe_value(node)));
  return *list;
}

const toml::table& StrictToml::table(const toml::node& node, std::string_view field) const {
  const auto* table = node.as_table();
  if (table == nullptr) fail(node, field, fmt::format("expected a table, got {}", describe_value(node)));
  return *table;
}

const toml::table& StrictToml::entry(const toml::node& node, std::string_view field,
                                     std::span<const std::string_view> known) const {
  const toml::table& found = table(node, field);
  only_keys(found, known, field);
  return found;
}

}  // namespace wanlab::emulator::detail
