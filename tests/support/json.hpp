// Reading what wanlab and the examples print as JSON, with nlohmann: one
// document, or one JSON object per line among lines of text.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace wanlab::test {

// The JSON in `text`: the whole text if it is one document, else every line
// that is an object or an array, in order.
inline std::vector<nlohmann::json> json_documents(const std::string& text) {
  nlohmann::json whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded()) return {std::move(whole)};
  std::vector<nlohmann::json> documents;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json document = nlohmann::json::parse(line, nullptr, false);
    if (!document.is_discarded() && document.is_structured()) documents.push_back(std::move(document));
  }
  return documents;
}

// Whether `object` has every key of `fields` with its value (a null value
// asks for the key only).
inline bool json_has_fields(const nlohmann::json& object, const nlohmann::json& fields) {
  for (const auto& [key, value] : fields.items()) {
    if (!object.contains(key)) return false;
    if (!value.is_null() && object[key] != value) return false;
  }
  return true;
}

// The first object, at any depth, that has `fields`; null if none.
inline nlohmann::json json_object_with(const nlohmann::json& document, const nlohmann::json& fields) {
  if (document.is_object() && json_has_fields(document, fields)) return document;
  if (document.is_structured())
    for (const auto& child : document)
      if (auto found = json_object_with(child, fields); !found.is_null()) return found;
  return nullptr;
}

// The first object in any JSON document printed in `text` that has `fields`,
// e.g. {{"from", "east"}, {"to", "west"}}; null if none.
inline nlohmann::json json_object_with(const std::string& text, const nlohmann::json& fields) {
  for (const auto& document : json_documents(text))
    if (auto found = json_object_with(document, fields); !found.is_null()) return found;
  return nullptr;
}

// The number at `key` of `object`; -1 if `object` is no object or has no
// such number (every figure the tests read is at least 0).
inline double json_number(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return -1;
  const auto at = object.find(key);
  return at != object.end() && at->is_number() ? at->get<double>() : -1;
}

// The string at `key` of `object`; "" if there is none.
inline std::string json_string(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return "";
  const auto at = object.find(key);
  return at != object.end() && at->is_string() ? at->get<std::string>() : "";
}

}  // namespace wanlab::test
