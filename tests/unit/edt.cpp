// The EDT arithmetic the tc program runs (bpf/wanlab_edt.h), tested directly.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "wanlab_edt.h"

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kMbit = 1'000'000;

std::uint32_t probability(double p) { return static_cast<std::uint32_t>(std::min(p * 4294967296.0, 4294967295.0)); }

wanlab_pair_config link(std::uint64_t rate_bps, std::uint64_t delay_ns = 0) {
  wanlab_pair_config config{};
  config.rate_bps = rate_bps;
  config.delay_ns = delay_ns;
  config.flags = WANLAB_PAIR_ENABLED;
  config.seed = 42;
  config.generation = 1;
  return config;
}

// A pair's config and state, stepped like the program steps them.
struct Pair {
  wanlab_pair_config config;
  wanlab_pair_state state{};
  wanlab_edt_result last{};

  explicit Pair(const wanlab_pair_config& c) : config(c) {}

  // Departure time, or nullopt-like 0 with `dropped` set.
  bool send(std::uint64_t now, std::uint64_t wire, wanlab_flow_state* flow = nullptr) {
    last = {};
    return wanlab_edt_step(&config, &state, flow, now, wire, &last) == WANLAB_EDT_PASS;
  }
  std::uint64_t depart(std::uint64_t now, std::uint64_t wire, wanlab_flow_state* flow = nullptr) {
    BOOST_REQUIRE(send(now, wire, flow));
    return last.depart_ns;
  }
};

// Binomial bounds: |count - n p| <= 5 sigma.
void check_binomial(std::uint64_t count, std::uint64_t n, double p) {
  double mean = static_cast<double>(n) * p;
  double sigma = std::sqrt(mean * (1 - p));
  BOOST_TEST_INFO("count " << count << " of " << n << ", expected " << mean << " +- 5*" << sigma);
  BOOST_TEST(std::fabs(static_cast<double>(count) - mean) <= 5 * sigma);
}

}  // namespace

