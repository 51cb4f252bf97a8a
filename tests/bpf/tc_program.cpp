// The tc program itself, loaded with Datapath::load and run on packet fixtures
// through BPF_PROG_TEST_RUN (__sk_buff in and out). Needs root.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <linux/pkt_cls.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "wanlab/base/clock.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/schedule.hpp"
#include "wanlab_edt.h"

using wanlab::emulator::Datapath;

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kMbit = 1'000'000;
constexpr int kDcs = 3;

// The data plane's clock (base/clock.hpp), unsigned as its timestamps are.
std::uint64_t monotonic_ns() { return static_cast<std::uint64_t>(wanlab::base::monotonic_ns()); }

// ---- packets -------------------------------------------------------------

using Bytes = std::vector<std::uint8_t>;

void put16(Bytes& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value));
}

Bytes address(const std::string& text) {
  Bytes out(text.find(':') == std::string::npos ? 4 : 16);
  int family = out.size() == 4 ? AF_INET : AF_INET6;
  BOOST_REQUIRE_MESSAGE(inet_pton(family, text.c_str(), out.data()) == 1, "address " << text);
  return out;
}

Bytes ethernet(std::uint16_t ethertype) {
  Bytes out{0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  put16(out, ethertype);
  return out;
}

struct Spec {
  std::string src, dst;  // IPv4 or IPv6
  int proto = IPPROTO_UDP;
  std::uint16_t sport = 4000, dport = 5000;
  std::size_t frame_len = 0;  // padded with payload up to this; 0: headers only
  std::size_t tcp_option_bytes = 0;
  std::size_t ip_option_bytes = 0;  // IPv4
};

Bytes l4_header(const Spec& spec) {
  Bytes out;
  if (spec.proto == IPPROTO_TCP) {
    put16(out, spec.sport);
    put16(out, spec.dport);
    out.insert(out.end(), 8, 0);  // seq, ack
    out.push_back(static_cast<std::uint8_t>(((20 + spec.tcp_option_bytes) / 4) << 4));
    out.push_back(0x10);  // ACK
    put16(out, 65535);
    out.insert(out.end(), 4, 0);                      // checksum, urgent
    out.insert(out.end(), spec.tcp_option_bytes, 1);  // NOPs
  } else if (spec.proto == IPPROTO_UDP) {
    put16(out, spec.sport);
    put16(out, spec.dport);
    out.insert(out.end(), 4, 0);  // length filled in by frame()
  } else {
    out = {8, 0, 0, 0, 0, 0, 0, 1};  // ICMP echo request
  }
  return out;
}

Bytes frame(const Spec& spec) {
  Bytes src = address(spec.src), dst = address(spec.dst);
  bool v6 = src.size() == 16;
  Bytes l4 = l4_header(spec);
  std::size_t l3_len = v6 ? 40 : 20 + spec.ip_option_bytes;
  std::size_t headers = 14 + l3_len + l4.size();
  l4.resize(l4.size() + (spec.frame_len > headers ? spec.frame_len - headers : 0), 0xab);
  if (spec.proto == IPPROTO_UDP) {
    l4[4] = static_cast<std::uint8_t>(l4.size() >> 8);
    l4[5] = static_cast<std::uint8_t>(l4.size());
  }

  Bytes out = ethernet(v6 ? 0x86dd : 0x0800);
  if (v6) {
    out.insert(out.end(), {0x60, 0, 0, 0});
    put16(out, static_cast<std::uint16_t>(l4.size()));
    out.push_back(static_cast<std::uint8_t>(spec.proto == IPPROTO_ICMP ? IPPROTO_ICMPV6 : spec.proto));
    out.push_back(64);
  } else {
    out.push_back(static_cast<std::uint8_t>(0x40 | (l3_len / 4)));
    out.push_back(0);
    put16(out, static_cast<std::uint16_t>(l3_len + l4.size()));
    out.insert(out.end(), {0, 1, 0x40, 0});  // id 1, DF
    out.push_back(64);
    out.push_back(static_cast<std::uint8_t>(spec.proto));
    put16(out, 0);  // checksum: nothing here checks it
  }
  out.insert(out.end(), src.begin(), src.end());
  out.insert(out.end(), dst.begin(), dst.end());
  out.insert(out.end(), spec.ip_option_bytes, 1);  // NOPs
  out.insert(out.end(), l4.begin(), l4.end());
  return out;
}

// ---- running the program ------------------------------------------------

struct SkbIn {
  std::uint32_t mark = 0;
  std::uint64_t tstamp = 0;
  std::uint32_t gso_segs = 0;
  std::uint32_t gso_size = 0;
};

struct Outcome {
  int verdict = -1;
  std::uint32_t mark = 0;
  std::uint64_t tstamp = 0;
  std::uint64_t before = 0, after = 0;  // CLOCK_MONOTONIC around the run
};

Outcome run(const Datapath& datapath, const Bytes& packet, const SkbIn& in = {}) {
  __sk_buff ctx{};
  ctx.mark = in.mark;
  ctx.tstamp = in.tstamp;
  ctx.gso_segs = in.gso_segs;
  ctx.gso_size = in.gso_size;
  bpf_test_run_opts opts{};
  opts.sz = sizeof(opts);
  opts.data_in = packet.data();
  opts.data_size_in = static_cast<__u32>(packet.size());
  opts.ctx_in = &ctx;
  opts.ctx_size_in = sizeof(ctx);
  opts.ctx_out = &ctx;
  opts.ctx_size_out = sizeof(ctx);
  opts.repeat = 1;
  Outcome out;
  out.before = monotonic_ns();
  int err = bpf_prog_test_run_opts(datapath.program_fd(), &opts);
  out.after = monotonic_ns();
  BOOST_REQUIRE_MESSAGE(err == 0, "BPF_PROG_TEST_RUN: " << std::strerror(errno));
  out.verdict = static_cast<int>(opts.retval);
  out.mark = ctx.mark;
  out.tstamp = ctx.tstamp;
  return out;
}

// ---- a three-DC datapath ------------------------------------------------

wanlab_pair_config link(std::uint64_t rate_bps, std::uint64_t delay_ns = 0) {
  wanlab_pair_config config{};
  config.rate_bps = rate_bps;
  config.delay_ns = delay_ns;
  config.flags = WANLAB_PAIR_ENABLED;
  config.seed = 42;
  config.generation = 1;
  return config;
}

std::array<std::uint8_t, 16> v6(const std::string& text) {
  Bytes bytes = address(text);
  std::array<std::uint8_t, 16> out{};
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return out;
}

// DC d owns 10.d.0.0/16 and 2001:db8:d::/48; two more specific prefixes
// cut into DC 1's space so that longest-prefix match shows.
struct ThreeDcs {
  Datapath datapath;

  explicit ThreeDcs(wanlab_release_mode mode = WANLAB_RELEASE_FQ) : datapath(Datapath::load(kDcs, mode)) {
    for (int dc = 0; dc < kDcs; ++dc) {
      datapath.set_dc_prefix_v4(0x0a000000u | static_cast<std::uint32_t>(dc) << 16, 16, dc);
      datapath.set_dc_prefix_v6(v6("2001:db8:" + std::to_string(dc) + "::"), 48, dc);
    }
    datapath.set_dc_prefix_v4(0x0a010500u, 24, 2);            // 10.1.5.0/24 in DC 2
    datapath.set_dc_prefix_v6(v6("2001:db8:1:ff::"), 64, 0);  // in DC 0
  }

  wanlab_pair_stats stats(int src, int dst) const { return datapath.stats(src, dst); }

  std::uint64_t packets_everywhere() const {
    std::uint64_t sum = 0;
    for (int src = 0; src < kDcs; ++src)
      for (int dst = 0; dst < kDcs; ++dst) {
        wanlab_pair_stats s = stats(src, dst);
        sum += s.packets + s.bytes + s.drops[0] + s.drops[1] + s.qdelay_sum_ns;
      }
    return sum;
  }
};

Spec udp(const std::string& src, const std::string& dst, std::size_t frame_len = 100) {
  Spec spec{src, dst};
  spec.frame_len = frame_len;
  return spec;
}

Spec tcp(const std::string& src, const std::string& dst, std::uint16_t sport = 4000, std::size_t frame_len = 100) {
  Spec spec{src, dst, IPPROTO_TCP, sport};
  spec.frame_len = frame_len;
  return spec;
}

bool within(std::uint64_t value, std::uint64_t low, std::uint64_t high) { return value >= low && value <= high; }

}  // namespace

