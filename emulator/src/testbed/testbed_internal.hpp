// The testbed's rooms, shared by testbed.cpp (up/down), attach.cpp (an
// existing interface), changes.cpp and live_schedule.cpp (live changes). Not
// a public header.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {
class Rtnl;
}

namespace wanlab::emulator::detail {

// ---- run directory and state file (state_file.cpp) ----
std::string state_path(const std::string& testbed);
std::string changes_path(const std::string& testbed);
void write_state(const TestbedState& state);
// The hosts file and resolv.conf of the hosts' identity (testbed.hpp).
void write_identity_files(const TestbedState& state);
// Sets up the run directory, the copy of the scenario and the first state file.
void create_run_dir(TestbedState& state, const Scenario& scenario);
void mount_bpffs(const std::string& testbed);
// A directory of ours: made here (EEXIST is an error unless `may_exist`), and
// a real directory, not a link someone planted.
void make_directory(const std::string& path, mode_t mode, bool may_exist);

// ---- live changes (changes.cpp, live_schedule.cpp) ----
// Serializes writers of the changes file and of the data plane's pairs.
class TestbedLock {
 public:
  explicit TestbedLock(const std::string& testbed);

 private:
  base::UniqueFd fd_;
};
class StrictToml;
// The index of a DC a change names; throws naming the testbed's DCs.
int dc_of_change(const TestbedState& state, const std::string& dc);
// With the lock held: reads the earlier changes strictly (a broken file stops
// here, before anything is recorded), appends `change` (one [[change]] table),
// drops the changes it wholly overrides and replaces the file. Returns the
// changes that remain.
toml::array record_change(const TestbedState& state, toml::table change);
// A change's schedule keys (schedule = { file = "schedules/N.csv", ... },
// no_schedule = true) into `spec`; `field` names the change in errors. The
// copy a schedule names is read with ScheduleFiles::read alone.
void read_change_schedule(const StrictToml& file, const toml::table& change, const std::string& field, LinkSpec& spec,
                          ScheduleFiles copies);

// ---- release path (release_path.cpp) ----
// Picks the release path; `probe` is an rtnetlink socket in a namespace of
// ours whose loopback may be used to ask the kernel for sch_fq.
std::pair<ReleasePath, std::string> choose_release(ReleaseChoice choice, Rtnl& probe);
void install_nfqueue_rule(const TestbedState& state);
std::vector<bool> nfqueue_rule_families(const TestbedState& state);  // false: IPv4, true: IPv6
std::vector<std::string> nfqueue_rule(const TestbedState& state, const std::string& action, bool ipv6);

// ---- host set-up (host_setup.cpp) ----
std::vector<Host> plan_hosts(const Scenario& scenario, const std::string& testbed);
// The core namespace (the calling thread's): loopback up, forwarding on, no DAD.
void prepare_core(Rtnl& core);
// One host: its namespace, the veth pair to the core, addresses, routes, sysctls.
void build_host(const Scenario& scenario, Rtnl& core, const Host& host);
void attach_program(Rtnl& core, const Host& host, ReleasePath release, int prog_fd);
// Loads the program for the scenario's DCs and the state's release path, fills
// the prefix tries (IPv6 too for namespace testbeds) and pairs, and pins the maps.
// DC i is the pool's i-th /24, or as `dc_prefixes` say when given; with
// `detour`, the program detours the attached host's own packets.
Datapath load_datapath(const Scenario& scenario, const TestbedState& state, bool with_ipv6,
                       const std::vector<std::pair<Ipv4Prefix, int>>& dc_prefixes,
                       const std::optional<Datapath::LocalDetour>& detour);
void allow_congestion_control(const std::string& name);
void restore_allowed_congestion_control();

// ---- the daemon (daemon.cpp) ----
// Starts "EXE daemon --testbed NAME --ready-fd N" and waits for its "ok";
// records its pid in `state` and the state file. Throws with its answer.
void start_daemon(TestbedState& state, const std::string& exe);
bool pid_is_our_daemon(pid_t pid, const std::string& testbed);
// Daemons of testbed `name` found without its state file: processes of the
// running binary whose arguments are exactly "daemon --testbed NAME".
std::vector<pid_t> daemons_of(const std::string& name);

// ---- an attached interface (attach.cpp) ----
// The tc filter's priority and handle on interfaces we attach to: distinctive,
// so that down removes exactly our filter from an interface that has others.
inline constexpr std::uint32_t kFilterPriority = 0xc0de;
inline constexpr std::uint32_t kFilterHandle = 0x5741;
// Removes what attach_up added to the interface (testbed_down calls it).
void detach_interface(const TestbedState& state);
// The sysctls (/proc/sys paths) and values the program's detour of local
// packets needs on `dev` (attach.cpp): the only ones a state file may name.
std::vector<std::pair<std::string, std::string>> local_detour_sysctls(const std::string& dev);
// A machine's part of a scenario over machines: its routes removed, its
// sysctls back (machine.cpp).
void leave_machine(const TestbedState& state);

}  // namespace wanlab::emulator::detail
