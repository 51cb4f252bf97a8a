// `wanlab launch`: a user's distributed program, one process per rank on
// emulated hosts, with the environment torchrun gives (so torch.distributed,
// and anything else that reads RANK and MASTER_ADDR, starts unchanged).
//
// Each rank runs as a plain process on its host: the host's network
// namespace, its host name and the testbed's hosts file (testbed.hpp's host
// identity). Its output is prefixed "[RANK HOST] ". The first rank to fail
// ends the others (SIGTERM, then SIGKILL after a grace period); so does a
// SIGINT, SIGTERM or SIGHUP to the launcher; and if the launcher itself is
// killed, every rank dies with it (PR_SET_PDEATHSIG).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {

using Environment = std::vector<std::pair<std::string, std::string>>;

struct LaunchRank {
  Host host;
  Environment extra;  // more variables for this rank (an experiment's stage and replica)
};

struct LaunchPlan {
  std::vector<std::string> argv;  // the program; the same for every rank
  std::vector<LaunchRank> ranks;  // rank i is ranks[i]; several on one host get LOCAL_RANK 0, 1, ...
  std::string master_addr;        // default: the first rank's host name
  std::uint16_t master_port = 29500;
  int threads_per_rank = 0;  // OMP_NUM_THREADS unless set by the user; 0: the machine's cores / ranks (at least 1)
  int grace_ms = 5000;       // between SIGTERM and SIGKILL when ranks are stopped
  std::FILE* out = stdout;   // where the prefixed output and the launcher's own lines go
};

// The variables rank `rank` gets: RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK (the host's number among the plan's hosts, in
// order of first appearance), GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS (unless ours has it), WANLAB_TESTBED,
// WANLAB_HOST, WANLAB_DC, then the rank's extra ones.
Environment rank_environment(const TestbedState& state, const LaunchPlan& plan, std::size_t rank);

// The hosts a `launch` names: "all" (every host), or a comma-separated list
// of host names and DC names (a DC stands for its hosts, in order), each once.
// Throws std::invalid_argument naming the unknown name.
std::vector<Host> select_hosts(const TestbedState& state, const std::string& list);

// Runs the plan to its end and returns the launch's exit code: 0 if every
// rank exited 0; else the first failing rank's code (128 + signal if one was
// killed), or 128 + the signal that stopped the launch. Throws
// std::runtime_error if a rank cannot be started (the started ones are
// stopped first).
int launch(const TestbedState& state, const LaunchPlan& plan);

}  // namespace wanlab::emulator
