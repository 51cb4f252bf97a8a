// The emulated GPU: busy intervals never overlap, idle gaps are exactly the
// complement, and compute holds the GPU for the planned duration.
#include <boost/test/unit_test.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <stdexcept>

#include "wanlab/harness/run/gpu.hpp"

using wanlab::harness::ComputeHold;
using wanlab::harness::EmulatedGpu;
using wanlab::harness::monotonic_ns;
using wanlab::harness::RecentMax;

BOOST_AUTO_TEST_CASE(reservations_never_overlap) {
  EmulatedGpu gpu;
  gpu.reserve(100, 50, "F0");   // [100, 150)
  gpu.reserve(300, 100, "B0");  // [300, 400)
  gpu.reserve(150, 10, "F1");   // touching is fine: [150, 160)
  BOOST_CHECK_THROW(gpu.reserve(140, 20, "prefill 1"), std::logic_error);
  BOOST_CHECK_THROW(gpu.reserve(250, 60, "prefill 2"), std::logic_error);
  BOOST_CHECK_THROW(gpu.reserve(310, 1, "prefill 3"), std::logic_error);
  try {
    gpu.reserve(390, 20, "prefill 4");
  } catch (const std::logic_error& error) {
    BOOST_TEST(std::string(error.what()).find("prefill 4 [390, 410) overlaps B0 [300, 400)") != std::string::npos);
  }
  BOOST_TEST(gpu.busy().size() == 3u);
  BOOST_TEST(gpu.busy()[1].what == "F1");  // kept in time order
}

BOOST_AUTO_TEST_CASE(idle_gaps_are_the_complement_of_busy_time) {
  EmulatedGpu gpu;
  gpu.reserve(100, 50, "F0");
  gpu.reserve(300, 100, "B0");
  const auto gaps = gpu.idle(0, 500);
  BOOST_REQUIRE(gaps.size() == 3u);
  BOOST_TEST(gaps[0].start_ns == 0);
  BOOST_TEST(gaps[0].end_ns == 100);
  BOOST_TEST(gaps[1].start_ns == 150);
  BOOST_TEST(gaps[1].end_ns == 300);
  BOOST_TEST(gaps[2].start_ns == 400);
  BOOST_TEST(gaps[2].end_ns == 500);
  BOOST_TEST(gpu.busy_ns(0, 500) == 150);
  BOOST_TEST(gpu.busy_ns(120, 320) == 50);  // clipped at both ends
  // A gap can be lent: reserving inside it works and removes it.
  gpu.reserve(150, 150, "prefill 0");
  BOOST_TEST(gpu.idle(100, 400).empty());
  gpu.forget_before(200);
  BOOST_TEST(gpu.busy().size() == 2u);
}

BOOST_AUTO_TEST_CASE(compute_holds_the_gpu_for_the_planned_duration) {
  asio::io_context io;
  EmulatedGpu gpu;
  std::vector<EmulatedGpu::Interval> done;
  std::int64_t woke_at = 0;
  const std::int64_t before = monotonic_ns();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        done.push_back(co_await gpu.compute(io.get_executor(), 30'000'000, "F0"));
        done.push_back(co_await gpu.compute(io.get_executor(), 20'000'000, "B0"));
        woke_at = monotonic_ns();
      },
      asio::detached);
  io.run();
  BOOST_REQUIRE(done.size() == 2u);
  BOOST_TEST(done[0].start_ns >= before);
  BOOST_TEST(done[0].end_ns - done[0].start_ns == 30'000'000);
  BOOST_TEST(done[1].start_ns >= done[0].end_ns);
  BOOST_TEST(done[1].end_ns - done[1].start_ns == 20'000'000);
  // The worker resumes at or after the planned end (timers never fire early);
  // a loaded machine may add lag, so only a generous upper bound.
  BOOST_TEST(woke_at >= done[1].end_ns);
  BOOST_TEST(woke_at - before < 2'000'000'000);
}

// A compute's timer aims early (base::WakeLead) and spins the rest: across
// many short ops, none ends before its planned end, each records how late it
// ended, and the time between start and resume is never below the op.
BOOST_AUTO_TEST_CASE(a_timer_set_early_never_ends_a_compute_early) {
  asio::io_context io;
  EmulatedGpu gpu;
  std::vector<std::int64_t> resumed_late;
  std::vector<EmulatedGpu::Interval> done;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int op = 0; op < 60; ++op) {
          done.push_back(co_await gpu.compute(io.get_executor(), 2'000'000, "F" + std::to_string(op)));
          resumed_late.push_back(monotonic_ns() - done.back().end_ns);
        }
      },
      asio::detached);
  io.run();
  BOOST_REQUIRE(done.size() == 60u);
  for (std::size_t op = 0; op < done.size(); ++op) {
    BOOST_TEST(resumed_late[op] >= 0, "op " << op << " resumed " << -resumed_late[op] << " ns before its end");
    BOOST_TEST(done[op].woke_late_ns >= 0);
    BOOST_TEST(done[op].woke_late_ns <= resumed_late[op]);
  }
}

// A recent maximum forgets a value 100 values later; a compute's hold is a
// wake-up's latency given and the largest recent reaction after it.
BOOST_AUTO_TEST_CASE(a_compute_hold_is_a_wake_up_and_the_largest_recent_reaction) {
  RecentMax recent;
  BOOST_TEST(recent.max() == 0u);
  recent.learn(2'000'000);  // one slow wake-up
  for (std::size_t i = 0; i + 1 < RecentMax::kSamples; ++i) recent.learn(10'000);
  BOOST_TEST(recent.max() == 2'000'000u);  // still among the last 100
  recent.learn(10'000);
  BOOST_TEST(recent.max() == 10'000u);  // 100 values later it is forgotten

  ComputeHold hold;
  BOOST_TEST(hold.hold_ns(80'000) == 80'000u);  // before any reaction: the wake-up alone
  hold.learn(30'000);
  hold.learn(5'000);
  BOOST_TEST(hold.hold_ns(80'000) == 110'000u);
}
