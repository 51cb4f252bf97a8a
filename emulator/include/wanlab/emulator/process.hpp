// Running programs: always an argv, never a shell.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace wanlab::emulator {

// Runs argv (PATH lookup) inside network namespace `netns` ("" = the current
// one), waits, and returns its exit status (128 + signal if killed). Throws if
// it cannot be started. Output goes where ours goes unless `quiet`. With
// `forward_signals`, SIGINT/SIGTERM/SIGHUP sent to us meanwhile go to the child
// instead of ending us, so the caller can still clean up after it.
int run_argv(const std::vector<std::string>& argv, const std::string& netns = "", bool quiet = false,
             bool forward_signals = false);

// Sends SIGTERM, waits up to grace_ms for the processes to go, then SIGKILL.
void terminate_pids(const std::vector<pid_t>& pids, int grace_ms = 1000);

// Path of the running executable (for re-executing ourselves).
std::string self_exe();

}  // namespace wanlab::emulator
