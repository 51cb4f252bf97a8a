#include "wanlab/base/idle_poll.hpp"

#include "wanlab/base/wake_lead.hpp"  // cpu_relax

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <future>
#include <system_error>

namespace wanlab::base {
namespace {

// Pins the calling thread to `cpu` at SCHED_IDLE; false if either fails.
bool become_idle_poller(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (::pthread_setaffinity_np(::pthread_self(), sizeof(one), &one) != 0) return false;
  sched_param none{};
  return ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) == 0;
}

// Spins while `active`, sleeps while not, returns once `stopping` (whoever
// sets it also sets `active` and wakes the sleepers).
void spin(const std::atomic<bool>& stopping, const std::atomic<bool>& active) {
  while (!stopping.load(std::memory_order_relaxed)) {
    if (!active.load(std::memory_order_relaxed))
      active.wait(false);
    else
      cpu_relax();
  }
}

}  // namespace

IdlePollers::IdlePollers() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    // The thread owns its promise: it may still be inside set_value when get() returns here.
    std::promise<bool> ready;
    auto is_ready = ready.get_future();
    try {
      threads_.emplace_back([this, cpu, ready = std::move(ready)]() mutable {
        const bool ok = become_idle_poller(cpu);
        ready.set_value(ok);
        if (ok) spin(stopping_, active_);
      });
    } catch (const std::system_error&) {
      break;  // no more threads: polling is a help, not a need
    }
    if (!is_ready.get()) continue;  // that thread returns at once
    clockid_t clock{};
    if (::pthread_getcpuclockid(threads_.back().native_handle(), &clock) == 0) clocks_.push_back(clock);
    running_++;
  }
}

IdlePollers::~IdlePollers() {
  stopping_ = true;
  set_active(true);
  for (std::thread& thread : threads_) thread.join();
}

void IdlePollers::set_active(bool active) {
  if (active_.exchange(active) != active && active) active_.notify_all();
}

std::uint64_t IdlePollers::busy_ticks() const {
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  std::uint64_t ns = 0;
  for (clockid_t clock : clocks_) {
    timespec used{};
    if (::clock_gettime(clock, &used) == 0)
      ns += static_cast<std::uint64_t>(used.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(used.tv_nsec);
  }
  return ticks_per_second > 0 ? ns / (1'000'000'000u / static_cast<std::uint64_t>(ticks_per_second)) : 0;
}

}  // namespace wanlab::base