// ---- classification -----------------------------------------------------

struct ClassifyCase {
  const char* description;
  std::function<Bytes()> packet;
  std::optional<std::pair<int, int>> pair;  // nullopt: must pass untouched
};

BOOST_AUTO_TEST_CASE(packets_are_classified_by_longest_prefix_or_left_untouched) {
  ThreeDcs dcs;
  // Every pair but 2 -> 2 enabled, each with its own delay so the departure
  // time tells which pair the program picked.
  auto delay_of = [](int src, int dst) { return (10 + 3 * src + dst) * kMs; };
  for (int src = 0; src < kDcs; ++src)
    for (int dst = 0; dst < kDcs; ++dst)
      if (src != 2 || dst != 2) dcs.datapath.set_pair(src, dst, link(0, delay_of(src, dst)));

  auto spec = [](Spec s) { return [s] { return frame(s); }; };
  auto raw = [](std::uint16_t ethertype, std::size_t payload) {
    return [=] {
      Bytes out = ethernet(ethertype);
      out.resize(out.size() + payload, 0);
      return out;
    };
  };
  Spec icmp{"10.2.0.1", "10.1.0.1", IPPROTO_ICMP};
  Spec cut_tcp = tcp("10.0.0.1", "10.1.0.1");
  const ClassifyCase cases[] = {
      {"IPv4 UDP, DC 0 to DC 1", spec(udp("10.0.0.5", "10.1.0.7")), std::pair{0, 1}},
      {"IPv4 TCP, DC 1 to DC 0", spec(tcp("10.1.200.1", "10.0.3.3")), std::pair{1, 0}},
      {"IPv4 /24 inside DC 1's /16 belongs to DC 2", spec(udp("10.1.5.9", "10.0.0.1")), std::pair{2, 0}},
      {"IPv4 ICMP is classified by address", spec(icmp), std::pair{2, 1}},
      {"IPv4 within one DC", spec(udp("10.0.0.1", "10.0.0.2")), std::pair{0, 0}},
      {"IPv6 TCP, DC 0 to DC 1", spec(tcp("2001:db8::1", "2001:db8:1::1")), std::pair{0, 1}},
      {"IPv6 UDP, DC 2 to DC 0", spec(udp("2001:db8:2::5", "2001:db8::9")), std::pair{2, 0}},
      {"IPv6 /64 inside DC 1's /48 belongs to DC 0", spec(udp("2001:db8:1:ff::1", "2001:db8:2::1")), std::pair{0, 2}},
      {"IPv4 source in no DC", spec(udp("192.168.1.1", "10.0.0.1")), std::nullopt},
      {"IPv4 destination in no DC", spec(udp("10.0.0.1", "8.8.8.8")), std::nullopt},
      {"IPv6 outside every prefix", spec(udp("2001:db9::1", "2001:db8::1")), std::nullopt},
      {"pair 2 -> 2 not enabled", spec(udp("10.2.0.1", "10.2.0.2")), std::nullopt},
      {"ARP", raw(0x0806, 28), std::nullopt},
      // (The kernel refuses to test-run a frame whose IP header is cut short.)
      {"IPv4 header length below 20",
       [] {
         Bytes out = frame(udp("10.0.0.1", "10.1.0.1"));
         out[14] = 0x44;
         return out;
       },
       std::nullopt},
      {"TCP header cut short",
       [cut_tcp] {
         Bytes out = frame(cut_tcp);
         out.resize(14 + 20 + 10);
         return out;
       },
       std::nullopt},
  };

  std::uint64_t packets[kDcs][kDcs] = {}, bytes[kDcs][kDcs] = {};
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.description) {
      std::uint64_t counters_before = dcs.packets_everywhere();
      Bytes packet = c.packet();
      SkbIn in{0x42, 777};
      Outcome out = run(dcs.datapath, packet, in);
      BOOST_TEST(out.verdict == TC_ACT_OK);
      BOOST_TEST(out.mark == in.mark);
      if (!c.pair) {
        BOOST_TEST(out.tstamp == in.tstamp);
        BOOST_TEST(dcs.packets_everywhere() == counters_before);
        continue;
      }
      auto [src, dst] = *c.pair;
      std::uint64_t delay = delay_of(src, dst);
      BOOST_TEST(within(out.tstamp, out.before + delay, out.after + delay),
                 "departure " << out.tstamp - out.before << " ns after the run started");
      wanlab_pair_stats stats = dcs.stats(src, dst);
      BOOST_TEST(stats.packets == ++packets[src][dst]);
      BOOST_TEST(stats.bytes == (bytes[src][dst] += packet.size()));
      // Nothing else moved (no rate, so no queueing delay either).
      BOOST_TEST(dcs.packets_everywhere() == counters_before + 1 + packet.size());
    }
  }
}

