// SIGINT, SIGTERM and SIGHUP while a command holds namespaces, mounts and
// processes: noted instead of ending the process, so the work stops at its
// next step and its cleanup runs (`wanlab up`, `attach`, `verify`, `train`).
#pragma once

#include <stdexcept>

namespace wanlab::base {

/// Catches the signals while alive. Guards nest: an inner one (testbed_up
/// inside a training run) shares the outermost's handlers and what it caught;
/// the outermost starts with nothing caught and puts the old handlers back.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

/// The first signal caught since the outermost guard began, or 0.
int interrupted_by();

/// What check_interrupted throws: "interrupted by signal 15 (Terminated)".
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// Throws Interrupted if a signal was caught.
void check_interrupted();

}  // namespace wanlab::base
