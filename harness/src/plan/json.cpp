#include "json.hpp"

#include <fmt/format.h>

#include <cmath>

namespace wanlab::harness::detail {
namespace {

constexpr std::size_t kOneLineWidth = 100;

void newline(std::string& out, int indent) {
  out += '\n';
  out.append(static_cast<std::size_t>(indent), ' ');
}

}  // namespace

std::string json_quote(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    switch (c) {
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\r': quoted += "\\r"; break;
      case '\t': quoted += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          quoted += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          quoted += c;
        }
    }
  }
  return quoted + "\"";
}

Json& Json::set(std::string key, Json value) {
  keys_.push_back(std::move(key));
  children_.push_back(std::move(value));
  return children_.back();
}

Json& Json::push(Json value) {
  children_.push_back(std::move(value));
  return children_.back();
}

std::string Json::dump() const {
  std::string out;
  write(out, 0, false);
  return out + "\n";
}

std::string Json::dump_compact() const {
  std::string out;
  write(out, 0, true);
  return out;
}

void Json::write_scalar(std::string& out) const {
  switch (type_) {
    case Type::null: out += "null"; break;
    case Type::boolean: out += flag_ ? "true" : "false"; break;
    case Type::integer: out += std::to_string(integer_); break;
    case Type::number:
      // JSON has no inf or nan.
      out += std::isfinite(number_) ? fmt::format("{}", number_) : "null";
      break;
    case Type::string: out += json_quote(text_); break;
    default: break;
  }
}

bool Json::fits_one_line() const {
  std::size_t width = 0;
  for (std::size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].is_container()) return false;
    std::string scalar;
    children_[i].write_scalar(scalar);
    width += scalar.size() + 2 + (type_ == Type::object ? keys_[i].size() + 4 : 0);
  }
  return width <= kOneLineWidth;
}

void Json::write(std::string& out, int indent, bool compact) const {
  if (!is_container()) {
    write_scalar(out);
    return;
  }
  bool object = type_ == Type::object;
  out += object ? '{' : '[';
  bool one_line = compact || fits_one_line();
  for (std::size_t i = 0; i < children_.size(); ++i) {
    if (i > 0) out += one_line && !compact ? ", " : ",";
    if (!one_line) newline(out, indent + 2);
    if (object) out += json_quote(keys_[i]) + (compact ? ":" : ": ");
    children_[i].write(out, indent + 2, compact);
  }
  if (!one_line && !children_.empty()) newline(out, indent);
  out += object ? '}' : ']';
}

}  // namespace wanlab::harness::detail