// ---- timing -------------------------------------------------------------

BOOST_AUTO_TEST_CASE(backlogged_train_departs_one_serialization_time_apart) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(0, 1, link(1 * kMbit, 25 * kMs));
  const std::uint64_t tx = 8 * kMs;  // 1000 bytes at 1 Mbit/s
  Bytes packet = frame(udp("10.0.0.1", "10.1.0.1", 1000));
  std::vector<Outcome> train;
  for (int i = 0; i < 20; ++i) train.push_back(run(dcs.datapath, packet));

  BOOST_TEST(within(train[0].tstamp, train[0].before + tx + 25 * kMs, train[0].after + tx + 25 * kMs));
  for (std::size_t i = 1; i < train.size(); ++i) {
    BOOST_TEST_INFO("packet " << i);
    BOOST_TEST(train[i].tstamp - train[i - 1].tstamp == tx);
  }

  // Packet i waited i*tx minus the time since the first arrived.
  std::uint64_t elapsed = train.back().after - train[0].before;
  std::uint64_t ideal_sum = tx * (19 * 20 / 2);
  wanlab_pair_stats stats = dcs.stats(0, 1);
  BOOST_TEST(stats.packets == 20u);
  BOOST_TEST(stats.bytes == 20'000u);
  BOOST_TEST(within(stats.qdelay_sum_ns, ideal_sum - 19 * elapsed, ideal_sum));
  BOOST_TEST(within(stats.qdelay_max_ns, 19 * tx - elapsed, 19 * tx));
  BOOST_TEST(stats.drops[WANLAB_DROP_QUEUE] == 0u);
  BOOST_TEST(stats.drops[WANLAB_DROP_LOSS] == 0u);
}

BOOST_AUTO_TEST_CASE(existing_tstamp_is_replaced_by_the_departure) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(1, 2, link(0, 40 * kMs));
  Outcome out = run(dcs.datapath, frame(tcp("10.1.0.1", "10.2.0.1")), SkbIn{0, 1});
  BOOST_TEST(within(out.tstamp, out.before + 40 * kMs, out.after + 40 * kMs));
}

BOOST_AUTO_TEST_CASE(jitter_without_reorder_keeps_departures_in_order) {
  ThreeDcs dcs;
  wanlab_pair_config config = link(0, 20 * kMs);
  config.jitter_ns = 5 * kMs;
  dcs.datapath.set_pair(0, 1, config);
  Bytes packet = frame(udp("10.0.0.1", "10.1.0.1"));
  std::uint64_t previous = 0;
  for (int i = 0; i < 500; ++i) {
    Outcome out = run(dcs.datapath, packet);
    BOOST_TEST_REQUIRE(out.tstamp >= previous);
    BOOST_TEST_REQUIRE(out.tstamp >= out.before + 15 * kMs);
    previous = out.tstamp;
  }
  // The last departure is no later than the latest any draw allows.
  BOOST_TEST(previous <= monotonic_ns() + 25 * kMs);
}

