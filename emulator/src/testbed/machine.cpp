// `wanlab join`: one machine's part of a scenario over machines (machines.hpp).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <fmt/ranges.h>
#include <stdexcept>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/machines.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace wanlab::emulator {
using namespace detail;
namespace {

bool is_loopback(std::uint32_t address) { return (address >> 24) == 127; }

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// "node1" names the machine "node1.cluster" too, and the other way round.
bool same_host(const std::string& entry, const std::string& host_name) {
  const std::string a = lower(entry), b = lower(host_name);
  if (a == b) return true;
  return a.substr(0, a.find('.')) == b.substr(0, b.find('.')) &&
         (a.find('.') == std::string::npos || b.find('.') == std::string::npos);
}

// An entry's prefixes: its own, or its host name's addresses as /32s.
std::vector<Ipv4Prefix> resolve_entry(const Machine& machine, const ResolveHost& resolve) {
  if (machine.prefix) return {*machine.prefix};
  std::vector<Ipv4Prefix> resolved;
  for (std::uint32_t address : resolve(machine.text)) {
    if (is_loopback(address))
      throw std::runtime_error(fmt::format(
          "machine {} resolves to {} (loopback; Debian's /etc/hosts maps a machine's own name to 127.0.1.1): give "
          "its address in the scenario, or map its name to the address other machines reach it at",
          base::quoted(machine.text), ipv4_to_string(address)));
    Ipv4Prefix host{address, 32};
    if (std::find(resolved.begin(), resolved.end(), host) == resolved.end()) resolved.push_back(host);
  }
  if (resolved.empty())
    throw std::runtime_error(fmt::format("machine {}: no IPv4 address", base::quoted(machine.text)));
  return resolved;
}

const LocalAddress* local_in(const LocalMachine& me, const std::vector<Ipv4Prefix>& prefixes) {
  for (const LocalAddress& local : me.addresses)
    for (const Ipv4Prefix& prefix : prefixes)
      if (prefix.contains(local.address)) return &local;
  return nullptr;
}

std::string describe(const LocalMachine& me) {
  std::vector<std::string> addresses;
  for (const LocalAddress& local : me.addresses)
    addresses.push_back(fmt::format("{} on {}", ipv4_to_string(local.address), local.dev));
  return fmt::format("host name {}, addresses {}", base::quoted(me.host_name),
                     addresses.empty() ? std::string("none") : fmt::format("{}", fmt::join(addresses, ", ")));
}

std::uint32_t gateway_address_of(const Dc& dc, const ResolveHost& resolve) {
  in_addr parsed{};
  const std::vector<Ipv4Prefix> prefixes = ::inet_pton(AF_INET, dc.gateway.c_str(), &parsed) == 1
                                               ? std::vector<Ipv4Prefix>{{ntohl(parsed.s_addr), 32}}
                                               : resolve_entry(Machine{dc.gateway, std::nullopt}, resolve);
  if (prefixes.size() != 1)
    throw std::runtime_error(
        fmt::format("DC \"{}\": gateway {} resolves to {} addresses; name it by the one address "
                    "other machines reach it at",
                    dc.name, base::quoted(dc.gateway), prefixes.size()));
  return prefixes.front().addr;
}

TestbedState join_as_member(const Scenario& scenario, const MachineRole& role, TestbedState state,
                            const JoinOptions& options) {
  state.kind = TestbedKind::member;
  Rtnl rtnl;
  const int ifindex = rtnl.link_index(state.dev);
  base::InterruptGuard interrupts;
  try {
    create_run_dir(state, scenario);
    name_current_netns(state.netns);
    for (const Ipv4Prefix& prefix : role.remote_prefixes) {
      if (options.progress)
        options.progress(fmt::format("route {}/{} via {}", ipv4_to_string(prefix.addr), prefix.len,
                                     ipv4_to_string(role.gateway_address)));
      state.machine->routes.push_back(prefix);
      write_state(state);
      try {
        rtnl.add_route_v4(prefix.addr, prefix.len, ifindex, role.gateway_address);
      } catch (...) {
        state.machine->routes.pop_back();  // not ours: someone's route to it is there already
        write_state(state);
        throw;
      }
      base::check_interrupted();
    }
  } catch (...) {
    testbed_down(state.name);
    throw;
  }
  return state;
}

TestbedState join_as_gateway(const Scenario& scenario, const MachineRole& role, TestbedState state,
                             const JoinOptions& options) {
  AttachOptions attach;
  attach.release = ReleaseChoice::fq;
  attach.name = state.name;
  attach.progress = options.progress;
  attach.exe = options.exe;
  attach.dc_prefixes = role.dc_prefixes;
  attach.machine = state.machine;
  const std::string reason = state.release_reason;
  state = attach_up(state.dev, scenario, attach);
  state.release_reason = reason;  // not "asked for with --release fq": a gateway has no choice
  write_state(state);
  return state;
}

}  // namespace

