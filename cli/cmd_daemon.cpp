// `wanlab daemon`: started by `up`, one per testbed (emulator/daemon.hpp holds
// its body). Not for users; `down` stops it.
#include <climits>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/emulator/daemon.hpp"

namespace wanlab::cli {

int cmd_daemon(const Options& options) {
  emulator::DaemonOptions daemon;
  daemon.ready_fd = options.integer<int>("ready-fd", 0, INT_MAX).value_or(-1);
  daemon.testbed = options.get("testbed").value_or("");
  return emulator::run_daemon(daemon);
}

}  // namespace wanlab::cli