BOOST_AUTO_TEST_CASE(jitter_with_reorder_lets_packets_overtake) {
  ThreeDcs dcs;
  wanlab_pair_config config = link(0, 20 * kMs);
  config.jitter_ns = 5 * kMs;
  config.flags |= WANLAB_PAIR_REORDER;
  dcs.datapath.set_pair(0, 1, config);
  Bytes packet = frame(udp("10.0.0.1", "10.1.0.1"));
  int overtaken = 0;
  std::uint64_t previous = 0;
  for (int i = 0; i < 500; ++i) {
    Outcome out = run(dcs.datapath, packet);
    BOOST_TEST_REQUIRE(within(out.tstamp, out.before + 15 * kMs, out.after + 25 * kMs));
    overtaken += out.tstamp < previous;
    previous = out.tstamp;
  }
  // Runs microseconds apart, jitter 10 ms wide: about half go backwards.
  BOOST_TEST(overtaken > 150);
}

BOOST_AUTO_TEST_CASE(queue_overflow_drops_are_counted) {
  ThreeDcs dcs;
  // 1000 bytes at 10 kbit/s take 800 ms: packets 0..6 see backlogs of
  // 0..4.8 s, within the 5 s limit; later ones would wait 5.6 s or more.
  wanlab_pair_config config = link(10'000);
  config.queue_limit_ns = 5'000 * kMs;
  dcs.datapath.set_pair(1, 0, config);
  Bytes packet = frame(udp("10.1.0.1", "10.0.0.1", 1000));
  for (int i = 0; i < 20; ++i) {
    BOOST_TEST_INFO("packet " << i);
    BOOST_TEST(run(dcs.datapath, packet).verdict == (i < 7 ? TC_ACT_OK : TC_ACT_SHOT));
  }
  wanlab_pair_stats stats = dcs.stats(1, 0);
  BOOST_TEST(stats.packets == 7u);
  BOOST_TEST(stats.bytes == 7000u);
  BOOST_TEST(stats.drops[WANLAB_DROP_QUEUE] == 13u);
  BOOST_TEST(stats.drops[WANLAB_DROP_LOSS] == 0u);
  // Drops took no link time: the link holds exactly the 7 that passed.
  wanlab_pair_state state = dcs.datapath.state(1, 0);
  BOOST_TEST(within(state.next_free_ns - 7 * 800 * kMs, monotonic_ns() - 1'000 * kMs, monotonic_ns()));
}

// ---- loss ---------------------------------------------------------------

std::vector<bool> verdicts(const Datapath& datapath, const Bytes& packet, int n) {
  std::vector<bool> lost;
  for (int i = 0; i < n; ++i) {
    int verdict = run(datapath, packet).verdict;
    BOOST_REQUIRE(verdict == TC_ACT_OK || verdict == TC_ACT_SHOT);
    lost.push_back(verdict == TC_ACT_SHOT);
  }
  return lost;
}

BOOST_AUTO_TEST_CASE(loss_rate_is_within_binomial_bounds_and_repeatable) {
  ThreeDcs dcs;
  wanlab_pair_config config = link(0);
  config.loss_p32 = static_cast<std::uint32_t>(0.1 * 4294967296.0);
  config.seed = 2024;
  dcs.datapath.set_pair(0, 2, config);
  Bytes packet = frame(udp("10.0.0.1", "10.2.0.1"));
  const int n = 20000;

  std::vector<bool> first = verdicts(dcs.datapath, packet, n);
  auto lost = static_cast<std::uint64_t>(std::count(first.begin(), first.end(), true));
  double sigma = std::sqrt(n * 0.1 * 0.9);
  BOOST_TEST(std::fabs(static_cast<double>(lost) - n * 0.1) <= 5 * sigma, "lost " << lost);
  wanlab_pair_stats stats = dcs.stats(0, 2);
  BOOST_TEST(stats.drops[WANLAB_DROP_LOSS] == lost);
  BOOST_TEST(stats.packets == n - lost);
  BOOST_TEST(stats.drops[WANLAB_DROP_QUEUE] == 0u);

  // A new generation with the same seed replays the same losses ...
  config.generation = 2;
  dcs.datapath.set_pair(0, 2, config);
  BOOST_TEST((verdicts(dcs.datapath, packet, n) == first));
  // ... another seed does not.
  config.generation = 3;
  config.seed = 2024 ^ 1;  // differs in the lowest bit only
  dcs.datapath.set_pair(0, 2, config);
  BOOST_TEST((verdicts(dcs.datapath, packet, n) != first));
}

BOOST_AUTO_TEST_CASE(gilbert_elliott_model_is_selected_by_the_config) {
  // loss_p32 = 1 means "always lose" for Bernoulli but "always go bad" for
  // Gilbert-Elliott, whose bad state here loses nothing.
  ThreeDcs dcs;
  wanlab_pair_config config = link(0);
  config.loss_p32 = 0xffffffffu;
  config.ge_r32 = 0;
  config.ge_bad_loss32 = 0;
  config.ge_good_loss32 = 0xffffffffu;
  dcs.datapath.set_pair(0, 1, config);
  config.loss_model = WANLAB_LOSS_GILBERT_ELLIOTT;
  dcs.datapath.set_pair(1, 0, config);
  for (int i = 0; i < 100; ++i) {
    BOOST_TEST_REQUIRE(run(dcs.datapath, frame(udp("10.0.0.1", "10.1.0.1"))).verdict == TC_ACT_SHOT);
    BOOST_TEST_REQUIRE(run(dcs.datapath, frame(udp("10.1.0.1", "10.0.0.1"))).verdict == TC_ACT_OK);
  }
  BOOST_TEST(dcs.datapath.state(1, 0).ge_bad == 1u);
  BOOST_TEST(dcs.stats(0, 1).drops[WANLAB_DROP_LOSS] == 100u);
}

// ---- per-flow cap -------------------------------------------------------

BOOST_AUTO_TEST_CASE(flow_cap_spaces_each_flow_at_the_flow_rate) {
  ThreeDcs dcs;
  wanlab_pair_config config = link(100 * kMbit, 5 * kMs);
  config.flow_rate_bps = 1 * kMbit;
  dcs.datapath.set_pair(0, 1, config);
  const std::uint64_t flow_tx = 8 * kMs, link_tx = wanlab_edt_tx_ns(1000, 100 * kMbit);

  // Flow a sends a burst of 10, then flow b (another source port) 10.
  Bytes a = frame(tcp("10.0.0.1", "10.1.0.1", 1111, 1000));
  Bytes b = frame(tcp("10.0.0.1", "10.1.0.1", 2222, 1000));
  std::vector<Outcome> flow_a, flow_b;
  for (int i = 0; i < 10; ++i) flow_a.push_back(run(dcs.datapath, a));
  for (int i = 0; i < 10; ++i) flow_b.push_back(run(dcs.datapath, b));
  for (auto* flow : {&flow_a, &flow_b}) {
    const auto& first = flow->front();
    // The flow cap, not the link (0.8 ms for all 20), decides.
    BOOST_TEST(within(first.tstamp, first.before + flow_tx + 5 * kMs, first.after + flow_tx + 5 * kMs));
    for (std::size_t i = 1; i < flow->size(); ++i) BOOST_TEST((*flow)[i].tstamp - (*flow)[i - 1].tstamp == flow_tx);
  }

  // Same ports over UDP is another flow; ICMP has no flow and no cap.
  Outcome udp_out = run(dcs.datapath, frame(udp("10.0.0.1", "10.1.0.1", 1000)));
  BOOST_TEST(within(udp_out.tstamp, udp_out.before + flow_tx + 5 * kMs, udp_out.after + flow_tx + 5 * kMs));
  Spec icmp{"10.0.0.1", "10.1.0.1", IPPROTO_ICMP};
  icmp.frame_len = 1000;
  Outcome icmp_out = run(dcs.datapath, frame(icmp));
  BOOST_TEST(icmp_out.tstamp <= icmp_out.after + 22 * link_tx + 5 * kMs);
  BOOST_TEST(icmp_out.tstamp >= icmp_out.before + link_tx + 5 * kMs);
  BOOST_TEST(dcs.stats(0, 1).packets == 22u);
}

// ---- GSO ----------------------------------------------------------------

struct GsoCase {
  const char* description;
  Spec spec;
  std::uint32_t segments;
  std::uint32_t header_len;  // L2 + L3 + L4, repeated on the wire per segment
};

BOOST_AUTO_TEST_CASE(gso_packets_are_charged_every_segment_header) {
  auto with = [](Spec spec, std::size_t tcp_options, std::size_t ip_options) {
    spec.tcp_option_bytes = tcp_options;
    spec.ip_option_bytes = ip_options;
    return spec;
  };
  const GsoCase cases[] = {
      {"IPv4 TCP", tcp("10.0.0.1", "10.1.0.1", 1, 54 + 3 * 1000), 3, 54},
      {"IPv4 TCP with timestamps", with(tcp("10.0.0.1", "10.1.0.1", 1, 66 + 2 * 1448), 12, 0), 2, 66},
      {"IPv4 with options, UDP", with(udp("10.0.0.1", "10.1.0.1", 46 + 4 * 700), 0, 4), 4, 46},
      {"IPv6 TCP", tcp("2001:db8::1", "2001:db8:1::1", 1, 74 + 2 * 1400), 2, 74},
      {"IPv6 UDP", udp("2001:db8::1", "2001:db8:1::1", 62 + 3 * 1000), 3, 62},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.description) {
      ThreeDcs dcs;
      dcs.datapath.set_pair(0, 1, link(1 * kMbit));
      Bytes packet = frame(c.spec);
      std::uint64_t wire = packet.size() + (c.segments - 1) * c.header_len;
      std::uint32_t gso_size = static_cast<std::uint32_t>(packet.size() - c.header_len) / c.segments;
      // A plain packet first keeps the link busy: the GSO packet's departure
      // then follows it by exactly its own serialization time.
      Outcome plain = run(dcs.datapath, frame(udp("10.0.0.1", "10.1.0.1", 1000)));
      Outcome gso = run(dcs.datapath, packet, SkbIn{0, 0, c.segments, gso_size});
      BOOST_TEST(gso.verdict == TC_ACT_OK);
      BOOST_TEST(gso.tstamp - plain.tstamp == wanlab_edt_tx_ns(wire, 1 * kMbit));
      wanlab_pair_stats stats = dcs.stats(0, 1);
      BOOST_TEST(stats.packets == 1u + c.segments);
      BOOST_TEST(stats.bytes == 1000u + wire);
    }
  }
}

// ---- NFQUEUE release ----------------------------------------------------

BOOST_AUTO_TEST_CASE(nfqueue_mode_marks_hold_bit_and_departure_microseconds) {
  ThreeDcs dcs(WANLAB_RELEASE_NFQUEUE);
  dcs.datapath.set_pair(0, 1, link(0, 50 * kMs));
  SkbIn in{0x1234, 555};
  Outcome out = run(dcs.datapath, frame(udp("10.0.0.1", "10.1.0.1")), in);
  BOOST_TEST(out.verdict == TC_ACT_OK);
  BOOST_TEST((out.mark & WANLAB_MARK_HOLD) != 0u);
  std::uint64_t depart = wanlab_edt_mark_depart_ns(out.mark, out.after);
  BOOST_TEST(within(depart, (out.before + 50 * kMs) / 1000 * 1000, out.after + 50 * kMs),
             "mark says " << depart - out.before << " ns after the run started");
  BOOST_TEST(out.tstamp == in.tstamp);  // tstamp is FQ mode's
}

BOOST_AUTO_TEST_CASE(nfqueue_mode_holds_nothing_that_is_due_now) {
  ThreeDcs dcs(WANLAB_RELEASE_NFQUEUE);
  dcs.datapath.set_pair(0, 1, link(0));          // nothing to emulate
  dcs.datapath.set_pair(1, 0, link(0, 500));     // 0.5 us: not worth holding
  dcs.datapath.set_pair(0, 2, link(1 * kMbit));  // 8 ms of serialization: held
  SkbIn in{0x1234};
  BOOST_TEST(run(dcs.datapath, frame(udp("10.0.0.1", "10.1.0.1")), in).mark == in.mark);
  BOOST_TEST(run(dcs.datapath, frame(udp("10.1.0.1", "10.0.0.1")), in).mark == in.mark);
  Outcome held = run(dcs.datapath, frame(udp("10.0.0.1", "10.2.0.1", 1000)), in);
  BOOST_TEST((held.mark & WANLAB_MARK_HOLD) != 0u);
  BOOST_TEST(within(wanlab_edt_mark_depart_ns(held.mark, held.after), (held.before + 8 * kMs) / 1000 * 1000,
                    held.after + 8 * kMs));
  BOOST_TEST(dcs.stats(0, 1).packets == 1u);  // counted though not held
}

// ---- run-time changes ---------------------------------------------------

BOOST_AUTO_TEST_CASE(config_changes_apply_without_reload) {
  ThreeDcs dcs;
  wanlab_pair_config config = link(1 * kMbit);
  config.seed = 77;
  dcs.datapath.set_pair(0, 1, config);
  Bytes packet = frame(udp("10.0.0.1", "10.1.0.1", 1000));
  Outcome last;
  for (int i = 0; i < 10; ++i) last = run(dcs.datapath, packet);
  BOOST_TEST(dcs.datapath.state(0, 1).next_free_ns == last.tstamp);

  // Same generation: the backlog stays, the new delay applies.
  config.delay_ns = 20 * kMs;
  dcs.datapath.set_pair(0, 1, config);
  Outcome delayed = run(dcs.datapath, packet);
  BOOST_TEST(delayed.tstamp - last.tstamp == 8 * kMs + 20 * kMs);

  // New generation: the link starts empty and the generator is reseeded.
  config.generation = 2;
  config.seed = 78;
  dcs.datapath.set_pair(0, 1, config);
  BOOST_TEST(dcs.datapath.pair(0, 1).generation == 2u);
  Outcome fresh = run(dcs.datapath, packet);
  BOOST_TEST(within(fresh.tstamp, fresh.before + 28 * kMs, fresh.after + 28 * kMs));
  wanlab_pair_state state = dcs.datapath.state(0, 1);
  BOOST_TEST(state.generation == 2u);
  BOOST_TEST(state.rng == wanlab_edt_seed_state(78));  // nothing drawn: no loss, no jitter

  // Disabled: untouched again.
  config.flags = 0;
  dcs.datapath.set_pair(0, 1, config);
  std::uint64_t packets = dcs.stats(0, 1).packets;
  BOOST_TEST(run(dcs.datapath, packet, SkbIn{0, 9}).tstamp == 9u);
  BOOST_TEST(dcs.stats(0, 1).packets == packets);
}

// ---- two CPUs -----------------------------------------------------------

BOOST_AUTO_TEST_CASE(two_cpus_at_once_lose_no_link_time) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  BOOST_REQUIRE(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  BOOST_REQUIRE_MESSAGE(CPU_ISSET(0, &allowed) && CPU_ISSET(1, &allowed), "this test needs CPUs 0 and 1");

  ThreeDcs dcs;
  // 100 bytes at 100 bit/s: 8 s per packet, so the link stays backlogged
  // and next_free advances by exactly 8 s per packet, whichever CPU sends.
  dcs.datapath.set_pair(0, 1, link(100));
  const std::uint64_t tx = wanlab_edt_tx_ns(100, 100);
  Bytes packet = frame(udp("10.0.0.1", "10.1.0.1", 100));
  run(dcs.datapath, packet);
  std::uint64_t start = dcs.datapath.state(0, 1).next_free_ns;

  constexpr __u32 kBatch = 10'000, kBatches = 20;
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};
  auto sender = [&](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0 || sched_getcpu() != cpu) ++failures;
    ++ready;
    while (ready < 2) {
    }
    for (__u32 i = 0; i < kBatches; ++i) {
      bpf_test_run_opts opts{};
      opts.sz = sizeof(opts);
      opts.data_in = packet.data();
      opts.data_size_in = static_cast<__u32>(packet.size());
      opts.repeat = kBatch;
      if (bpf_prog_test_run_opts(dcs.datapath.program_fd(), &opts) != 0 || opts.retval != 0) ++failures;
    }
  };
  std::thread cpu0(sender, 0), cpu1(sender, 1);
  cpu0.join();
  cpu1.join();
  BOOST_REQUIRE(failures == 0);

  const std::uint64_t sent = 2ull * kBatch * kBatches;
  BOOST_TEST(dcs.datapath.state(0, 1).next_free_ns - start == sent * tx);
  wanlab_pair_stats stats = dcs.stats(0, 1);
  BOOST_TEST(stats.packets == sent + 1);
  BOOST_TEST(stats.bytes == (sent + 1) * 100);
}

