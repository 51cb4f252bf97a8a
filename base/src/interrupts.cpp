#include "wanlab/base/interrupts.hpp"

#include <signal.h>

#include <atomic>
#include <cstring>
#include <iterator>
#include <string>

namespace wanlab::base {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
// Written by the handler, read by any thread: lock-free, so signal-safe.
std::atomic<int> caught{0};
static_assert(std::atomic<int>::is_always_lock_free);
int depth = 0;
struct sigaction previous[std::size(kSignals)];

void note(int sig) {
  int none = 0;
  caught.compare_exchange_strong(none, sig);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  if (depth++ > 0) return;
  caught = 0;
  struct sigaction action {};
  action.sa_handler = note;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &action, &previous[i]);
}

InterruptGuard::~InterruptGuard() {
  if (--depth > 0) return;
  for (std::size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &previous[i], nullptr);
}

int interrupted_by() { return caught.load(); }

Interrupted::Interrupted(int signal)
    : std::runtime_error("interrupted by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")"),
      signal_(signal) {}

void check_interrupted() {
  if (const int sig = interrupted_by()) throw Interrupted(sig);
}

}  // namespace wanlab::base
