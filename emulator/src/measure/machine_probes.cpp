// verify across machines: ping and iperf3 on the allocation's nodes, each a
// one-task step of the job (srun), between each DC's first node.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

#include "wanlab/base/parse.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/emulator/launch.hpp"
#include "wanlab/emulator/machines.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/verify.hpp"

namespace wanlab::emulator {
namespace {

// The port the iperf3 servers listen on; one measurement at a time.
constexpr std::uint16_t kIperfPort = 5299;
// Tries of an iperf3 client while its server's step starts.
constexpr int kClientTries = 40;
// Pings spread over at least this long. A node's stall (its wake-ups held back
// by a loaded host) delays every echo of a short burst, and the median with
// them: 20 pings 10 ms apart once measured 108 ms for 30 in CI's TCG guests,
// where runs before measured 34-35 ms. Over 2 s such a stall holds a few.
constexpr double kPingSpanMs = 2000;

struct DcNode {
  std::string node;
  std::uint32_t address = 0;
};

std::vector<std::string> on_node(const std::string& node, std::initializer_list<std::string> argv) {
  std::vector<std::string> out = srun_on_node(node);
  out.insert(out.end(), argv);
  return out;
}

// Whole seconds, at least one (iperf3 reads -t and -O as integers).
std::string whole_seconds(double seconds) { return std::to_string(std::max(1L, std::lround(std::ceil(seconds)))); }

std::vector<double> ping_rtts(const DcNode& from, const DcNode& to, int count, double interval_ms) {
  const base::Captured ping = base::run_captured(
      on_node(from.node, {"ping", "-n", "-c", std::to_string(count), "-i", fmt::format("{:.3f}", interval_ms / 1e3),
                          "-W", "2", ipv4_to_string(to.address)}));
  // Exit 1: some echoes were not answered (they are left out, as on one box).
  if (ping.status != 0 && ping.status != 1)
    throw std::runtime_error(
        fmt::format("ping on {}: exit {}: {}", from.node, ping.status, base::quoted(ping.output, 200)));
  return ping_times_ms(ping.output);
}

// Waits up to `seconds` for `child` to end, then ends its process group.
void end_within(base::Child& child, int seconds) {
  for (int tick = 0; tick < seconds * 10; ++tick) {
    if (child.try_wait()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(-child.pid(), SIGTERM);
  child.wait();
}

double iperf3_goodput(const DcNode& from, const DcNode& to, const GoodputOptions& options) {
  const std::string address = ipv4_to_string(to.address);
  base::SpawnOptions quiet;
  quiet.stdin_fd = quiet.stdout_fd = quiet.stderr_fd = base::kDevNull;
  quiet.own_group = true;
  base::Child server =
      base::spawn(on_node(to.node, {"iperf3", "-s", "-1", "-B", address, "-p", std::to_string(kIperfPort)}), quiet);
  std::string last;
  for (int attempt = 0; attempt < kClientTries; ++attempt) {
    const base::Captured client = base::run_captured(
        on_node(from.node,
                {"iperf3", "-c", address, "-p", std::to_string(kIperfPort), "-J", "-t", whole_seconds(options.seconds),
                 "-O", whole_seconds(options.warmup_seconds), "-P", std::to_string(options.streams)}));
    try {
      const double bps = iperf3_received_bps(client.output);
      end_within(server, 10);  // `-1`: it ends after its one client
      return bps;
    } catch (const std::runtime_error& error) {
      last = error.what();
      // The server's step may not listen yet: try again.
      if (last.find("unable to connect") == std::string::npos && last.find("refused") == std::string::npos) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  end_within(server, 0);
  throw std::runtime_error(fmt::format("iperf3 from {} to {}: {}", from.node, to.node, last));
}

}  // namespace

std::vector<double> ping_times_ms(std::string_view output) {
  std::vector<double> times;
  for (std::size_t at = output.find("time="); at != std::string_view::npos; at = output.find("time=", at + 5)) {
    const std::size_t start = at + 5, end = output.find(" ms", start);
    if (end == std::string_view::npos) break;
    try {
      times.push_back(base::parse_decimal(output.substr(start, end - start), 0, 1e7));
    } catch (const std::exception&) {
      // not a reply's time
    }
  }
  return times;
}

double iperf3_received_bps(std::string_view json) {
  const nlohmann::json root = nlohmann::json::parse(json, nullptr, false);
  if (root.is_discarded() || !root.is_object())
    throw std::runtime_error("iperf3 did not write JSON: " + base::quoted(json, 200));
  if (root.contains("error") && root["error"].is_string())
    throw std::runtime_error("iperf3: " + base::quoted(root["error"].get<std::string>(), 200));
  const auto end = root.find("end");
  if (end == root.end() || !end->contains("sum_received") || !(*end)["sum_received"].contains("bits_per_second") ||
      !(*end)["sum_received"]["bits_per_second"].is_number())
    throw std::runtime_error("iperf3's JSON has no end.sum_received.bits_per_second");
  return (*end)["sum_received"]["bits_per_second"].get<double>();
}

PairProbes slurm_probes(const Scenario& scenario) {
  auto nodes = std::make_shared<std::vector<std::optional<DcNode>>>(scenario.dcs.size());
  for (const std::string& node : slurm_job_nodes()) {
    const MachineRole role = find_node_role(scenario, node, resolve_host);
    auto& first = (*nodes)[static_cast<std::size_t>(role.dc)];
    if (!first) first = DcNode{node, role.address};
  }
  std::vector<std::string> names;
  for (const Dc& dc : scenario.dcs) names.push_back(dc.name);
  PairProbes probes;
  probes.echo_name = "pings";
  probes.unmeasurable = [nodes, names](int a, int b) -> std::string {
    for (const int dc : {a, b})
      if (!(*nodes)[static_cast<std::size_t>(dc)])
        return fmt::format("no node of DC {} in this job's allocation", names[static_cast<std::size_t>(dc)]);
    return "";
  };
  probes.rtt_ms = [nodes](int a, int b, int count, double interval_ms) {
    interval_ms = std::max(interval_ms, kPingSpanMs / std::max(count, 1));
    return ping_rtts(*(*nodes)[static_cast<std::size_t>(a)], *(*nodes)[static_cast<std::size_t>(b)], count,
                     interval_ms);
  };
  probes.goodput_bps = [nodes](int src, int dst, const GoodputOptions& options) {
    return iperf3_goodput(*(*nodes)[static_cast<std::size_t>(src)], *(*nodes)[static_cast<std::size_t>(dst)], options);
  };
  return probes;
}

}  // namespace wanlab::emulator
