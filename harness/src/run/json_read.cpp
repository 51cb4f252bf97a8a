#include "json_read.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace wanlab::harness::run_detail {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parse_value(0);
    skip_space();
    if (at_ < text_.size()) fail("unexpected text after the document");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    int line = 1, column = 1;
    for (std::size_t i = 0; i < at_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw JsonError(fmt::format("line {}, column {}: {}", line, column, what));
  }

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) ++at_;
  }

  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }

  void expect(char c, const char* context) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}' {}", c, context));
    ++at_;
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxDepth) fail("nested more than 64 deep");
    skip_space();
    const char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return JsonValue(parse_string());
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return JsonValue(parse_number());
    if (literal("true")) return JsonValue(true);
    if (literal("false")) return JsonValue(false);
    if (literal("null")) return JsonValue(nullptr);
    if (at_ >= text_.size()) fail("unexpected end of the document");
    fail(fmt::format("unexpected character '{}'", c));
  }

  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  JsonValue parse_object(int depth) {
    ++at_;  // {
    JsonValue::Object members;
    skip_space();
    if (peek() == '}') {
      ++at_;
      return JsonValue(std::move(members));
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a member name in quotes");
      std::string key = parse_string();
      expect(':', "after a member name");
      members.emplace_back(std::move(key), parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect('}', "or ',' in an object");
      return JsonValue(std::move(members));
    }
  }

  JsonValue parse_array(int depth) {
    ++at_;  // [
    JsonValue::Array items;
    skip_space();
    if (peek() == ']') {
      ++at_;
      return JsonValue(std::move(items));
    }
    for (;;) {
      items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect(']', "or ',' in an array");
      return JsonValue(std::move(items));
    }
  }

  double parse_number() {
    const std::size_t start = at_;
    if (peek() == '-') ++at_;
    while (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.' ||
                                  text_[at_] == 'e' || text_[at_] == 'E' || text_[at_] == '+' || text_[at_] == '-'))
      ++at_;
    double value = 0;
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + at_, value);
    if (ec != std::errc() || end != text_.data() + at_) {
      at_ = start;
      fail("malformed number");
    }
    return value;
  }

  unsigned hex4() {
    if (at_ + 4 > text_.size()) fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9') value |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return value;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  std::string parse_string() {
    ++at_;  // "
    std::string out;
    for (;;) {
      if (at_ >= text_.size()) fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= text_.size()) fail("unterminated escape");
      const char e = text_[at_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xd800 && code < 0xdc00 && text_.substr(at_, 2) == "\\u") {
            at_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low >= 0xe000) fail("unpaired surrogate in \\u escape");
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, code);
          break;
        }
        default: fail(fmt::format("unknown escape \\{}", e));
      }
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  const Object* members = object();
  if (!members) return nullptr;
  for (const auto& [name, value] : *members)
    if (name == key) return &value;
  return nullptr;
}

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

}  // namespace wanlab::harness::run_detail
