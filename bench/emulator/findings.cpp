// What the emulator benchmark's sections share: the findings they record and
// the small helpers of their rows.
#include <thread>

#include <fmt/format.h>

#include "emulator/sections.hpp"

namespace wanlab::bench::emu {
namespace em = wanlab::emulator;
using namespace std::chrono_literals;

void Findings::note_release(const Testbed& bed) {
  if (release_path.empty()) release_path = em::to_string(bed.state().release) + " (" + bed.state().release_reason + ")";
}

std::string Findings::check(const std::string& what, const std::string& target, const std::string& measured,
                            bool pass) {
  outcomes.push_back({what, target, measured, pass});
  return verdict(pass);
}

em::Endpoint endpoint(const em::Host& host) { return {host.netns, host.ipv4}; }

ScenarioSpec spec_of(const std::string& name, int dcs, const std::string& delay, std::optional<std::string> rate) {
  ScenarioSpec spec;
  spec.name = name;
  spec.dcs = dcs;
  spec.delay = delay;
  spec.rate = std::move(rate);
  return spec;
}

std::string mbit(double bps) { return fmt::format("{:.1f} Mbit/s", bps / 1e6); }
std::string pct(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

void pause_for(std::chrono::milliseconds time) { std::this_thread::sleep_for(time); }

std::string machine_load(const CpuMeter::Usage& usage) {
  return fmt::format("{:.0f}% / {:.0f}% / {:.0f}%", usage.system_pct_of_all, usage.softirq_pct_of_all,
                     usage.steal_pct_of_all);
}

std::string limited_share(const em::SenderTcpInfo& info) {
  if (info.busy_us == 0) return "n/a";
  return fmt::format("rwnd {:.0f}% / sndbuf {:.0f}%",
                     100.0 * static_cast<double>(info.rwnd_limited_us) / static_cast<double>(info.busy_us),
                     100.0 * static_cast<double>(info.sndbuf_limited_us) / static_cast<double>(info.busy_us));
}

// The releaser's counters move once a second; wait for the last update to cover a run.
em::ReleaserStats releaser_after_run(const std::string& testbed) {
  pause_for(1100ms);
  return read_releaser_counters(testbed);
}

std::string mean_lateness(const em::ReleaserStats& before, const em::ReleaserStats& after) {
  static const std::size_t kOver100us = *base::late_bound_index(100'000);
  const auto packets = after.packets - before.packets;
  if (packets == 0) return "no verdicts";
  return fmt::format("{:.1f} us ({} verdicts, {} >100us)",
                     static_cast<double>(after.late_sum_ns - before.late_sum_ns) / 1e3 / static_cast<double>(packets),
                     packets, after.late_over[kOver100us] - before.late_over[kOver100us]);
}

}  // namespace wanlab::bench::emu
