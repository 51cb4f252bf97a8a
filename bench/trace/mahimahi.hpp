// Mahimahi's replay of the schedule benchmark's square wave, for comparison:
// the trace in its format, and its shells (`mm-delay` around `mm-link`)
// started as an unprivileged user, with the namespaces measure_goodput needs.
#pragma once

#include <pwd.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "wanlab/base/process.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/tcp_window.hpp"

namespace wanlab::bench::trace {

// Mahimahi's link counts IP packets: a delivery opportunity is one 1500-byte
// packet (PACKET_SIZE 1504 with the TUN header), of which TCP carries 1448.
inline constexpr double kMahimahiPayloadShare = emulator::kSegmentPayloadBytes / 1500.0;
inline constexpr std::uint64_t kMahimahiOpportunityBits = 1500 * 8;

// The square wave at `bps` as a Mahimahi trace.
std::string mahimahi_trace(std::uint64_t bps);

// Sets a sysctl until destroyed, then puts the old value back.
class SysctlOverride {
 public:
  SysctlOverride(std::string path, const std::string& value);
  ~SysctlOverride();
  SysctlOverride(const SysctlOverride&) = delete;
  SysctlOverride& operator=(const SysctlOverride&) = delete;

 private:
  void write(const std::string& value) const;
  std::string path_, old_;
};

struct MahimahiSetup {
  std::string dir;     // where mm-delay and mm-link are built
  std::string user;    // who runs them
  double seconds = 0;  // how long the measurement takes
};

// `mm-delay 10 mm-link UP DOWN --*-queue=droptail --*-queue-args=bytes=N --
// sh` started as an unprivileged user (Mahimahi's shells must be setuid root
// and refuse a root real uid), the inner shell's network namespace and the
// outside one named for measure_goodput, and the time the uplink trace
// starts. Ends the shells and drops the names when destroyed (also when a
// signal ends the benchmark).
class MahimahiShell {
 public:
  MahimahiShell(const MahimahiSetup& setup, const std::string& work, std::uint64_t bps);
  ~MahimahiShell() { stop(); }
  MahimahiShell(const MahimahiShell&) = delete;
  MahimahiShell& operator=(const MahimahiShell&) = delete;

  emulator::Endpoint inside() const { return {inner_name_, 0}; }
  emulator::Endpoint outside() const { return {outer_name_, base_ipv4_}; }
  // CLOCK_MONOTONIC of the trace's time 0.
  std::uint64_t origin_ns() const { return origin_ns_; }

 private:
  void start(const MahimahiSetup& setup, const passwd& user, const std::string& dir, std::uint64_t bps,
             const std::string& trace);
  void start_trace(const std::string& fifo, const std::string& trace, const std::string& log);
  void wait_ready(const std::string& log);
  void name_namespaces();
  bool exited();
  void stop();

  base::Child shell_;
  pid_t inner_pid_ = 0;
  std::uint32_t base_ipv4_ = 0;
  std::uint64_t origin_ns_ = 0;
  std::string inner_name_, outer_name_;
};

}  // namespace wanlab::bench::trace
