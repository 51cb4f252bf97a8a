#include "interrupts.hpp"

#include <signal.h>

#include <iterator>

namespace wanlab::harness::run_detail {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t caught = 0;
int depth = 0;
struct sigaction previous[std::size(kSignals)];

void note(int sig) {
  if (!caught) caught = sig;
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

int interrupted_by() { return caught; }

}  // namespace wanlab::harness::run_detail