LocalMachine this_machine() {
  LocalMachine me;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) < 0) base::throw_errno("gethostname");
  me.host_name = name;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) < 0) base::throw_errno("getifaddrs");
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    const std::uint32_t address = ntohl(in->sin_addr.s_addr);
    if (!is_loopback(address)) me.addresses.push_back({entry->ifa_name, address});
  }
  ::freeifaddrs(list);
  return me;
}

std::vector<std::uint32_t> resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0)
    throw std::runtime_error(fmt::format("machine {}: cannot resolve: {}", base::quoted(host), ::gai_strerror(status)));
  std::vector<std::uint32_t> addresses;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next)
    addresses.push_back(ntohl(reinterpret_cast<const sockaddr_in*>(entry->ai_addr)->sin_addr.s_addr));
  ::freeaddrinfo(found);
  return addresses;
}

MachineRole find_machine_role(const Scenario& scenario, const LocalMachine& me, const ResolveHost& resolve) {
  if (!scenario.over_machines())
    throw std::runtime_error(
        fmt::format("{}: no DC names its machines (dc.machines): `wanlab join` is for a scenario "
                    "over machines; `wanlab up` emulates one on this box",
                    scenario.path));
  MachineRole role;
  bool found = false;
  std::string found_where;
  for (std::size_t dc = 0; dc < scenario.dcs.size(); ++dc) {
    for (const Machine& machine : scenario.dcs[dc].machines) {
      const std::vector<Ipv4Prefix> resolved = resolve_entry(machine, resolve);
      for (const Ipv4Prefix& prefix : resolved) role.dc_prefixes.emplace_back(prefix, static_cast<int>(dc));
      const bool by_name = !machine.prefix && same_host(machine.text, me.host_name);
      const LocalAddress* local = local_in(me, resolved);
      if (!by_name && local == nullptr) continue;
      if (by_name && local == nullptr)
        throw std::runtime_error(fmt::format(
            "machine {} (DC \"{}\") is this machine by name, but resolves to {}, "
            "which no interface here holds ({})",
            base::quoted(machine.text), scenario.dcs[dc].name, ipv4_to_string(resolved.front().addr), describe(me)));
      const std::string where = fmt::format("{} of DC \"{}\"", base::quoted(machine.text), scenario.dcs[dc].name);
      if (found && static_cast<std::size_t>(role.dc) != dc)
        throw std::runtime_error(
            fmt::format("this machine ({}) is {} and {}: a machine is in one DC", describe(me), found_where, where));
      if (found) continue;
      found = true;
      found_where = where;
      role.dc = static_cast<int>(dc);
      role.entry = machine.text;
      role.address = local->address;
      role.dev = local->dev;
    }
  }
  if (!found)
    throw std::runtime_error(
        fmt::format("this machine ({}) is in no DC's machines in {}", describe(me), scenario.path));
  const Dc& dc = scenario.dcs[static_cast<std::size_t>(role.dc)];
  role.gateway_address = gateway_address_of(dc, resolve);
  role.gateway = std::any_of(me.addresses.begin(), me.addresses.end(),
                             [&](const LocalAddress& local) { return local.address == role.gateway_address; });
  for (const auto& [prefix, owner] : role.dc_prefixes)
    if (owner != role.dc) role.remote_prefixes.push_back(prefix);
  return role;
}

bool forward_policy_drops(std::string_view rules) {
  for (std::size_t at = 0; at < rules.size();) {
    const std::size_t end = std::min(rules.find('\n', at), rules.size());
    if (rules.substr(at, end - at) == "-P FORWARD DROP") return true;
    at = end + 1;
  }
  return false;
}

