// `wanlab demo`: the main job in one command. Brings up a scenario, measures
// RTT and single-stream TCP goodput between the first hosts of every pair of
// DCs, prints them beside the configured values, and tears down.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/emulator/verify.hpp"

namespace wanlab::cli {
namespace em = wanlab::emulator;
namespace {

const em::Host& first_host(const em::TestbedState& state, int dc) {
  for (const auto& host : state.hosts)
    if (host.dc_index == dc) return host;
  throw std::runtime_error("DC without hosts");
}

std::string mbit(double bps) { return std::isinf(bps) ? "unlimited" : fmt::format("{:.0f}", bps / 1e6); }

void measure(const em::Scenario& scenario, const em::TestbedState& state, double seconds) {
  fmt::print("\n{:<18} {:>10} {:>10} {:>8} | {:>10} {:>10} {:>10} {:>7}\n", "PAIR", "RTT CONF", "RTT MEAS", "ERROR",
             "RATE CONF", "WND LIMIT", "GOODPUT", "OF MIN");
  fmt::print("{:<18} {:>10} {:>10} {:>8} | {:>10} {:>10} {:>10} {:>7}\n", "", "ms", "ms", "ms", "Mbit/s", "Mbit/s",
             "Mbit/s", "");
  const int n = static_cast<int>(scenario.dcs.size());
  for (int src = 0; src < n; ++src) {
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      const auto& a = first_host(state, src);
      const auto& b = first_host(state, dst);
      const em::Endpoint from{a.netns, a.ipv4}, to{b.netns, b.ipv4};
      const double rtt_conf =
          static_cast<double>(scenario.pair(src, dst).delay_ns + scenario.pair(dst, src).delay_ns) / 1e6;
      // Network RTT as a kernel-answered ping sees it: kernel receive
      // timestamps, without the echo program's own wake-up.
      const double rtt_meas = em::median(em::measure_rtt_ms(from, to, 20, 10));
      const double rate_conf =
          scenario.pair(src, dst).rate_bps ? static_cast<double>(scenario.pair(src, dst).rate_bps) : INFINITY;
      const double limit = em::stream_window_limit_bps(scenario.host, rtt_meas / 1e3);
      em::GoodputOptions goodput_options;
      goodput_options.seconds = seconds;
      goodput_options.warmup_seconds = std::max(1.0, rtt_meas / 1e3 * 15);
      const double goodput = em::measure_goodput_bps(from, to, goodput_options);
      const double expected = std::min(rate_conf, limit);
      fmt::print("{:<18} {:>10.2f} {:>10.2f} {:>+8.3f} | {:>10} {:>10} {:>10.1f} {:>6.0f}%\n", a.dc + " -> " + b.dc,
                 rtt_conf, rtt_meas, rtt_meas - rtt_conf, mbit(rate_conf), mbit(limit), goodput / 1e6,
                 100 * goodput / expected);
      std::fflush(stdout);
    }
  }
  fmt::print(
      "\nRTT CONF = one-way delay there + back; RTT MEAS = median of 20 UDP echoes, from kernel timestamps.\nGOODPUT = "
      "one TCP stream ({}), counted at the receiver.\n"
      "WND LIMIT = what one stream can carry at this RTT with its socket buffers (window / RTT), by the rule for a\n"
      "  writer that refills its socket when a third of the send buffer is free (emulator/tcp_window.hpp); this\n"
      "  bulk stream's blocking writes keep a little more in flight (about 7% with 4 MiB buffers), so OF MIN may\n"
      "  pass 100%;\n"
      "OF MIN = goodput as a share of min(RATE CONF, WND LIMIT). Several streams (wanlab perf -P N) fill the rest.\n",
      scenario.host.tcp_congestion.value_or("the kernel's default congestion control"));
}

}  // namespace

int cmd_demo(const Options& options) {
  if (options.positionals().size() > 1) throw UsageError("expected at most one scenario file");
  // Every option is checked before a testbed is built.
  const double seconds = options.decimal("seconds", 0.1, 3600).value_or(3.0);
  const em::ReleaseChoice release = release_option(options);
  const std::string path = options.positionals().empty() ? "scenarios/three-dc.toml" : options.positionals().front();
  const em::Scenario scenario = em::load_scenario(path);
  em::UpOptions up;
  up.release = release;
  up.exe = base::self_exe();
  up.progress = [](const std::string& step) { fmt::print("wanlab up: {}\n", step); };
  const auto state = em::testbed_up(scenario, up);
  fmt::print("testbed {} is up: {} DCs, {} hosts, release path {}\n", state.name, state.dcs.size(), state.hosts.size(),
             em::to_string(state.release));
  try {
    measure(scenario, state, seconds);
  } catch (...) {
    em::testbed_down(state.name);
    throw;
  }
  em::testbed_down(state.name);
  fmt::print("testbed {} is down\n", state.name);
  return 0;
}

}  // namespace wanlab::cli