// ---- schedules ----------------------------------------------------------
// Each schedule starts with a pause (rate 0) of 200 ms, longer than sending
// the train takes on a loaded machine: every packet waits for the pause's
// end, so the link starts the first at exactly start + 200 ms and every
// departure is known to the nanosecond.

namespace {

using wanlab::emulator::Schedule;
using wanlab::emulator::ScheduleStep;

constexpr std::uint64_t kPauseNs = 200 * kMs;

std::vector<Outcome> send_train(const Datapath& datapath, int packets, std::size_t frame_len) {
  Bytes packet = frame(udp("10.0.0.1", "10.1.0.1", frame_len));
  std::vector<Outcome> train;
  for (int i = 0; i < packets; ++i) train.push_back(run(datapath, packet));
  return train;
}

// Starts the schedule now; returns its time 0.
std::uint64_t start_schedule(Datapath& datapath, const Schedule& schedule) {
  const std::uint64_t start = monotonic_ns();
  datapath.set_schedule(0, 1, wanlab::emulator::schedule_entries(schedule, start));
  return start;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_step_schedule_moves_departure_times_at_the_steps_time) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(0, 1, link(0));
  // 1500 bytes at 1 Mbit/s take 12 ms: the first two packets start in the
  // step with 10 ms of delay, the third at 224 ms, when the delay is 50 ms.
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_RATE | WANLAB_SCHED_DELAY;
  schedule.steps = {ScheduleStep{0, 0, 0, 0, 0}, ScheduleStep{kPauseNs, 1 * kMbit, 10 * kMs, 0, 0},
                    ScheduleStep{kPauseNs + 24 * kMs, 1 * kMbit, 50 * kMs, 0, 0}};
  const std::uint64_t start = start_schedule(dcs.datapath, schedule);
  std::vector<Outcome> train = send_train(dcs.datapath, 4, 1500);
  BOOST_REQUIRE_MESSAGE(train.back().after < start + kPauseNs, "the train took longer than the pause");
  const std::uint64_t expected_ms[] = {222, 234, 286, 298};
  for (std::size_t i = 0; i < train.size(); ++i) {
    BOOST_TEST_INFO("packet " << i);
    BOOST_TEST(train[i].tstamp - start == expected_ms[i] * kMs);
  }
}

