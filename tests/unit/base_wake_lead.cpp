// base::WakeLead: how early a timer is set, learned from the wake-ups so far
// (twice their weighted mean, within bounds), and spin_until_ns.
#include <boost/test/unit_test.hpp>

#include "wanlab/base/clock.hpp"
#include "wanlab/base/wake_lead.hpp"

using wanlab::base::WakeLead;

BOOST_AUTO_TEST_CASE(the_lead_is_twice_the_mean_latency_within_bounds) {
  WakeLead lead;
  for (int i = 0; i < 100; ++i) lead.learn(60'000);
  BOOST_TEST(lead.lead_ns() >= 119'000u);
  BOOST_TEST(lead.lead_ns() <= 120'000u);
  for (int i = 0; i < 100; ++i) lead.learn(0);  // punctual wake-ups: down to the floor
  BOOST_TEST(lead.lead_ns() == WakeLead::kMinNs);
  for (int i = 0; i < 100; ++i) lead.learn(5'000'000);  // a stalled box: up to the ceiling
  BOOST_TEST(lead.lead_ns() == WakeLead::kMaxNs);
}

BOOST_AUTO_TEST_CASE(one_slow_wake_up_moves_the_lead_by_an_eighth) {
  WakeLead lead;
  for (int i = 0; i < 100; ++i) lead.learn(20'000);
  const auto before = lead.lead_ns();
  lead.learn(20'000 + 800'000);
  BOOST_TEST(lead.lead_ns() - before >= 199'000u);  // 2 x 800 us / 8
  BOOST_TEST(lead.lead_ns() - before <= 200'000u);
}

BOOST_AUTO_TEST_CASE(spin_until_returns_at_or_after_its_time) {
  const std::int64_t at = wanlab::base::monotonic_ns() + 200'000;
  const std::int64_t returned = wanlab::base::spin_until_ns(at);
  BOOST_TEST(returned >= at);
  BOOST_TEST(wanlab::base::monotonic_ns() >= returned);
  BOOST_TEST(wanlab::base::spin_until_ns(0) > 0);  // a time passed returns at once
}
