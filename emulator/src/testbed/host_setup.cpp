// Host set-up: the hosts a scenario gets, their namespaces, veths, addresses
// and routes, the core's forwarding, the sysctls a scenario sets, the program
// on every core-side veth, and the maps pinned to the testbed's bpffs.
#include <array>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>
#include <stdexcept>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/sys.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator::detail {
namespace {

constexpr std::uint32_t kCoreGateway = 0xa9fe0001;  // 169.254.0.1 on every core-side veth
constexpr std::array<std::uint8_t, 16> kCoreGateway6 = {0xfd, 0x77, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr const char* kHostIfname = "wanlab0";

void setup_host_sysctls(const Scenario& scenario) {
  if (scenario.host.tcp_congestion)
    write_sysctl("/proc/sys/net/ipv4/tcp_congestion_control", *scenario.host.tcp_congestion);
  if (scenario.host.tcp_wmem_max)
    write_sysctl("/proc/sys/net/ipv4/tcp_wmem", fmt::format("4096 16384 {}", *scenario.host.tcp_wmem_max));
  if (scenario.host.tcp_rmem_max)
    write_sysctl("/proc/sys/net/ipv4/tcp_rmem", fmt::format("4096 131072 {}", *scenario.host.tcp_rmem_max));
  if (scenario.host.tcp_slow_start_after_idle)
    write_sysctl("/proc/sys/net/ipv4/tcp_slow_start_after_idle", *scenario.host.tcp_slow_start_after_idle ? "1" : "0");
}

// In a network namespace other than the first, the kernel lets the default
// congestion control be only one listed in the global
// tcp_allowed_congestion_control. We add ours there if needed, remember the
// original list, and restore it when the last testbed goes down.
constexpr const char* kAllowedCc = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

std::string allowed_cc_backup() { return std::string(kRunRoot) + "/.tcp_allowed_congestion_control"; }

// Links made later in the namespace skip duplicate address detection, which
// would hold IPv6 neighbour discovery back for a second on every new link.
void skip_ipv6_dad_in_current_netns() {
  write_sysctl("/proc/sys/net/ipv6/conf/default/accept_dad", "0");
  write_sysctl("/proc/sys/net/ipv6/conf/all/accept_dad", "0");
}

}  // namespace

std::vector<Host> plan_hosts(const Scenario& scenario, const std::string& testbed) {
  std::vector<Host> hosts;
  for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) {
    const std::uint32_t dc_base = scenario.pool.addr + (static_cast<std::uint32_t>(dc) << 8);
    for (int i = 0; i < scenario.dcs[dc].hosts; ++i) {
      Host host;
      host.dc = scenario.dcs[dc].name;
      host.dc_index = static_cast<int>(dc);
      host.index = i;
      host.name = fmt::format("{}-{}", host.dc, i);
      host.netns = host_netns(testbed, host.name);
      host.ipv4 = dc_base + static_cast<std::uint32_t>(i) + 1;
      host.ipv6 = dc_prefix_v6(static_cast<int>(dc));
      host.ipv6[14] = static_cast<std::uint8_t>((i + 1) >> 8);
      host.ipv6[15] = static_cast<std::uint8_t>(i + 1);
      host.core_ifname = fmt::format("wanlabh{}", hosts.size());
      hosts.push_back(std::move(host));
    }
  }
  return hosts;
}

void allow_congestion_control(const std::string& name) {
  std::string allowed = base::read_kernel_file(kAllowedCc);
  while (!allowed.empty() && allowed.back() == '\n') allowed.pop_back();
  std::istringstream words(allowed);
  for (std::string word; words >> word;)
    if (word == name) return;
  if (!fs::exists(allowed_cc_backup())) base::replace_file(allowed_cc_backup(), allowed, 0600);
  write_sysctl(kAllowedCc, allowed + " " + name);
}

