// `wanlab attach`: the data plane on an interface that is not ours.
#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <filesystem>
#include <ctime>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/process.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/sys.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {
using namespace detail;
namespace {

void check_interface_name(const std::string& dev) {
  if (!is_valid_interface_name(dev))
    throw std::invalid_argument(fmt::format("interface name {}: expected 1-15 of [A-Za-z0-9_.@:-]", base::quoted(dev)));
}

// Asks the kernel for sch_fq in a scratch namespace, never on the user's interfaces.
std::pair<ReleasePath, std::string> choose_release_for(const std::string& testbed, ReleaseChoice choice) {
  const std::string scratch = kPrefix + testbed + ".probe";
  create_netns(scratch);
  try {
    NetnsScope in_scratch(scratch);
    Rtnl rtnl;
    auto chosen = choose_release(choice, rtnl);
    delete_netns(scratch);
    return chosen;
  } catch (...) {
    delete_netns(scratch);
    throw;
  }
}

bool add_clsact_if_missing(Rtnl& rtnl, int ifindex) {
  try {
    rtnl.add_clsact(ifindex);
    return true;
  } catch (const std::system_error& error) {
    if (error.code().value() == EEXIST) return false;  // someone's clsact: share it, leave it
    throw;
  }
}

// `ip netns exec` runs its command in a private mount namespace whose mounts
// never reach other processes; the namespace reference and the bpffs mount
// that later `wanlab` commands need would vanish with us.
void refuse_private_mount_namespace() {
  struct stat ours {
  }, parent{};
  const std::string parent_ns = "/proc/" + std::to_string(::getppid()) + "/ns/mnt";
  if (::stat("/proc/self/ns/mnt", &ours) < 0 || ::stat(parent_ns.c_str(), &parent) < 0) return;
  if (ours.st_ino != parent.st_ino)
    throw std::runtime_error(
        "running in a private mount namespace (ip netns exec?): mounts made here would be lost; "
        "use `wanlab attach --netns NAME DEV SCENARIO` or `--pid PID` instead");
}

// On the fq path our sch_fq, the interface's root qdisc, enforces skb->tstamp.
// Grafted under someone's htb or netem instead, fq would be dequeued only when
// htb's tokens allow, and a departure time set before netem's delay would not
// add to it. So a root qdisc someone configured, a Mininet TCLink's htb, tbf
// or netem, is left as it is and the attach refused, saying what works.
void refuse_configured_root_qdisc(Rtnl& rtnl, int ifindex, const std::string& dev) {
  const auto root = rtnl.configured_root_qdisc(ifindex);
  if (!root) return;
  throw std::runtime_error(
      fmt::format("{} has a root qdisc already ({} {:x}:, as a Mininet TCLink's bw or delay adds) and the fq path "
                  "needs its own root fq: "
                  "attach with --release nfqueue, which shapes what arrives and leaves that qdisc alone, or remove it "
                  "(tc qdisc del dev {} root; in Mininet a plain Link) and give its rate and delay to the scenario",
                  dev, root->kind, root->handle >> 16, dev));
}

// What the program's detour of local packets (wanlab_tc.bpf.c) needs, set
// in the calling thread's namespace, each value before kept in the state
// first (down writes it back).
void enable_local_detour(TestbedState& state) {
  for (const auto& [path, value] : local_detour_sysctls(state.dev)) {
    const std::string before = read_sysctl(path);
    if (before == value) continue;
    state.sysctls.emplace_back(path, before);
    write_state(state);
    write_sysctl(path, value);
  }
}

std::optional<std::array<std::uint8_t, 6>> ethernet_address(const std::string& dev) {
  base::UniqueFd socket(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!socket) base::throw_errno("socket for " + dev + "'s MAC");
  ifreq request{};
  std::copy_n(dev.c_str(), std::min(dev.size(), sizeof request.ifr_name - 1), request.ifr_name);
  base::check(::ioctl(socket.get(), SIOCGIFHWADDR, &request), dev + ": reading its MAC");
  if (request.ifr_hwaddr.sa_family != ARPHRD_ETHER) return std::nullopt;
  std::array<std::uint8_t, 6> mac{};
  std::copy_n(reinterpret_cast<const std::uint8_t*>(request.ifr_hwaddr.sa_data), mac.size(), mac.begin());
  return mac;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> detail::local_detour_sysctls(const std::string& dev) {
  // IP forwards the packets back out, sends no ICMP redirect for a packet
  // that leaves where it came in, and takes in packets that carry one of its
  // own addresses.
  const std::string ipv4 = "/proc/sys/net/ipv4/";
  return {{ipv4 + "ip_forward", "1"},
          {ipv4 + "conf/all/send_redirects", "0"},
          {ipv4 + "conf/" + dev + "/send_redirects", "0"},
          {ipv4 + "conf/" + dev + "/accept_local", "1"}};
}

TestbedState attach_up(const std::string& dev, const Scenario& scenario, const AttachOptions& options) {
  check_interface_name(dev);
  refuse_private_mount_namespace();
  TestbedState state;
  state.kind = TestbedKind::attached;
  state.name = options.name.empty() ? scenario.name : options.name;
  state.dev = dev;
  state.machine = options.machine;
  state.netns = kPrefix + state.name + kAttachedSuffix;
  for (const auto& dc : scenario.dcs) state.dcs.push_back(dc.name);
  if (std::filesystem::exists(run_dir(state.name)))
    throw std::runtime_error(fmt::format("testbed \"{}\" is already up (wanlab down {})", state.name, state.name));
  Rtnl rtnl;
  const int ifindex = rtnl.link_index(dev);  // the calling thread's namespace
  state.queue_num = options.queue_num.value_or(static_cast<std::uint16_t>(30000 + ifindex % 30000));
  state.created_unix = ::time(nullptr);
  state.created_mono_ns = base::monotonic_ns();

  auto say = [&](const std::string& step) {
    if (options.progress) options.progress(step);
  };
  base::InterruptGuard interrupts;
  try {
    create_run_dir(state, scenario);
    name_current_netns(state.netns);
    mount_bpffs(state.name);
    try {
      std::tie(state.release, state.release_reason) = choose_release_for(state.name, options.release);
    } catch (const std::runtime_error& error) {
      if (!state.machine) throw;
      // On the nfqueue path only what arrives would wait: a gateway's own
      // traffic to other DCs arrives at their members, not at a gateway.
      throw std::runtime_error(fmt::format("{}: a DC's gateway needs the fq release path: {}", dev, error.what()));
    }
    say("release path: " + to_string(state.release) + " (" + state.release_reason + ")");
    if (state.release == ReleasePath::fq) refuse_configured_root_qdisc(rtnl, ifindex, dev);

    // The detour needs a MAC to address the packet to the interface itself.
    const auto mac = state.release == ReleasePath::fq ? ethernet_address(dev) : std::nullopt;
    if (state.machine && !mac)
      throw std::runtime_error(dev + ": a DC's gateway forwards its members' packets: its NIC must be Ethernet");
    std::optional<Datapath::LocalDetour> detour;
    if (mac) detour = Datapath::LocalDetour{ifindex, *mac};
    Datapath datapath = load_datapath(scenario, state, false, options.dc_prefixes, detour);
    base::check_interrupted();

    state.created_clsact = add_clsact_if_missing(rtnl, ifindex);
    write_state(state);
    if (state.release == ReleasePath::fq) {
      rtnl.add_fq_root(ifindex, FqOptions{});
      state.created_fq = true;
      write_state(state);
      rtnl.add_bpf_filter(ifindex, false, datapath.program_fd(), "wanlab_tc", kFilterPriority, kFilterHandle);
      if (detour) {
        say("local senders take a detour through " + dev + "'s ingress (ip_forward, accept_local on, redirects off)");
        enable_local_detour(state);
      } else {
        say(dev + " has no Ethernet address: senders on this machine are limited by TCP's small queues");
      }
    } else {
      rtnl.add_bpf_filter(ifindex, true, datapath.program_fd(), "wanlab_tc", kFilterPriority, kFilterHandle);
      install_nfqueue_rule(state);
    }
    base::check_interrupted();
    say("starting the daemon");
    start_daemon(state, options.exe);
  } catch (...) {
    testbed_down(state.name);
    throw;
  }
  return state;
}

void detail::detach_interface(const TestbedState& state) {
  // Best effort, step by step: a piece already gone must not keep the rest.
  std::vector<std::string> failures;
  auto attempt = [&](auto&& step) {
    try {
      step();
    } catch (const std::system_error& error) {
      if (error.code().value() != ENOENT && error.code().value() != ENODEV && error.code().value() != EINVAL)
        failures.push_back(error.what());
    } catch (const std::exception& error) {
      failures.push_back(error.what());
    }
  };
  if (!netns_exists(state.netns)) return;
  std::optional<NetnsScope> in_ns;
  try {
    in_ns.emplace(state.netns);
  } catch (const std::system_error& error) {
    // The name is made before it is bound to the namespace (name_current_netns),
    // and attach names it before it touches the interface: a name not bound yet
    // (an attach stopped, or still running, between the two) left nothing to detach.
    if (error.code().value() == EINVAL) return;
    throw;
  }
  Rtnl rtnl;
  int ifindex = 0;
  attempt([&] { ifindex = rtnl.link_index(state.dev); });
  if (ifindex > 0) {
    const bool ingress = state.release == ReleasePath::nfqueue;
    attempt([&] { rtnl.delete_bpf_filter(ifindex, ingress, kFilterPriority, kFilterHandle); });
    if (state.created_fq) attempt([&] { rtnl.delete_root_qdisc(ifindex); });
    if (state.created_clsact) attempt([&] { rtnl.delete_clsact(ifindex); });
  }
  for (const auto& [path, before] : state.sysctls) attempt([&] { write_sysctl(path, before); });
  if (state.release == ReleasePath::nfqueue) {
    // Exit status 1 means the rule is not there (already gone): nothing to do.
    for (bool ipv6 : nfqueue_rule_families(state))
      attempt([&] { run_argv(nfqueue_rule(state, "-D", ipv6), "", true); });
  }
  if (!failures.empty())
    throw std::runtime_error(
        fmt::format("{}: detaching from {}: {}", state.name, state.dev, fmt::join(failures, "; ")));
}

}  // namespace wanlab::emulator
