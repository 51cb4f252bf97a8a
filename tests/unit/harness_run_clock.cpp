// ClockSync: how the coordinator learns the clock of a process on another
// machine from its clock probes (the shortest round trip's offset), and moves
// times between the two clocks with their range checked.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <optional>

#include "coordinator/clock_sync.hpp"

namespace ctl = wanlab::harness::control;
namespace rd = wanlab::harness::run_detail;

namespace {

constexpr std::int64_t kMs = 1'000'000;

// The process's clock runs `offset` ahead of the coordinator's; probe i takes
// `out[i]` there and `back[i]` back. Returns the sync after every probe.
rd::ClockSync probed(std::int64_t offset, const std::int64_t (&out)[rd::ClockSync::kProbes],
                     const std::int64_t (&back)[rd::ClockSync::kProbes]) {
  rd::ClockSync sync;
  std::int64_t now = 1000 * kMs;
  std::optional<ctl::ClockProbe> probe = sync.first_probe(now);
  for (int i = 0; probe; ++i) {
    BOOST_TEST_REQUIRE(i < rd::ClockSync::kProbes);
    BOOST_TEST(probe->sequence == i);
    const std::int64_t at_process = probe->coordinator_ns + out[i] + offset;
    now = probe->coordinator_ns + out[i] + back[i];
    BOOST_TEST(!sync.known());
    probe = sync.reply(ctl::ClockReply{probe->sequence, probe->coordinator_ns, at_process}, now);
  }
  return sync;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_shortest_round_trip_gives_the_offset_within_half_of_it) {
  const std::int64_t offset = 123'456 * kMs;
  // The fourth probe is the shortest (2 + 4 ms), and lopsided: the offset is
  // off by half the difference of its two ways, 1 ms, within its bound of 3 ms.
  const rd::ClockSync sync =
      probed(offset, {20 * kMs, 9 * kMs, 30 * kMs, 2 * kMs, 8 * kMs, 15 * kMs, 7 * kMs, 40 * kMs},
             {25 * kMs, 9 * kMs, 1 * kMs, 4 * kMs, 8 * kMs, 15 * kMs, 7 * kMs, 40 * kMs});
  BOOST_TEST(sync.known());
  BOOST_TEST(sync.bound_ns() == 3 * kMs);
  BOOST_TEST(sync.offset_ns() == offset - 1 * kMs);
  BOOST_TEST(sync.to_coordinator(offset + 5000 * kMs) == 5001 * kMs);
  BOOST_TEST(sync.to_process(5001 * kMs) == offset + 5000 * kMs);
}

BOOST_AUTO_TEST_CASE(one_machine_has_one_clock) {
  rd::ClockSync sync;
  sync.same_clock();
  BOOST_TEST(sync.known());
  BOOST_TEST(sync.offset_ns() == 0);
  BOOST_TEST(sync.bound_ns() == 0);
  BOOST_TEST(sync.to_process(42) == 42);
  // Nothing was probed: a reply is out of turn.
  BOOST_CHECK_THROW(sync.reply(ctl::ClockReply{0, 1, 1}, 2), ctl::ControlError);
}

BOOST_AUTO_TEST_CASE(replies_out_of_turn_or_echoing_a_time_not_sent_are_refused) {
  {
    rd::ClockSync sync;
    sync.first_probe(100);
    BOOST_CHECK_THROW(sync.reply(ctl::ClockReply{1, 100, 5}, 200), ctl::ControlError);  // not the probe sent
  }
  {
    rd::ClockSync sync;
    sync.first_probe(100);
    BOOST_CHECK_THROW(sync.reply(ctl::ClockReply{0, 300, 5}, 200), ctl::ControlError);  // from the future
  }
  {
    rd::ClockSync sync;
    sync.first_probe(100);
    BOOST_CHECK_THROW(sync.reply(ctl::ClockReply{0, 100, -1}, 200), ctl::ControlError);
  }
}

BOOST_AUTO_TEST_CASE(a_time_beyond_the_clocks_range_is_a_malformed_message) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
  std::int64_t out[rd::ClockSync::kProbes], back[rd::ClockSync::kProbes];
  for (int i = 0; i < rd::ClockSync::kProbes; ++i) out[i] = back[i] = kMs;
  const rd::ClockSync ahead = probed(big, out, back);
  BOOST_CHECK_THROW(ahead.to_process(std::numeric_limits<std::int64_t>::max() - 1), ctl::ControlError);
  BOOST_CHECK_THROW(ahead.to_coordinator(std::numeric_limits<std::int64_t>::min() + 1), ctl::ControlError);
  BOOST_TEST(ahead.to_coordinator(big + 7) == 7);
}
