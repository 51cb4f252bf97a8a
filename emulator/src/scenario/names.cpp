#include "wanlab/emulator/names.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "wanlab/base/parse.hpp"

namespace wanlab::emulator {
namespace {

constexpr std::size_t kMaxDcName = 15;

bool is_lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool is_valid_testbed_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxTestbedName && name.front() != '-' &&
         std::all_of(name.begin(), name.end(), [](char c) { return is_lower_or_digit(c) || c == '-'; });
}

void check_testbed_name(std::string_view name, std::string_view where) {
  if (is_valid_testbed_name(name)) return;
  throw InvalidName(fmt::format("{}: testbed name {}: expected {}", where, base::quoted(name), kTestbedNameRule));
}

bool is_valid_dc_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxDcName && name.front() >= 'a' && name.front() <= 'z' &&
         std::all_of(name.begin(), name.end(), is_lower_or_digit);
}

bool is_valid_host_name(std::string_view name) {
  const auto dash = name.rfind('-');
  if (dash == std::string_view::npos) return false;
  const std::string_view index = name.substr(dash + 1);
  return is_valid_dc_name(name.substr(0, dash)) && !index.empty() && index.size() <= 3 &&
         std::all_of(index.begin(), index.end(), is_digit) && (index == "0" || index.front() != '0');
}

bool is_valid_machine_name(std::string_view name) {
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') return false;
  std::size_t label = 0;
  char previous = '.';
  for (char c : name) {
    if (c == '.') {
      if (previous == '-' || previous == '.') return false;  // an empty label, or one ending in '-'
      label = 0;
    } else {
      const bool allowed = is_lower_or_digit(c) || (c >= 'A' && c <= 'Z') || c == '-';
      if (!allowed || (c == '-' && previous == '.') || ++label > 63) return false;
    }
    previous = c;
  }
  return previous != '-';
}

bool is_valid_interface_name(std::string_view name) {
  return !name.empty() && name.size() < 16 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || is_lower_or_digit(c) || c == '_' || c == '-' || c == '.' || c == '@' || c == ':';
  });
}

}  // namespace wanlab::emulator
