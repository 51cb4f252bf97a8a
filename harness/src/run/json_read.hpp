// A small JSON reader for results.json files (`wanlab compare`): a value tree
// with errors that say where ("line 3, column 7: expected ',' or '}'").
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wanlab::harness::run_detail {

class JsonValue {
 public:
  using Array = std::vector<JsonValue>;
  using Object = std::vector<std::pair<std::string, JsonValue>>;  // in file order

  JsonValue() = default;
  explicit JsonValue(std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value) : value_(std::move(value)) {}

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(value_); }
  const double* number() const { return std::get_if<double>(&value_); }
  const bool* boolean() const { return std::get_if<bool>(&value_); }
  const std::string* string() const { return std::get_if<std::string>(&value_); }
  const Array* array() const { return std::get_if<Array>(&value_); }
  const Object* object() const { return std::get_if<Object>(&value_); }
  // A member of an object (the first of that name), or nullptr.
  const JsonValue* find(std::string_view key) const;

 private:
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value_;
};

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses one JSON document (RFC 8259; nesting up to 64 deep). Throws
// JsonError "line L, column C: what".
JsonValue parse_json(std::string_view text);

}  // namespace wanlab::harness::run_detail
