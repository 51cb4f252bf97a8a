// Helpers for files people write by hand (scenarios, experiments), shared by
// their parsers so both answer mistakes the same way.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "wanlab/base/files.hpp"
#include "wanlab/base/suggest.hpp"

namespace wanlab::emulator {

using base::closest_name;

// Hand-written input files are small; anything larger is a mistake (or
// /dev/zero) and is refused before it is read.
inline constexpr std::size_t kMaxInputFileBytes = 16u << 20;

// The whole file: a regular file (a FIFO or device is refused, not waited on
// or read forever) of at most kMaxInputFileBytes. Throws
// Error("PATH: cannot read WHAT: reason").
template <typename Error>
std::string read_input_file(const std::string& path, std::string_view what) {
  try {
    return base::read_regular_file(path, base::ReadRules{kMaxInputFileBytes, true});
  } catch (const base::FileError& error) {
    // Say what the file was meant to be: "x.toml: cannot open scenario: No such file or directory".
    std::string_view reason = error.reason();
    constexpr std::string_view kOpen = "cannot open: ";
    if (reason.starts_with(kOpen))
      throw Error(fmt::format("{}: cannot open {}: {}", path, what, reason.substr(kOpen.size())));
    throw Error(fmt::format("{}: cannot read {}: {}", path, what, reason));
  }
}

}  // namespace wanlab::emulator
