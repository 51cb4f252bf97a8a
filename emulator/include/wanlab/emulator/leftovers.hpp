// What a testbed leaves behind after `down`: the one definition the
// integration tests (tests/support/wanlab_cli.hpp) and the soak benchmark
// (bench/soak/) check against. Each finding is one line, as "netns
// wanlab-x.core" or "process 123 (sleep) still running"; none means nothing
// is left.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {

/// What of testbed `name` remains, found by its name alone: network
/// namespaces named wanlab-<name>.*, its run directory, its bpffs mount, and an
/// iptables rule with the comment wanlab-<name> in the calling thread's
/// namespace (the root one, where no rule of ours belongs).
std::vector<std::string> leftovers_by_name(const std::string& name);

/// The names of the links in the calling thread's network namespace: noted
/// before `up`, so that a link `up` made there and `down` left is found.
std::set<std::string> link_names();

/// What a testbed holds while it is up, noted just before `down` so that what
/// outlives it is found though its names are gone: the processes in its
/// namespaces (each by pid and start time, so a reused pid is not taken for
/// it), its daemon, the namespaces themselves (by inode: a process or a mount
/// can keep one alive without its name) and the BPF objects pinned for it (by
/// kernel id, which the kernel does not soon reuse). An attached testbed's
/// namespace is not its own, so only its daemon and BPF objects are noted.
class TestbedTraces {
 public:
  TestbedTraces(const TestbedState& state, std::set<std::string> links_before_up);

  /// Processes (and threads) in the testbed's namespaces when noted.
  std::size_t processes() const { return processes_.size(); }
  /// Everything leftovers_by_name finds, and each process, namespace, BPF
  /// object or link noted here that is still there.
  std::vector<std::string> leftovers() const;

  struct Process {
    pid_t pid = 0;
    std::uint64_t start_ticks = 0;
    std::string comm;
  };
  struct BpfObject {
    std::string name;  // its pin's name
    bool program = false;
    std::uint32_t id = 0;
  };

 private:
  std::string name_;
  std::set<std::uint64_t> netns_inodes_;
  std::vector<Process> processes_;
  Process daemon_;
  std::vector<BpfObject> bpf_objects_;
  std::set<std::string> links_before_up_;
};

}  // namespace wanlab::emulator