BOOST_AUTO_TEST_CASE(tx_time_is_wire_bits_over_rate_rounded_up) {
  struct Case {
    std::uint64_t wire, rate, expected;
  } cases[] = {
      {1000, 1 * kMbit, 8 * kMs},     // exact
      {1500, 1'000'000'000, 12'000},  // 1 Gbit/s, exact
      {1514, 10'000'000'000, 1212},   // 1211.2 ns rounds up
      {1, 3, 2'666'666'667},          // 2666666666.67 rounds up
      {64, 100'000'000'000, 6},       // 5.12 ns rounds up
      {9000, 7 * kMbit, 10'285'715},  // 10285714.29 rounds up
      {0, kMbit, 0},
      {1500, 0, 0},  // rate 0: unlimited
  };
  for (const auto& c : cases) {
    BOOST_TEST_INFO(c.wire << " bytes at " << c.rate << " bit/s");
    BOOST_TEST(wanlab_edt_tx_ns(c.wire, c.rate) == c.expected);
  }
}

BOOST_AUTO_TEST_CASE(tx_time_never_runs_faster_than_the_rate) {
  for (std::uint64_t rate : {1ull, 999ull, 1'000'003ull, 2'500'000'000ull, 40'000'000'000ull}) {
    for (std::uint64_t wire : {1ull, 60ull, 1514ull, 65'535ull, 200'000ull}) {
      std::uint64_t tx = wanlab_edt_tx_ns(wire, rate);
      // tx is the smallest whole ns in which `rate` carries wire*8 bits
      // (all products stay below 2^64 for these sizes and rates).
      std::uint64_t bits_ns = wire * 8 * 1'000'000'000;
      BOOST_TEST_INFO(wire << " bytes at " << rate << " bit/s: " << tx << " ns");
      BOOST_TEST(tx * rate >= bits_ns);
      BOOST_TEST((tx - 1) * rate < bits_ns);
    }
  }
}

BOOST_AUTO_TEST_CASE(tx_time_of_huge_sizes_is_capped_not_overflowed) {
  std::uint64_t cap = wanlab_edt_tx_ns(WANLAB_EDT_MAX_WIRE_BYTES, 1);
  BOOST_TEST(cap == WANLAB_EDT_MAX_WIRE_BYTES * 8 * 1'000'000'000);
  BOOST_TEST(wanlab_edt_tx_ns(1ull << 40, 1) == cap);
  BOOST_TEST(wanlab_edt_tx_ns(~0ull, 8) == cap / 8);
}

BOOST_AUTO_TEST_CASE(wire_length_charges_every_gso_segment_its_headers) {
  BOOST_TEST(wanlab_edt_wire_bytes(1514, 0, 54) == 1514u);
  BOOST_TEST(wanlab_edt_wire_bytes(1514, 1, 54) == 1514u);
  // 3 TCP segments of 1000 bytes: one copy of the headers in len, two more on the wire.
  BOOST_TEST(wanlab_edt_wire_bytes(54 + 3000, 3, 54) == 3162u);
  // 44 segments of 1448 (a 64 KB TSO packet), IPv6: 14 + 40 + 32 (TCP with timestamps).
  BOOST_TEST(wanlab_edt_wire_bytes(86 + 44 * 1448, 44, 86) == 44u * (86 + 1448));
  BOOST_TEST(wanlab_edt_segments(0) == 1u);
  BOOST_TEST(wanlab_edt_segments(1) == 1u);
  BOOST_TEST(wanlab_edt_segments(44) == 44u);
}

BOOST_AUTO_TEST_CASE(backlogged_train_leaves_one_tx_time_apart) {
  Pair pair(link(1 * kMbit, 30 * kMs));
  const std::uint64_t t0 = 5'000'000'000, tx = 8 * kMs;
  for (std::uint64_t k = 0; k < 10; ++k) {
    std::uint64_t now = t0 + k * 1000;  // arriving much faster than the link drains
    std::uint64_t depart = pair.depart(now, 1000);
    BOOST_TEST(pair.last.start_ns == t0 + k * tx);
    BOOST_TEST(depart == t0 + (k + 1) * tx + 30 * kMs);
  }
  BOOST_TEST(pair.state.next_free_ns == t0 + 10 * tx);

  // Once the link has drained, a packet waits for nothing but its own bits.
  std::uint64_t later = t0 + 20 * tx;
  BOOST_TEST(pair.depart(later, 500) == later + 4 * kMs + 30 * kMs);
  BOOST_TEST(pair.last.start_ns == later);
}

BOOST_AUTO_TEST_CASE(unlimited_rate_adds_only_delay) {
  Pair pair(link(0, 12 * kMs));
  for (std::uint64_t now : {100ull, 100ull, 101ull, 5'000ull}) BOOST_TEST(pair.depart(now, 65'000) == now + 12 * kMs);
}

BOOST_AUTO_TEST_CASE(queue_limit_drops_when_the_backlog_exceeds_it) {
  wanlab_pair_config config = link(1 * kMbit);
  config.queue_limit_ns = 16 * kMs;  // two 8 ms packets
  Pair pair(config);
  BOOST_TEST(pair.send(0, 1000));   // backlog 0
  BOOST_TEST(pair.send(0, 1000));   // 8 ms
  BOOST_TEST(pair.send(0, 1000));   // 16 ms: at the limit, not beyond
  BOOST_TEST(!pair.send(0, 1000));  // 24 ms
  BOOST_TEST(pair.last.drop_reason == static_cast<std::uint32_t>(WANLAB_DROP_QUEUE));
  BOOST_TEST(pair.state.next_free_ns == 24 * kMs);  // a drop takes no link time
  BOOST_TEST(!pair.send(7 * kMs, 1000));            // 17 ms ahead
  BOOST_TEST(pair.send(8 * kMs, 1000));             // 16 ms ahead
  BOOST_TEST(pair.last.start_ns == 24 * kMs);
}

BOOST_AUTO_TEST_CASE(no_queue_limit_never_drops) {
  Pair pair(link(1 * kMbit));
  for (int i = 0; i < 1000; ++i) BOOST_TEST_REQUIRE(pair.send(0, 1500));
  BOOST_TEST(pair.state.next_free_ns == 1000 * wanlab_edt_tx_ns(1500, kMbit));
}

BOOST_AUTO_TEST_CASE(jitter_stays_within_its_bounds_and_covers_them) {
  wanlab_pair_config config = link(0, 10 * kMs);
  config.jitter_ns = 3 * kMs;
  config.flags |= WANLAB_PAIR_REORDER;  // look at the raw draws
  Pair pair(config);
  std::uint64_t low = ~0ull, high = 0;
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::uint64_t latency = pair.depart(1'000'000'000, 100) - 1'000'000'000;
    low = std::min(low, latency);
    high = std::max(high, latency);
    sum += static_cast<double>(latency);
  }
  BOOST_TEST(low >= 7 * kMs);
  BOOST_TEST(high <= 13 * kMs);
  BOOST_TEST(low < 7 * kMs + 10'000);  // 20000 draws reach within 10 us of both ends
  BOOST_TEST(high > 13 * kMs - 10'000);
  // Uniform over 6 ms: sigma of the mean is 6ms/sqrt(12 n) = 12 us.
  BOOST_TEST(std::fabs(sum / n - 10e6) < 5 * 12.3e3);
}

BOOST_AUTO_TEST_CASE(jitter_larger_than_delay_clamps_at_zero) {
  wanlab_pair_config config = link(0, 1 * kMs);
  config.jitter_ns = 5 * kMs;
  config.flags |= WANLAB_PAIR_REORDER;
  Pair pair(config);
  int zero = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::uint64_t depart = pair.depart(kMs * 1000, 100);
    BOOST_TEST_REQUIRE(depart >= kMs * 1000);
    BOOST_TEST_REQUIRE(depart <= kMs * 1000 + 6 * kMs);
    zero += depart == kMs * 1000;
  }
  // Offsets of -5..-1 ms all clamp: 4 ms of the 10 ms range (+1 ns).
  check_binomial(static_cast<std::uint64_t>(zero), n, 0.4);
}

BOOST_AUTO_TEST_CASE(jitter_keeps_order_unless_reordering_is_allowed) {
  for (bool reorder : {false, true}) {
    wanlab_pair_config config = link(0, 20 * kMs);
    config.jitter_ns = 5 * kMs;
    if (reorder) config.flags |= WANLAB_PAIR_REORDER;
    Pair pair(config);
    int inversions = 0;
    std::uint64_t previous = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) {
      std::uint64_t now = i * 100'000;  // 0.1 ms apart, jitter 10 ms wide
      std::uint64_t depart = pair.depart(now, 100);
      BOOST_TEST_REQUIRE(depart >= now + 15 * kMs);
      inversions += depart < previous;
      previous = std::max(previous, depart);
    }
    BOOST_TEST_INFO("reorder " << reorder);
    if (reorder)
      BOOST_TEST(inversions > 100);
    else
      BOOST_TEST(inversions == 0);
  }
}

BOOST_AUTO_TEST_CASE(bernoulli_loss_rate_and_repeatability) {
  auto losses = [](std::uint64_t seed) {
    wanlab_pair_config config = link(0);
    config.loss_p32 = probability(0.1);
    config.seed = seed;
    Pair pair(config);
    std::vector<bool> lost;
    for (int i = 0; i < 100000; ++i) {
      lost.push_back(!pair.send(0, 100));
      if (lost.back()) BOOST_TEST_REQUIRE(pair.last.drop_reason == std::uint32_t{WANLAB_DROP_LOSS});
    }
    return lost;
  };
  std::vector<bool> first = losses(7);
  check_binomial(static_cast<std::uint64_t>(std::count(first.begin(), first.end(), true)), first.size(), 0.1);
  BOOST_TEST((losses(7) == first));
  std::vector<bool> other = losses(8);
  BOOST_TEST((other != first));
  check_binomial(static_cast<std::uint64_t>(std::count(other.begin(), other.end(), true)), other.size(), 0.1);
}

BOOST_AUTO_TEST_CASE(loss_probability_zero_and_one_are_exact) {
  wanlab_pair_config config = link(0);
  Pair never(config);
  config.loss_p32 = 0xffffffffu;
  Pair always(config);
  for (int i = 0; i < 10000; ++i) {
    BOOST_TEST_REQUIRE(never.send(0, 100));
    BOOST_TEST_REQUIRE(!always.send(0, 100));
  }
}

BOOST_AUTO_TEST_CASE(gilbert_elliott_moves_between_states) {
  wanlab_pair_config config = link(0);
  config.loss_model = WANLAB_LOSS_GILBERT_ELLIOTT;
  config.ge_bad_loss32 = 0xffffffffu;  // the bad state loses everything
  config.ge_good_loss32 = 0;           // the good state nothing

  config.loss_p32 = 0;  // never leaves good
  Pair good(config);
  for (int i = 0; i < 1000; ++i) BOOST_TEST_REQUIRE(good.send(0, 100));
  BOOST_TEST(good.state.ge_bad == 0u);

  config.loss_p32 = 0xffffffffu;  // good -> bad at once
  config.ge_r32 = 0;              // and never back
  Pair stuck(config);
  for (int i = 0; i < 1000; ++i) BOOST_TEST_REQUIRE(!stuck.send(0, 100));
  BOOST_TEST(stuck.state.ge_bad == 1u);

  config.ge_r32 = 0xffffffffu;  // flips state on every packet
  Pair flip(config);
  for (int i = 0; i < 10; ++i) {
    BOOST_TEST(flip.send(0, 100) == (i % 2 == 1));  // bad, good, bad, ...
    BOOST_TEST(flip.state.ge_bad == (i % 2 == 0 ? 1u : 0u));
  }
}

BOOST_AUTO_TEST_CASE(gilbert_elliott_loss_rate_and_burst_length) {
  // p = 1%, r = 10%: bad a fraction p / (p + r) of the time, in bursts of mean 1 / r.
  wanlab_pair_config config = link(0);
  config.loss_model = WANLAB_LOSS_GILBERT_ELLIOTT;
  config.loss_p32 = probability(0.01);
  config.ge_r32 = probability(0.1);
  config.ge_bad_loss32 = 0xffffffffu;
  config.ge_good_loss32 = 0;
  Pair pair(config);
  const int n = 1'000'000;
  int lost = 0, bursts = 0;
  bool in_burst = false;
  for (int i = 0; i < n; ++i) {
    bool dropped = !pair.send(0, 100);
    lost += dropped;
    bursts += dropped && !in_burst;
    in_burst = dropped;
  }
  double rate = static_cast<double>(lost) / n;
  double burst = static_cast<double>(lost) / bursts;
  BOOST_TEST_INFO("loss rate " << rate << ", mean burst " << burst);
  BOOST_TEST(std::fabs(rate - 0.01 / 0.11) < 0.1 * 0.01 / 0.11);
  BOOST_TEST(std::fabs(burst - 10) < 0.5);
}

BOOST_AUTO_TEST_CASE(gilbert_elliott_good_state_losses) {
  wanlab_pair_config config = link(0);
  config.loss_model = WANLAB_LOSS_GILBERT_ELLIOTT;
  config.loss_p32 = 0;  // stays good
  config.ge_good_loss32 = probability(0.05);
  Pair pair(config);
  int lost = 0;
  for (int i = 0; i < 50000; ++i) lost += !pair.send(0, 100);
  check_binomial(static_cast<std::uint64_t>(lost), 50000, 0.05);
}

BOOST_AUTO_TEST_CASE(new_generation_resets_state_and_reseeds) {
  wanlab_pair_config config = link(1 * kMbit);
  config.seed = 1234;
  Pair pair(config);
  for (int i = 0; i < 5; ++i) pair.send(0, 1000);
  BOOST_TEST(pair.state.next_free_ns == 40 * kMs);
  BOOST_TEST(pair.state.generation == 1u);

  pair.config.seed = 99;  // same generation: the state carries on
  pair.send(kMs, 1000);
  BOOST_TEST(pair.state.next_free_ns == 48 * kMs);
  // Nothing drawn yet (no loss, no jitter): still the state of the first seed.
  BOOST_TEST(pair.state.rng == wanlab_edt_seed_state(1234));

  pair.config.generation = 2;
  BOOST_TEST(pair.depart(2 * kMs, 1000) == 10 * kMs);  // empty link again
  BOOST_TEST(pair.state.generation == 2u);
  BOOST_TEST(pair.state.rng == wanlab_edt_seed_state(99));
}

BOOST_AUTO_TEST_CASE(seeds_give_distinct_nonzero_generator_states) {
  // Neighbouring seeds (2k, 2k+1) must not share a stream, and no seed may
  // leave xorshift at its fixed point 0.
  std::vector<std::uint64_t> states;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) states.push_back(wanlab_edt_seed_state(seed));
  std::sort(states.begin(), states.end());
  BOOST_TEST((std::adjacent_find(states.begin(), states.end()) == states.end()));
  BOOST_TEST(states.front() != 0u);
  // The seed whose hash is 0 (splitmix64's inverse of 0) still gets a state.
  BOOST_TEST(wanlab_edt_seed_state(0x61c8864680b583ebull) != 0u);
}

BOOST_AUTO_TEST_CASE(zeroed_state_is_seeded_even_for_generation_zero) {
  // The map starts zeroed; a config of generation 0 must not meet rng == 0
  // (xorshift's fixed point would make every loss draw 0, i.e. lose it).
  wanlab_pair_config config = link(0);
  config.generation = 0;
  config.loss_p32 = probability(0.5);
  Pair pair(config);
  int lost = 0;
  for (int i = 0; i < 10000; ++i) lost += !pair.send(0, 100);
  check_binomial(static_cast<std::uint64_t>(lost), 10000, 0.5);
}

BOOST_AUTO_TEST_CASE(flow_cap_spaces_each_flow_at_its_own_rate) {
  wanlab_pair_config config = link(100 * kMbit, 5 * kMs);
  config.flow_rate_bps = 1 * kMbit;
  Pair pair(config);
  wanlab_flow_state a{}, b{};
  const std::uint64_t t0 = kMs * 1000, flow_tx = 8 * kMs;
  // Flow a sends a burst of 10, then flow b: b must not queue behind a.
  std::vector<std::uint64_t> departs_a, departs_b;
  for (int i = 0; i < 10; ++i) departs_a.push_back(pair.depart(t0, 1000, &a));
  for (int i = 0; i < 10; ++i) departs_b.push_back(pair.depart(t0 + 1000, 1000, &b));
  for (std::size_t i = 0; i < 10; ++i) {
    BOOST_TEST(departs_a[i] == t0 + (i + 1) * flow_tx + 5 * kMs);
    BOOST_TEST(departs_b[i] == t0 + 1000 + (i + 1) * flow_tx + 5 * kMs);
  }
  // The link (80 us per packet) carried all 20 back to back meanwhile.
  BOOST_TEST(pair.state.next_free_ns == t0 + 20 * wanlab_edt_tx_ns(1000, 100 * kMbit));

  // A packet without a flow (not TCP/UDP) waits only for the link.
  std::uint64_t link_done = pair.state.next_free_ns + wanlab_edt_tx_ns(1000, 100 * kMbit);
  BOOST_TEST(pair.depart(t0 + 2000, 1000) == link_done + 5 * kMs);
}

BOOST_AUTO_TEST_CASE(flow_cap_slower_link_dominates) {
  wanlab_pair_config config = link(1 * kMbit);
  config.flow_rate_bps = 10 * kMbit;
  Pair pair(config);
  wanlab_flow_state flow{};
  for (std::uint64_t k = 1; k <= 5; ++k) BOOST_TEST(pair.depart(0, 1000, &flow) == k * 8 * kMs);
  BOOST_TEST(flow.next_free_ns == 5 * 800'000u);
}

BOOST_AUTO_TEST_CASE(flow_backlog_is_held_to_the_queue_limit) {
  wanlab_pair_config config = link(0);
  config.flow_rate_bps = 1 * kMbit;
  config.queue_limit_ns = 20 * kMs;
  Pair pair(config);
  wanlab_flow_state flow{};
  BOOST_TEST(pair.send(0, 1000, &flow));   // flow backlog 0
  BOOST_TEST(pair.send(0, 1000, &flow));   // 8 ms
  BOOST_TEST(pair.send(0, 1000, &flow));   // 16 ms
  BOOST_TEST(!pair.send(0, 1000, &flow));  // 24 ms
  BOOST_TEST(pair.last.drop_reason == std::uint32_t{WANLAB_DROP_QUEUE});
  BOOST_TEST(flow.next_free_ns == 24 * kMs);
}

BOOST_AUTO_TEST_CASE(flow_state_follows_the_generation) {
  wanlab_pair_config config = link(0);
  config.flow_rate_bps = 1 * kMbit;
  Pair pair(config);
  wanlab_flow_state flow{};
  for (int i = 0; i < 5; ++i) pair.send(0, 1000, &flow);
  BOOST_TEST(flow.next_free_ns == 40 * kMs);
  pair.config.generation = 7;
  BOOST_TEST(pair.depart(kMs, 1000, &flow) == 9 * kMs);
  BOOST_TEST(flow.generation == 7u);
}

BOOST_AUTO_TEST_CASE(dropped_packets_leave_the_flow_untouched) {
  wanlab_pair_config config = link(0);
  config.flow_rate_bps = 1 * kMbit;
  config.loss_p32 = 0xffffffffu;
  Pair pair(config);
  wanlab_flow_state flow{};
  BOOST_TEST(!pair.send(0, 1000, &flow));
  BOOST_TEST(flow.next_free_ns == 0u);
  BOOST_TEST(flow.last_depart_ns == 0u);
}

BOOST_AUTO_TEST_CASE(hold_mark_encodes_microseconds_under_the_hold_bit) {
  const std::uint64_t now = 123'456'789'000;
  BOOST_TEST(wanlab_edt_hold_mark(now, now) == 0u);
  BOOST_TEST(wanlab_edt_hold_mark(now + 1000, now) == 0u);  // due within 1 us
  std::uint32_t mark = wanlab_edt_hold_mark(now + 1001, now);
  BOOST_TEST((mark & WANLAB_MARK_HOLD) != 0u);
  BOOST_TEST((mark & WANLAB_MARK_TIME_MASK) == (now + 1001) / 1000);
  mark = wanlab_edt_hold_mark(now + 50 * kMs, now);
  BOOST_TEST(mark == (WANLAB_MARK_HOLD | ((now + 50 * kMs) / 1000)));
}

namespace {

std::uint32_t mark_for(std::uint64_t depart_ns) {
  return WANLAB_MARK_HOLD | static_cast<std::uint32_t>((depart_ns / 1000) & WANLAB_MARK_TIME_MASK);
}

}  // namespace

// The releaser's decoding (wanlab_edt_mark_depart_ns): a departure ahead comes
// back to the microsecond, across the 31-bit wrap of the microsecond counter;
// one in the past is due now.
BOOST_AUTO_TEST_CASE(hold_mark_decodes_ahead_of_now_and_the_past_as_now) {
  const std::uint64_t period_ns = (1ull << 31) * 1000;  // about 35.8 minutes
  const std::uint64_t nows[] = {5'000'000, 3 * period_ns - 2 * kMs, 3 * period_ns + 2 * kMs, 3 * period_ns - 1,
                                1'000'000'000'000'000};
  for (std::uint64_t now : nows) {
    for (std::uint64_t ahead : {std::uint64_t{1001}, std::uint64_t{2000}, 10 * kMs, 60'000 * kMs, 600'000 * kMs}) {
      const std::uint64_t depart = now + ahead;
      BOOST_TEST_INFO("now " << now << ", depart " << depart);
      BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for(depart), now) == depart / 1000 * 1000);
    }
    for (std::uint64_t behind : {std::uint64_t{1000}, 3 * kMs, 60'000 * kMs}) {
      if (behind > now) continue;
      BOOST_TEST_INFO("now " << now << ", " << behind << " ns in the past");
      BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for(now - behind), now) == now);
    }
  }
}

BOOST_AUTO_TEST_CASE(hold_mark_edges_of_the_window) {
  const std::uint64_t now = 5'000'000'123'456ull;
  const std::uint64_t now_us = now / 1000;
  // The same microsecond as now: due now (not a period later).
  BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for(now), now) == now_us * 1000);
  // Just inside half the period ahead: the future; at half the period: the past.
  const std::uint64_t half_us = (std::uint64_t{WANLAB_MARK_TIME_MASK} + 1) / 2;
  BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for((now_us + half_us - 1) * 1000), now) == (now_us + half_us - 1) * 1000);
  BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for((now_us + half_us) * 1000), now) == now);
  // A mark just behind the wrap, read just after it: 1 us in the past.
  const std::uint64_t wrap_ns = (std::uint64_t{WANLAB_MARK_TIME_MASK} + 1) * 1000 * 7;
  BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for(wrap_ns - 1000), wrap_ns + 500) == wrap_ns + 500);
  // ... and one just after the wrap, read just before it: 2 us ahead.
  BOOST_TEST(wanlab_edt_mark_depart_ns(mark_for(wrap_ns + 1000), wrap_ns - 1000) == wrap_ns + 1000);
  // What the tc program encodes, the releaser decodes.
  BOOST_TEST(wanlab_edt_mark_depart_ns(wanlab_edt_hold_mark(now + 25 * kMs, now), now) ==
             (now + 25 * kMs) / 1000 * 1000);
}

