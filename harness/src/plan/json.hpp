// A small JSON document: built as a tree, printed with escaping; members keep
// their insertion order so reports read top-down.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wanlab::harness::detail {

class Json {
 public:
  enum class Type { null, boolean, integer, number, string, array, object };

  Json() = default;
  Json(bool flag) : type_(Type::boolean), flag_(flag) {}  // NOLINT: implicit by design
  Json(int number) : type_(Type::integer), integer_(number) {}
  Json(std::int64_t number) : type_(Type::integer), integer_(number) {}
  Json(std::uint64_t number) : type_(Type::integer), integer_(static_cast<std::int64_t>(number)) {}
  Json(double number) : type_(Type::number), number_(number) {}
  Json(std::string text) : type_(Type::string), text_(std::move(text)) {}
  Json(std::string_view text) : type_(Type::string), text_(text) {}
  Json(const char* text) : type_(Type::string), text_(text) {}

  static Json array() { return Json(Type::array); }
  static Json object() { return Json(Type::object); }

  // Appends a member (objects) or an element (arrays); returns the new child.
  Json& set(std::string key, Json value);
  Json& push(Json value);

  // Containers whose children are all scalars and that fit in a line are
  // printed on one line; others one child per line, indented by two spaces.
  std::string dump() const;
  // Everything on one line.
  std::string dump_compact() const;

 private:
  explicit Json(Type type) : type_(type) {}
  void write(std::string& out, int indent, bool compact) const;
  void write_scalar(std::string& out) const;
  bool is_container() const { return type_ == Type::array || type_ == Type::object; }
  bool fits_one_line() const;

  Type type_ = Type::null;
  bool flag_ = false;
  std::int64_t integer_ = 0;
  double number_ = 0;
  std::string text_;
  std::vector<std::string> keys_;  // objects: parallel to children_
  std::vector<Json> children_;
};

// `text` as a JSON string literal, quotes included.
std::string json_quote(std::string_view text);

}  // namespace wanlab::harness::detail
