// A scenario over machines (docs/SCALE-OUT.md): each DC is a set of real
// machines, and `wanlab join` on each one finds its DC and does its part.
// One machine per DC, the gateway, carries the DC's traffic to every other
// DC: the tc program and sch_fq on its NIC hold each pair's one link state,
// as the core namespace does on one box. The DC's other machines (members)
// route other DCs' addresses through it, so a pair's rate is the DC's
// together, never once per machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {

struct LocalAddress {
  std::string dev;
  std::uint32_t address = 0;  // host byte order
};

// What identifies the machine a command runs on.
struct LocalMachine {
  std::string host_name;                // gethostname()
  std::vector<LocalAddress> addresses;  // IPv4, loopback left out
};

// The machine `wanlab join` runs on: its host name and its interfaces'
// IPv4 addresses (of the calling thread's network namespace).
LocalMachine this_machine();

// A host name's IPv4 addresses, as the machine resolves it (getaddrinfo:
// /etc/hosts, DNS). Throws std::runtime_error naming the host.
using ResolveHost = std::function<std::vector<std::uint32_t>(const std::string& host)>;
std::vector<std::uint32_t> resolve_host(const std::string& host);

// What one machine does for a scenario over machines.
struct MachineRole {
  int dc = 0;
  std::string entry;  // the `machines` entry that names it
  bool gateway = false;
  std::uint32_t address = 0;          // its address among the DC's machines
  std::string dev;                    // the interface that holds it
  std::uint32_t gateway_address = 0;  // the DC's gateway (its own address on a gateway)
  // Every DC's machines as prefixes (a host name's addresses as /32s), for
  // the data plane's DC lookup on a gateway.
  std::vector<std::pair<Ipv4Prefix, int>> dc_prefixes;
  // Other DCs' prefixes: what a member routes through its gateway.
  std::vector<Ipv4Prefix> remote_prefixes;
};

// Finds `me` among the scenario's machines. Throws std::runtime_error with
// one line saying why: a machine in no DC or in two, a host name that
// resolves to loopback (Debian's /etc/hosts maps the machine's own name to
// 127.0.1.1) or to an address no interface here holds, a gateway that is not
// one address.
MachineRole find_machine_role(const Scenario& scenario, const LocalMachine& me, const ResolveHost& resolve);

// The role of another machine known by name (a node of a Slurm
// allocation): find_machine_role with its addresses as this machine resolves
// them. Throws std::runtime_error "node NAME: why".
MachineRole find_node_role(const Scenario& scenario, const std::string& node, const ResolveHost& resolve);

// Whether `iptables -S FORWARD` output sets the chain's policy to DROP.
bool forward_policy_drops(std::string_view rules);
// The iptables backends here ("iptables-nft", "iptables-legacy") whose
// FORWARD chain's policy is DROP, as Docker sets it. On a gateway every
// packet to another DC passes FORWARD (members' and, after the detour, the
// gateway's own), so such a policy drops them unless a rule accepts them.
// The legacy backend is asked only when its filter table exists (listing
// would make one). Nothing is changed.
std::vector<std::string> forward_dropping_backends();

struct JoinOptions {
  std::string name;  // overrides the scenario's name
  std::string dev;   // the interface to use; default: the one holding the machine's address
  std::function<void(const std::string&)> progress;
  std::string exe;  // the daemon's binary (a gateway's), as AttachOptions::exe
};

// This machine's part: on the gateway, the data plane on its NIC (the fq
// path only: on the nfqueue path only what arrives would wait, and a
// gateway's own traffic arrives elsewhere), IP forwarding on and ICMP
// redirects off (so members keep sending through it); on a member, a route
// to each other DC's machines via the gateway. testbed_down undoes exactly
// this, the sysctls back to what they were.
TestbedState join_machine(const Scenario& scenario, const MachineRole& role, const JoinOptions& options);

}  // namespace wanlab::emulator