BOOST_AUTO_TEST_CASE(a_per_millisecond_schedule_charges_each_packet_against_the_step_it_leaves_in) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(0, 1, link(0));
  // After the pause, 8 and 80 Mbit/s alternate every millisecond: 1000 bytes
  // take 1 ms or 0.1 ms, so packets start inside steps and at their edges.
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_RATE;
  schedule.steps.push_back({0, 0, 0, 0, 0});
  for (std::uint64_t ms = 0; ms < 40; ++ms)
    schedule.steps.push_back({kPauseNs + ms * kMs, (ms % 2 == 0 ? 8 : 80) * kMbit, 0, 0, 0});
  const std::uint64_t start = start_schedule(dcs.datapath, schedule);
  std::vector<Outcome> train = send_train(dcs.datapath, 55, 1000);
  BOOST_REQUIRE_MESSAGE(train.back().after < start + kPauseNs, "the train took longer than the pause");

  // The link's own account: each packet at the rate of the step it starts in.
  std::uint64_t link_free = kPauseNs;
  for (std::size_t i = 0; i < train.size(); ++i) {
    link_free += wanlab_edt_tx_ns(1000, schedule.step_at(link_free).rate_bps);
    BOOST_TEST_INFO("packet " << i);
    BOOST_TEST(train[i].tstamp - start == link_free);
  }
  // 55 packets: one in each slow millisecond, ten in each fast one.
  BOOST_TEST(link_free == kPauseNs + 10 * kMs);
}

