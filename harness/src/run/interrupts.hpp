// SIGINT, SIGTERM and SIGHUP while a run holds namespaces and processes:
// noted instead of ending the process, so the run stops and cleans up.
#pragma once

namespace wanlab::harness::run_detail {

// Catches the signals while alive (nested guards share the outermost's).
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The first signal caught since the outermost guard began, or 0.
int interrupted_by();

}  // namespace wanlab::harness::run_detail