void restore_allowed_congestion_control() {
  if (!fs::exists(allowed_cc_backup())) return;
  write_sysctl(kAllowedCc, base::read_regular_file(allowed_cc_backup(), base::ReadRules{4096, false}));
  fs::remove(allowed_cc_backup());
}

void prepare_core(Rtnl& core) {
  core.set_up(core.link_index("lo"));
  write_sysctl("/proc/sys/net/ipv4/ip_forward", "1");
  write_sysctl("/proc/sys/net/ipv6/conf/all/forwarding", "1");
  skip_ipv6_dad_in_current_netns();
}

void build_host(const Scenario& scenario, Rtnl& core, const Host& host) {
  create_netns(host.netns);
  {
    NetnsScope in_host(host.netns);
    skip_ipv6_dad_in_current_netns();
  }
  {
    base::UniqueFd host_fd = open_netns(host.netns);
    core.add_veth(host.core_ifname, kHostIfname, host_fd.get());
  }
  const int core_if = core.link_index(host.core_ifname);
  core.add_address_v4(core_if, kCoreGateway, 32);
  core.set_up(core_if);
  core.add_route_v4(host.ipv4, 32, core_if, std::nullopt);
  core.add_address_v6(core_if, kCoreGateway6, 128);
  core.add_route_v6(host.ipv6, 128, core_if, std::nullopt);

  NetnsScope in_host(host.netns);
  Rtnl rtnl;
  rtnl.set_up(rtnl.link_index("lo"));
  const int host_if = rtnl.link_index(kHostIfname);
  rtnl.add_address_v4(host_if, host.ipv4, 32);
  rtnl.add_address_v6(host_if, host.ipv6, 128);
  rtnl.set_up(host_if);
  rtnl.add_route_v4(0, 0, host_if, kCoreGateway);
  rtnl.add_route_v6({}, 0, host_if, kCoreGateway6);
  try {
    setup_host_sysctls(scenario);
  } catch (const std::exception& error) {
    throw std::runtime_error(host.name + ": " + error.what());
  }
}

void attach_program(Rtnl& core, const Host& host, ReleasePath release, int prog_fd) {
  const int core_if = core.link_index(host.core_ifname);
  core.add_clsact(core_if);
  if (release == ReleasePath::fq) {
    // Departure times are stamped on the way out to the destination host and
    // enforced by fq on that same interface.
    core.add_fq_root(core_if, FqOptions{});
    core.add_bpf_filter(core_if, false, prog_fd, "wanlab_tc");
  } else {
    // Stamped on the way in, so the FORWARD chain's NFQUEUE rule sees the mark.
    core.add_bpf_filter(core_if, true, prog_fd, "wanlab_tc");
  }
}

Datapath load_datapath(const Scenario& scenario, const TestbedState& state, bool with_ipv6,
                       const std::vector<std::pair<Ipv4Prefix, int>>& dc_prefixes,
                       const std::optional<Datapath::LocalDetour>& detour) {
  Datapath datapath =
      Datapath::load(static_cast<int>(scenario.dcs.size()),
                     state.release == ReleasePath::fq ? WANLAB_RELEASE_FQ : WANLAB_RELEASE_NFQUEUE, detour);
  for (const auto& [prefix, dc] : dc_prefixes) datapath.set_dc_prefix_v4(prefix.addr, prefix.len, dc);
  for (int dc = 0; dc < static_cast<int>(scenario.dcs.size()) && dc_prefixes.empty(); ++dc) {
    datapath.set_dc_prefix_v4(scenario.pool.addr + (static_cast<std::uint32_t>(dc) << 8), 24, dc);
    if (with_ipv6) datapath.set_dc_prefix_v6(dc_prefix_v6(dc), 64, dc);
  }
  write_pairs(datapath, scenario);
  write_schedules(datapath, scenario, state.created_mono_ns);
  datapath.pin(bpffs_dir(state.name));
  return datapath;
}

}  // namespace wanlab::emulator::detail
