// What an error message about a bad input must be: one line a person reads.
// The fuzzers of the file parsers and the replay of their corpora check it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wanlab::base {

/// Longer is a message that echoes its input instead of pointing at it.
inline constexpr std::size_t kMaxMessageBytes = 2048;

/// Empty if `message` is one line: not empty, at most kMaxMessageBytes, and no
/// control character (a newline, a carriage return, an escape): text from an
/// input goes through quoted(), which shows those as \xNN. Else what is wrong.
inline std::string one_line_problem(std::string_view message) {
  if (message.empty()) return "empty";
  if (message.size() > kMaxMessageBytes) return "longer than " + std::to_string(kMaxMessageBytes) + " bytes";
  for (std::size_t i = 0; i < message.size(); ++i) {
    const auto byte = static_cast<unsigned char>(message[i]);
    if (byte < 0x20 || byte == 0x7f)
      return "control character " + std::to_string(byte) + " at byte " + std::to_string(i);
  }
  return {};
}

}  // namespace wanlab::base