std::vector<std::string> forward_dropping_backends() {
  std::vector<std::string> found;
  const auto ask = [&](const char* binary, const char* name) {
    if (::access(binary, X_OK) != 0) return;
    const base::Captured listed = base::run_captured({binary, "-w", "-S", "FORWARD"});
    if (listed.status == 0 && forward_policy_drops(listed.output)) found.push_back(name);
  };
  ask("/usr/sbin/iptables-nft", "iptables-nft");
  std::ifstream names("/proc/net/ip_tables_names");
  for (std::string table; std::getline(names, table);)
    if (table == "filter") ask("/usr/sbin/iptables-legacy", "iptables-legacy");
  return found;
}

MachineRole find_node_role(const Scenario& scenario, const std::string& node, const ResolveHost& resolve) {
  try {
    LocalMachine machine{node, {}};
    for (std::uint32_t address : resolve(node)) machine.addresses.push_back(LocalAddress{"", address});
    return find_machine_role(scenario, machine, resolve);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(fmt::format("node {}: {}", node, error.what()));
  }
}

TestbedState join_machine(const Scenario& scenario, const MachineRole& role, const JoinOptions& options) {
  TestbedState state;
  state.name = options.name.empty() ? scenario.name : options.name;
  check_testbed_name(state.name, "testbed");
  state.dev = options.dev.empty() ? role.dev : options.dev;
  if (!is_valid_interface_name(state.dev))
    throw std::invalid_argument(fmt::format("--dev {}: expected 1-15 of [A-Za-z0-9_.@:-]", base::quoted(state.dev)));
  state.netns = kPrefix + state.name + kAttachedSuffix;
  state.release = ReleasePath::fq;
  state.release_reason = "a scenario over machines shapes on the gateway's NIC with sch_fq";
  for (const auto& dc : scenario.dcs) state.dcs.push_back(dc.name);
  state.created_unix = ::time(nullptr);
  state.created_mono_ns = base::monotonic_ns();
  state.machine = MachinePart{
      role.gateway, scenario.dcs[static_cast<std::size_t>(role.dc)].name, role.address, role.gateway_address, {}};
  if (std::filesystem::exists(run_dir(state.name)))
    throw std::runtime_error(fmt::format("testbed \"{}\" is already up (wanlab down {})", state.name, state.name));
  if (options.progress)
    options.progress(fmt::format("this machine is {} of DC \"{}\", {} {} on {}", base::quoted(role.entry),
                                 state.machine->dc, role.gateway ? "its gateway, at" : "a member, at",
                                 ipv4_to_string(role.address), state.dev));
  return role.gateway ? join_as_gateway(scenario, role, std::move(state), options)
                      : join_as_member(scenario, role, std::move(state), options);
}

Datapath open_data_plane(const TestbedState& state) {
  if (state.kind == TestbedKind::member && state.machine)
    throw std::runtime_error(
        fmt::format("testbed {}: this machine is a member of DC {}, whose links its gateway {} "
                    "holds; run this there",
                    state.name, state.machine->dc, ipv4_to_string(state.machine->gateway_address)));
  return Datapath::open_pinned(bpffs_dir(state.name));
}

void detail::leave_machine(const TestbedState& state) {
  if (!state.machine || !netns_exists(state.netns)) return;
  std::vector<std::string> failures;
  NetnsScope in_ns(state.netns);
  if (!state.machine->routes.empty()) {
    Rtnl rtnl;
    int ifindex = 0;
    try {
      ifindex = rtnl.link_index(state.dev);
    } catch (const std::exception&) {
      return;  // the interface is gone, and its routes with it
    }
    for (const Ipv4Prefix& prefix : state.machine->routes) {
      try {
        rtnl.delete_route_v4(prefix.addr, prefix.len, ifindex, state.machine->gateway_address);
      } catch (const std::system_error& error) {
        if (error.code().value() != ESRCH) failures.push_back(error.what());
      }
    }
  }
  if (!failures.empty())
    throw std::runtime_error(
        fmt::format("{}: leaving the scenario's machines: {}", state.name, fmt::join(failures, "; ")));
}

}  // namespace wanlab::emulator
