// A testbed: the emulated WAN of one scenario, built from namespaces, veths,
// routes, the tc program and a release path. Its state lives under
// /run/wanlab/<name>/ so any later `wanlab` process can find, change and remove it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/base/process.hpp"
#include "wanlab/emulator/scenario.hpp"

namespace wanlab::emulator {

enum class ReleasePath { fq, nfqueue };
enum class ReleaseChoice { automatic, fq, nfqueue };

std::string to_string(ReleasePath path);
ReleaseChoice parse_release_choice(const std::string& text);  // auto | fq | nfqueue

struct Host {
  std::string name;  // "<dc>-<index>"
  std::string dc;
  int dc_index = 0;
  int index = 0;                        // within its DC
  std::string netns;                    // where it lives
  std::uint32_t ipv4 = 0;               // host byte order
  std::array<std::uint8_t, 16> ipv6{};  // fd77:0:0:<dc>::<index + 1>
  std::string core_ifname;              // its veth end in the core namespace
};

// attached: `wanlab attach`, or a gateway's part of a scenario over machines;
// member: a machine of such a scenario that only routes through its gateway.
enum class TestbedKind { namespaces, attached, member };

// `wanlab join`'s part on one machine (machines.hpp).
struct MachinePart {
  bool gateway = false;
  std::string dc;
  std::uint32_t address = 0;          // host byte order
  std::uint32_t gateway_address = 0;  // the DC's gateway
  std::vector<Ipv4Prefix> routes;     // member: added via the gateway on `dev`
};

struct TestbedState {
  TestbedKind kind = TestbedKind::namespaces;
  std::string name;
  std::string scenario_path;  // the copy under the run directory
  ReleasePath release = ReleasePath::nfqueue;
  std::string release_reason;
  std::vector<std::string> dcs;
  std::vector<Host> hosts;
  pid_t daemon_pid = 0;
  std::int64_t created_unix = 0;
  std::uint64_t created_mono_ns = 0;  // CLOCK_MONOTONIC at `up`, the origin of [[event]] times
  std::string netns;                  // where the program's hook, the rule and the daemon live
  std::uint16_t queue_num = 0;        // NFQUEUE number (nfqueue path)
  // `wanlab attach` only: the interface, and what we added to it (removed by down).
  std::string dev;
  bool created_clsact = false;
  bool created_fq = false;
  // `attach` on the fq path (a gateway's too): the /proc/sys files of its
  // namespace it changed for the local detour (attach.cpp), and their
  // values before, which down writes back.
  std::vector<std::pair<std::string, std::string>> sysctls;
  std::optional<MachinePart> machine;  // `wanlab join` only