BOOST_AUTO_TEST_CASE(a_cross_traffic_share_takes_its_part_of_the_pairs_rate) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(0, 1, link(2 * kMbit, 5 * kMs));
  // A share of 100% pauses the link; 75% of 2 Mbit/s leaves 0.5 Mbit/s, on
  // which 1500 bytes take 24 ms.
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_SHARE;
  schedule.steps = {ScheduleStep{0, 0, 0, 0, 1.0}, ScheduleStep{kPauseNs, 0, 0, 0, 0.75}};
  const std::uint64_t start = start_schedule(dcs.datapath, schedule);
  std::vector<Outcome> train = send_train(dcs.datapath, 3, 1500);
  BOOST_REQUIRE_MESSAGE(train.back().after < start + kPauseNs, "the train took longer than the pause");
  for (std::size_t i = 0; i < train.size(); ++i) {
    BOOST_TEST_INFO("packet " << i);
    BOOST_TEST(train[i].tstamp - start == kPauseNs + (i + 1) * 24 * kMs + 5 * kMs);
  }
}

BOOST_AUTO_TEST_CASE(a_looping_schedule_repeats_and_a_cleared_one_leaves_the_config) {
  ThreeDcs dcs;
  wanlab_pair_config config = link(0, 7 * kMs);
  config.flags |= WANLAB_PAIR_REORDER;  // the last packet need not wait for the first
  dcs.datapath.set_pair(0, 1, config);
  // Delay 30 ms for the first 100 ms of every second, 60 ms for the rest;
  // time 0 was 3.05 s ago, so now is 50 ms into a period.
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_DELAY;
  schedule.period_ns = 1000 * kMs;
  schedule.steps = {ScheduleStep{0, 0, 30 * kMs, 0, 0}, ScheduleStep{100 * kMs, 0, 60 * kMs, 0, 0}};
  const std::vector<wanlab_sched_entry> entries =
      wanlab::emulator::schedule_entries(schedule, monotonic_ns() - 3050 * kMs);
  dcs.datapath.set_schedule(0, 1, entries);
  Outcome out = send_train(dcs.datapath, 1, 100)[0];
  BOOST_TEST(within(out.tstamp, out.before + 30 * kMs, out.after + 30 * kMs));

  const std::vector<wanlab_sched_entry> read = dcs.datapath.schedule(0, 1);
  BOOST_REQUIRE(read.size() == entries.size());
  BOOST_TEST(std::memcmp(read.data(), entries.data(), read.size() * sizeof(read[0])) == 0);

  dcs.datapath.clear_schedule(0, 1);
  BOOST_TEST(dcs.datapath.schedule(0, 1).empty());
  out = send_train(dcs.datapath, 1, 100)[0];
  BOOST_TEST(within(out.tstamp, out.before + 7 * kMs, out.after + 7 * kMs));
}

