// build_info.hpp: versions known at compile time, the commit from the
// generated git_commit.cpp (cmake/GitCommit.cmake).
#include "report/build_info.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#ifndef WANLAB_VERSION
#define WANLAB_VERSION "unknown"
#endif

namespace wanlab::harness::detail {

extern const char* const kGitCommit;

const BuildInfo& build_info() {
  static const BuildInfo info {
    WANLAB_VERSION, kGitCommit,
#if defined(__clang__)
        fmt::format("clang {}", __clang_version__),
#elif defined(__GNUC__)
        fmt::format("gcc {}", __VERSION__),
#else
        "unknown",
#endif
        fmt::format("{}.{}.{}", TOML_LIB_MAJOR, TOML_LIB_MINOR, TOML_LIB_PATCH),
        fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100),
        fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH),
  };
  return info;
}

}  // namespace wanlab::harness::detail
