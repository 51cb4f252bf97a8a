// A testbed's daemon: one process per testbed, in its core namespace (for
// `attach`, in the attached interface's namespace). It runs the NFQUEUE
// releaser (nfqueue path), applies the scenario's [[event]]s on time and
// publishes the releaser's counters to releaser.toml. `up` and `attach` start
// it as "EXE daemon --testbed NAME --ready-fd N", where EXE is the wanlab
// binary named in their options (UpOptions::exe): this library does not start
// itself, so the binary that links it decides which program is the daemon.
#pragma once

#include <string>

namespace wanlab::emulator {

struct DaemonOptions {
  std::string testbed;
  // Where to answer the process that started us, once: "ok\n" when the
  // releaser listens, or the error. -1: nobody waits.
  int ready_fd = -1;
};

// The daemon's life: until SIGTERM or SIGINT (`down`). Returns the exit code:
// 0, or 1 after an error (said on the ready fd and on stderr, its log).
int run_daemon(const DaemonOptions& options);

}  // namespace wanlab::emulator