  const Host& host(const std::string& host_name) const;  // throws naming the testbed
};

inline constexpr const char* kRunRoot = "/run/wanlab";
inline constexpr const char* kPrefix = "wanlab-";
// The reference `attach` keeps to the namespace it attached in.
inline constexpr const char* kAttachedSuffix = ".attached";

std::string run_dir(const std::string& testbed);
std::string bpffs_dir(const std::string& testbed);
std::string core_netns(const std::string& testbed);
std::string host_netns(const std::string& testbed, const std::string& host);
// IPv6: DC i is fd77:0:0:i::/64 (fixed; IPv4 follows the scenario's pool).
std::array<std::uint8_t, 16> dc_prefix_v6(int dc);

struct UpOptions {
  ReleaseChoice release = ReleaseChoice::automatic;
  std::string name;                                  // overrides the scenario's name
  std::function<void(const std::string&)> progress;  // step messages; may be empty
  // The wanlab binary that is the testbed's daemon, started as
  // "EXE daemon --testbed NAME --ready-fd N" (daemon.hpp); required. The CLI
  // passes itself (base::self_exe()).
  std::string exe;
};

// Builds the testbed and starts its daemon (releaser, timed events) from
// options.exe. On any failure, or SIGINT/SIGTERM/SIGHUP meanwhile, removes
// what it made and throws.
TestbedState testbed_up(const Scenario& scenario, const UpOptions& options);

struct AttachOptions {
  ReleaseChoice release = ReleaseChoice::automatic;
  std::string name;                        // overrides the scenario's name
  std::optional<std::uint16_t> queue_num;  // default: 30000 + the interface's index
  std::function<void(const std::string&)> progress;
  std::string exe;  // the daemon's binary, as UpOptions::exe; required
  // A gateway of a scenario over machines (machines.hpp): its DCs' prefixes
  // (default: the scenario's pool, DC i the i-th /24) and its part, kept in
  // the state; it needs the fq path.
  std::vector<std::pair<Ipv4Prefix, int>> dc_prefixes;
  std::optional<MachinePart> machine;
};

// Puts the data plane on an existing interface `dev` of the calling thread's
// network namespace (a Mininet host, a container, a real NIC). DCs are told
// apart by the scenario's address pool; no hosts or namespaces are created.
// With fq, departures are enforced on dev's egress, and packets of the
// namespace's own sockets take a detour through dev's ingress first (IP
// forwarding on, ICMP redirects off and accept_local on dev, in that
// namespace, while attached; wanlab_tc.bpf.c says why); without fq, what
// arrives on dev is shaped through its ingress hook and an NFQUEUE releaser.
// Only what this call adds is removed by testbed_down, and the sysctls it
// changed are written back; the interface's own qdiscs and filters are left
// alone.
TestbedState attach_up(const std::string& dev, const Scenario& scenario, const AttachOptions& options);

// Removes everything of the testbed, from its state file or, after a crash,
// from what carries its name (without a state file, its daemon is found as a
// process of the running binary). Safe to call on a half-built or absent testbed.
void testbed_down(const std::string& name);

// Testbeds that have a run directory or namespaces of ours.
std::vector<std::string> testbeds_found();
// The state file of testbed `name`, read strictly: a missing, unknown or
// malformed field, or one that differs from what the name derives, is one
// line "PATH:LINE:COLUMN: FIELD: what is wrong". Throws std::runtime_error.
TestbedState load_state(const std::string& name);
// The same for a state file at `path` (tests read copies elsewhere).
TestbedState read_state_file(const std::string& path, const std::string& name);
// `explicit_name` if given; else $WANLAB_TESTBED; else the only one up.
std::string resolve_testbed(const std::optional<std::string>& explicit_name);

bool daemon_alive(const TestbedState& state);  // daemon.cpp

// Hosts that look like machines. A program on an emulated host sees the
// host's name as its host name; /etc/hosts replaced by the testbed's hosts
// file (localhost, and every host's name at its IPv4 address); and
// /etc/resolv.conf by one without name servers, since no DNS server is
// reachable from the emulated hosts: a lookup of another name fails at once
// instead of after the resolver's timeouts. So gethostname() + getaddrinfo()
// (what gloo, NCCL's socket transport, MPI and torch's rendezvous do) find the
// host's own address, not 127.0.0.1, and MASTER_ADDR may be a host name. The
// machine's own files and host name are never touched: the program gets its
// own UTS and mount namespaces.
std::string hosts_file_text(const std::vector<Host>& hosts);
std::string hosts_file_path(const std::string& testbed);   // written by `up`
std::string resolv_conf_path(const std::string& testbed);  // written by `up`
base::HostIdentity host_identity(const TestbedState& state, const Host& host);

// A live change of link settings (`wanlab set`), in the words it was given.
struct Change {
  std::string from;
  std::string to;
  bool symmetric = true;
  std::vector<std::pair<std::string, std::string>> fields;  // {"rate", "200mbit"}
};

// CLOCK_MONOTONIC nanoseconds at which an [[event]] `at_ns` after `up` is due;
// saturates instead of wrapping, so a far-future event is never due at once.
std::uint64_t event_due_mono_ns(const TestbedState& state, std::uint64_t at_ns);

// The scenario as it runs now: the file, plus the [[event]]s already due and
// the changes made so far, in time order. The copies of live schedules'
// traces are read only with ScheduleFiles::read: nothing but their steps
// needs them (the data plane holds those), and reading a large one takes
// seconds, so a `set`, an [[event]] or `verify` leaves them unread (their
// pairs' schedule() is then null, as for the file's own traces).
Scenario current_scenario(const TestbedState& state, ScheduleFiles copies = ScheduleFiles::skip);
// `scenario` (the testbed's own or another file with its DCs) with its
// [[event]]s due by now, counted from the testbed's `up`, and with
// `with_changes` the testbed's changes too; current_scenario is the testbed's
// own file with changes.
Scenario scenario_now(const TestbedState& state, Scenario scenario, bool with_changes,
                      ScheduleFiles copies = ScheduleFiles::skip);
// A live change refused for what the testbed runs: a rate at which a
// pair's schedule would never send, a schedule that would not send at the
// pair's rate, or schedules above the testbed's total. what() is one line
// that starts with the option ("--rate: ..."); `wanlab set` exits 2.
class ChangeRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};
// Validates and records a change, then rewrites the data plane's pairs.
// Throws ChangeRefused for a rate at which a pair's schedule (as the data
// plane holds it) would never send.
void apply_change(const TestbedState& state, const Change& change);
// A schedule `wanlab set` loads: the trace's bytes as they were read (the
// testbed keeps a copy of them, so the record outlives the file) and what
// they parse to.
struct LiveSchedule {
  bool mahimahi = false;            // else a CSV trace
  std::uint64_t period_ns = 0;      // CSV: repeats after this; 0: the last step holds
  std::uint64_t resolution_ns = 0;  // Mahimahi: the window of each rate step
  std::string text;
  Schedule schedule;
};
// Reads and parses a trace file; throws ScenarioError ("trace.csv:4: ...").
LiveSchedule read_live_csv(const std::string& path, std::uint64_t period_ns);
LiveSchedule read_live_mahimahi(const std::string& path, std::uint64_t resolution_ns);
// Loads `live` into the pairs `selection` names (its link fields are not
// read), time 0 now, one map for both directions; a null one removes theirs.
// Recorded in changes.toml as a change (the trace's copy under the run
// directory, time 0 its at_mono_ns) that a later schedule or removal of the
// same pairs supersedes; `wanlab set` with link keys leaves it in place.
// Throws ChangeRefused when a pair would never send under it, at its rate now
// or at one an [[event]] still to come gives it, or when the testbed's
// schedules would come to more than kMaxTestbedScheduleSteps.
void set_schedule_live(const TestbedState& state, const Change& selection, const LiveSchedule* live);
// Rewrites every pair of the running data plane from current_scenario().
void refresh_data_plane(const TestbedState& state);

class Datapath;
// The running data plane's maps (pinned under bpffs_dir). A member machine of
// a scenario over machines has none: its gateway holds the DC's links, and
// this says so in one line.
Datapath open_data_plane(const TestbedState& state);
// Writes every pair of `scenario` into a data plane, keeping running state.
void write_pairs(Datapath& datapath, const Scenario& scenario);
// Gives every scheduled pair of the scenario its schedule, time 0 at start_ns
// (CLOCK_MONOTONIC; `up` passes created_mono_ns, the origin of [[event]]s).
// Pairs without one are left as they are.
void write_schedules(Datapath& datapath, const Scenario& scenario, std::uint64_t start_ns);

}  // namespace wanlab::emulator
