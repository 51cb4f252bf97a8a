// Running programs in a testbed's namespaces: always an argv, never a shell
// (base/process.hpp starts them; this names the namespace).
#pragma once

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

}  // namespace wanlab::emulator
