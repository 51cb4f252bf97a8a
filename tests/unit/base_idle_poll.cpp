// base::IdlePollers: one SCHED_IDLE spinner per CPU, which takes idle time
// only, and says how much it took.
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <thread>

#include "wanlab/base/clock.hpp"
#include "wanlab/base/idle_poll.hpp"

namespace {

std::uint64_t thread_cpu_ns() {
  timespec used{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
  return static_cast<std::uint64_t>(used.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(used.tv_nsec);
}

// The share of 300 ms of wall time a busy thread pinned to `cpu` gets.
double busy_share_on(int cpu) {
  double share = 0;
  std::thread busy([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ::pthread_setaffinity_np(::pthread_self(), sizeof(one), &one);
    const std::int64_t start = wanlab::base::monotonic_ns();
    const std::uint64_t cpu_start = thread_cpu_ns();
    while (wanlab::base::monotonic_ns() - start < 300'000'000) {
    }
    share =
        static_cast<double>(thread_cpu_ns() - cpu_start) / static_cast<double>(wanlab::base::monotonic_ns() - start);
  });
  busy.join();
  return share;
}

int first_allowed_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ::sched_getaffinity(0, sizeof(allowed), &allowed);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  return 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_poller_per_allowed_cpu_and_they_take_idle_time) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  BOOST_REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  wanlab::base::IdlePollers pollers;
  BOOST_TEST(pollers.count() == static_cast<std::size_t>(CPU_COUNT(&allowed)));
  // While this thread sleeps, some CPU is idle sooner or later, and its
  // poller spins there.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pollers.busy_ticks() == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(pollers.busy_ticks() > 0u);
}

BOOST_AUTO_TEST_CASE(a_busy_thread_keeps_its_cpu_beside_a_poller) {
  const int cpu = first_allowed_cpu();
  const double alone = busy_share_on(cpu);
  double beside = 0;
  {
    wanlab::base::IdlePollers pollers;
    BOOST_REQUIRE(pollers.count() > 0u);
    beside = busy_share_on(cpu);
  }
  // A poller of normal priority would take about half; SCHED_IDLE takes next
  // to nothing (the margin is for whatever else a loaded machine runs).
  BOOST_TEST_MESSAGE("busy thread's share of its CPU: alone " << alone << ", beside a poller " << beside);
  BOOST_TEST(beside >= alone - 0.15);
}

BOOST_AUTO_TEST_CASE(paused_pollers_take_no_cpu_time_and_resume) {
  wanlab::base::IdlePollers pollers;
  BOOST_REQUIRE(pollers.count() > 0u);
  pollers.set_active(false);
  BOOST_TEST(!pollers.active());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // each sees the pause
  const std::uint64_t paused_at = pollers.busy_ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Asleep on a futex, not spinning: the CPUs idle for half a second would
  // have given them about 50 ticks each. A tick each is rounding.
  BOOST_TEST(pollers.busy_ticks() - paused_at <= pollers.count());
  pollers.set_active(true);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pollers.busy_ticks() <= paused_at + pollers.count() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(pollers.busy_ticks() > paused_at + pollers.count());
}

BOOST_AUTO_TEST_CASE(paused_pollers_stop_when_destroyed) {
  const auto start = std::chrono::steady_clock::now();
  {
    wanlab::base::IdlePollers pollers;
    pollers.set_active(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // joins threads asleep on the pause: they must be woken
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  BOOST_TEST(took.count() < 5000);
}