// ---- schedules ----------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_schedule_position_wraps_with_its_period) {
  wanlab_sched_head head{};
  head.start_ns = 1000 * kMs;
  auto pos = [&](std::uint64_t t) { return wanlab_edt_sched_pos(&head, t); };
  BOOST_TEST(pos(500 * kMs).offset_ns == 0u);  // before the start: the first step
  BOOST_TEST(pos(500 * kMs).base_ns == 1000 * kMs);
  BOOST_TEST(pos(4500 * kMs).offset_ns == 3500 * kMs);  // no period: for ever
  head.period_ns = 1000 * kMs;
  BOOST_TEST(pos(4500 * kMs).offset_ns == 500 * kMs);
  BOOST_TEST(pos(4500 * kMs).base_ns == 4000 * kMs);
  BOOST_TEST(pos(5000 * kMs).offset_ns == 0u);
  BOOST_TEST(pos(5000 * kMs).base_ns == 5000 * kMs);
}

BOOST_AUTO_TEST_CASE(cross_traffic_leaves_the_rest_of_the_rate) {
  BOOST_TEST(wanlab_edt_rate_left(100 * kMbit, 0) == 100 * kMbit);
  BOOST_TEST(wanlab_edt_rate_left(100 * kMbit, 1u << 31) == 50 * kMbit);
  BOOST_TEST(wanlab_edt_rate_left(100 * kMbit, 3u << 30) == 25 * kMbit);
  BOOST_TEST(wanlab_edt_rate_left(100 * kMbit, 0xffffffffu) == 0u);
  // Terabit rates do not overflow.
  const std::uint64_t tbit = 1'000'000'000'000ull;
  BOOST_TEST(wanlab_edt_rate_left(10 * tbit, 1u << 31) == 5 * tbit);
}