BOOST_AUTO_TEST_CASE(entries_that_are_no_schedule_are_refused) {
  ThreeDcs dcs;
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_RATE;
  schedule.steps = {ScheduleStep{0, kMbit, 0, 0, 0}, ScheduleStep{5 * kMs, kMbit, 0, 0, 0}};
  std::vector<wanlab_sched_entry> entries = wanlab::emulator::schedule_entries(schedule, 0);
  entries[2].step.at_ns = 0;
  BOOST_CHECK_THROW(dcs.datapath.set_schedule(0, 1, entries), std::invalid_argument);
  entries.pop_back();
  BOOST_CHECK_THROW(dcs.datapath.set_schedule(0, 1, entries), std::invalid_argument);  // head says 2
  BOOST_TEST(dcs.datapath.schedule(0, 1).empty());
}

BOOST_AUTO_TEST_CASE(before_its_start_a_schedule_gives_its_first_step_without_waiting) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(0, 1, link(0));
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_DELAY;
  schedule.steps = {ScheduleStep{0, 0, 30 * kMs, 0, 0}, ScheduleStep{kPauseNs, 0, 60 * kMs, 0, 0}};
  dcs.datapath.set_schedule(0, 1, wanlab::emulator::schedule_entries(schedule, monotonic_ns() + 1000 * kMs));
  const Outcome out = send_train(dcs.datapath, 1, 100)[0];
  BOOST_TEST(within(out.tstamp, out.before + 30 * kMs, out.after + 30 * kMs));
}

// Pairs given one schedule read it from one map (the kernel holds it once);
// a pair given another later leaves the others theirs.
BOOST_AUTO_TEST_CASE(pairs_given_one_schedule_share_its_map) {
  ThreeDcs dcs;
  dcs.datapath.set_pair(0, 1, link(0, 7 * kMs));
  Schedule schedule;
  schedule.columns = WANLAB_SCHED_DELAY;
  schedule.steps = {ScheduleStep{0, 0, 30 * kMs, 0, 0}};
  const std::pair<int, int> pairs[] = {{0, 1}, {1, 0}, {0, 2}};
  dcs.datapath.set_schedule(pairs, wanlab::emulator::schedule_entries(schedule, monotonic_ns()));
  std::vector<Datapath::ScheduleMap> maps = dcs.datapath.schedule_maps();
  BOOST_REQUIRE(maps.size() == 3u);
  for (const Datapath::ScheduleMap& map : maps) {
    BOOST_TEST_INFO("pair " << map.src << "->" << map.dst);
    BOOST_TEST(map.id == maps[0].id);
    BOOST_TEST(map.head.steps == 1u);
  }
  const Outcome out = send_train(dcs.datapath, 1, 100)[0];
  BOOST_TEST(within(out.tstamp, out.before + 30 * kMs, out.after + 30 * kMs));

  schedule.steps[0].delay_ns = 40 * kMs;
  dcs.datapath.set_schedule(0, 1, wanlab::emulator::schedule_entries(schedule, monotonic_ns()));
  const std::uint32_t shared = maps[0].id;
  maps = dcs.datapath.schedule_maps();
  BOOST_REQUIRE(maps.size() == 3u);
  BOOST_TEST((maps[0].src == 0 && maps[0].dst == 1));
  BOOST_TEST(maps[0].id != shared);
  BOOST_TEST(maps[1].id == shared);
  BOOST_TEST(maps[2].id == shared);
}
