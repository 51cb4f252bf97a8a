// Pieces shared by testbed.cpp (namespaces), attach.cpp (existing interface)
// and changes.cpp (live changes). Not a public header.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <signal.h>
#include <string>
#include <utility>
#include <vector>

#include "wanlab/emulator/testbed.hpp"

#include "wanlab/emulator/datapath.hpp"

namespace wanlab::emulator {
class Rtnl;
}

namespace wanlab::emulator::detail {

std::uint64_t monotonic_ns();
std::string state_path(const std::string& testbed);
std::string changes_path(const std::string& testbed);

// SIGINT/SIGTERM while it lives make check_interrupted() throw, so a build (or
// a verify) stops at the next step and its cleanup path runs. It starts with
// no interrupt noted.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_int_{};
  struct sigaction old_term_{};
};
void check_interrupted();

void write_state(const TestbedState& state);
// Loads the program for the scenario's DCs and the state's release path, fills
// the prefix tries (IPv6 too for namespace testbeds) and pairs, and pins the maps.
Datapath load_datapath(const Scenario& scenario, const TestbedState& state, bool with_ipv6);
void mount_bpffs(const std::string& testbed);
// Sets up the run directory, the copy of the scenario and the first state file.
void create_run_dir(TestbedState& state, const Scenario& scenario);
// Picks the release path; `probe` is an rtnetlink socket in a namespace of
// ours whose loopback may be used to ask the kernel for sch_fq.
std::pair<ReleasePath, std::string> choose_release(ReleaseChoice choice, Rtnl& probe);
void install_nfqueue_rule(const TestbedState& state);
std::vector<bool> nfqueue_rule_families(const TestbedState& state);  // false: IPv4, true: IPv6
std::vector<std::string> nfqueue_rule(const TestbedState& state, const std::string& action, bool ipv6);
pid_t start_daemon(const TestbedState& state);
bool pid_is_our_daemon(pid_t pid, const std::string& testbed);
void allow_congestion_control(const std::string& name);
void restore_allowed_congestion_control();

// The tc filter's priority and handle on interfaces we attach to: distinctive,
// so that down removes exactly our filter from an interface that has others.
inline constexpr std::uint32_t kFilterPriority = 0xc0de;
inline constexpr std::uint32_t kFilterHandle = 0x5741;

// Removes what attach_up added to the interface (testbed_down calls it).
void detach_interface(const TestbedState& state);

}  // namespace wanlab::emulator::detail