BOOST_AUTO_TEST_CASE(a_step_changes_only_the_columns_it_has) {
  wanlab_sched_step step{};
  step.rate_bps = 10 * kMbit;
  step.delay_ns = 80 * kMs;
  step.loss_p32 = probability(0.01);
  step.share_p32 = 1u << 31;
  wanlab_pair_config config = link(100 * kMbit, 20 * kMs);
  wanlab_pair_config changed = config;
  wanlab_edt_sched_apply(&changed, WANLAB_SCHED_DELAY, &step);
  BOOST_TEST(changed.rate_bps == 100 * kMbit);
  BOOST_TEST(changed.delay_ns == 80 * kMs);
  BOOST_TEST(changed.loss_p32 == 0u);
  changed = config;
  wanlab_edt_sched_apply(&changed, WANLAB_SCHED_SHARE, &step);  // half the pair's rate
  BOOST_TEST(changed.rate_bps == 50 * kMbit);
  changed = config;
  wanlab_edt_sched_apply(&changed, WANLAB_SCHED_RATE | WANLAB_SCHED_SHARE | WANLAB_SCHED_LOSS, &step);
  BOOST_TEST(changed.rate_bps == 5 * kMbit);
  BOOST_TEST(changed.loss_p32 == probability(0.01));
  BOOST_TEST(changed.delay_ns == 20 * kMs);
  // Rate 0 pauses; without a rate or share column nothing pauses.
  step.rate_bps = 0;
  BOOST_TEST(wanlab_edt_sched_paused(&config, WANLAB_SCHED_RATE, &step));
  BOOST_TEST(!wanlab_edt_sched_paused(&config, WANLAB_SCHED_DELAY, &step));
}

BOOST_AUTO_TEST_CASE(the_link_starts_nothing_before_the_earliest_start) {
  Pair pair(link(8 * kMbit));  // 1000 bytes: 1 ms
  wanlab_edt_result res{};
  BOOST_REQUIRE(wanlab_edt_step_from(&pair.config, &pair.state, nullptr, 0, 50 * kMs, 1000, &res) == WANLAB_EDT_PASS);
  BOOST_TEST(res.start_ns == 50 * kMs);
  BOOST_TEST(res.depart_ns == 51 * kMs);
  // The queue limit counts the wait for the earliest start.
  pair.config.queue_limit_ns = 40 * kMs;
  BOOST_TEST(wanlab_edt_step_from(&pair.config, &pair.state, nullptr, 0, 50 * kMs, 1000, &res) == WANLAB_EDT_DROP);
  BOOST_TEST(res.drop_reason == static_cast<std::uint32_t>(WANLAB_DROP_QUEUE));
}
