// Helpers for files people write by hand (scenarios, experiments), shared by
// their parsers so both answer mistakes the same way.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace wanlab::emulator {

// The known name closest to `name` if it is a likely typo, else empty.
std::string closest_name(std::string_view name, std::span<const std::string_view> known);

// The whole file. Throws Error("PATH: cannot open WHAT: reason") and the like.
template <typename Error>
std::string read_input_file(const std::string& path, std::string_view what) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw Error(fmt::format("{}: cannot read {}: Is a directory", path, what));
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(fmt::format("{}: cannot open {}: {}", path, what, std::strerror(errno)));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw Error(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  return contents.str();
}

}  // namespace wanlab::emulator
