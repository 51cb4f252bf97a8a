// What the experiment file's reader (experiment.cpp) and the command-line
// overrides (experiment_options.cpp) share, so that a setting has one range
// and one set of names however it is given.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "wanlab/harness/experiment/experiment.hpp"

namespace wanlab::harness::detail {

using namespace std::string_view_literals;

inline constexpr int kMaxStreams = 64;
inline constexpr int kMaxIterations = 100000;
// Below this, messages round up to one byte and link rates to a few bit/s, so
// transfer times no longer stay those of scale 1 (and a real run would crawl).
inline constexpr double kMinScale = 1e-6;
// wan_start: up to a year into the testbed's timeline.
inline constexpr std::uint64_t kMaxWanStartNs = 365ull * 24 * 3600 * 1'000'000'000;
inline constexpr std::array kScheduleNames{"gpipe"sv, "1f1b"sv, "atlas"sv, "diloco"sv, "streaming-diloco"sv};
inline constexpr const char* kScheduleChoices = R"("gpipe", "1f1b", "atlas", "diloco" or "streaming-diloco")";
inline constexpr std::array kPlacementNames{"atlas"sv, "pp-across-dc"sv, "dp-across-dc"sv};

std::optional<Schedule> schedule_named(std::string_view name);
std::optional<Placement> placement_named(std::string_view name);

// Placement, streams and temporal sharing follow the schedule unless given.
void apply_schedule_defaults(Experiment& experiment);

// Checks between fields, on the final values: after the whole file (whichever
// sections it has) and again after every command-line override.
void check_cross_fields(const Experiment& experiment);

}  // namespace wanlab::harness::detail
