// The machine's CPU time from /proc/stat: how busy its CPUs were between two
// readings, and how much of their time a hypervisor took for other guests
// (steal). Both the harness's emulation verdict and `wanlab verify` name it:
// on a shared host it is the one cause of a slow measurement that no setting
// of ours can change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace wanlab::base {

// All CPUs' time counters of /proc/stat's "cpu" line, in clock ticks. Stolen
// is the part of busy a hypervisor ran other guests on this VM's CPUs.
struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
  std::uint64_t stolen = 0;
};
// Nothing if the file cannot be read or has no "cpu" line.
std::optional<CpuTimes> read_cpu_times(const std::string& path = "/proc/stat");
// The share of the CPUs busy between two readings (0 if no time passed).
double busy_share(const CpuTimes& before, const CpuTimes& after);
// The share of the CPUs' time the hypervisor took between two readings.
double stolen_share(const CpuTimes& before, const CpuTimes& after);

// From this share of the CPUs' time up (it rounds to 1%), what the hypervisor
// took is named beside a verdict.
inline constexpr double kStolenNamed = 0.005;

}  // namespace wanlab::base
