// gloo's algorithms over the TCP model (gloo_model.hpp): the segment rule of
// gloo's ring all-reduce and the one-way delays it costs, against the counts
// measured through `wanlab launch` (bench/results/pytorch/LATEST.md).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "harness_support.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/harness/model/gloo_model.hpp"

using namespace wanlab::harness;
namespace em = wanlab::emulator;

namespace {

constexpr double kMiB = 1 << 20;

TcpPath link_of(double delay_s, double rate_bps = 1e12, double window_bytes = 1e12) {
  TcpPath path;
  path.delay_s = delay_s;
  path.rtt_s = 2 * delay_s;
  path.rate_bps = rate_bps;
  path.window_bytes = window_bytes;
  return path;
}

}  // namespace

BOOST_AUTO_TEST_CASE(segments_are_at_most_a_mib_at_least_two_a_rank_and_a_multiple_of_the_ranks) {
  struct Case {
    int ranks;
    double mib, segments, segment_bytes;
  };
  // The last: the tiny GPT's one DDP bucket (examples/pytorch/ddp_gpt.py).
  for (const Case& c : {Case{2, 4, 4, kMiB}, Case{2, 64, 64, kMiB}, Case{3, 4, 6, 699051}, Case{3, 64, 66, kMiB},
                        Case{4, 4, 8, 0.5 * kMiB}, Case{4, 64, 64, kMiB}, Case{3, 1332224 / kMiB, 6, 222038}}) {
    BOOST_TEST_CONTEXT(c.ranks << " ranks, " << c.mib << " MiB") {
      const GlooRingSegments segments = gloo_ring_segments(c.ranks, std::ceil(c.mib * kMiB));
      BOOST_TEST(segments.count == c.segments);
      BOOST_TEST(segments.segment_bytes == c.segment_bytes);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_ring_all_reduce_costs_the_measured_one_way_delays_when_the_link_is_fast) {
  // Measured one-way delays per all-reduce (slope of time over delay):
  // 2 ranks 4 / 64 MiB: 4.0 / 63.8; 3 ranks: 8.1 / 88; 4 ranks: 10.9 / 95.5.
  struct Case {
    int ranks;
    double mib, measured_delays;
  };
  const double delay_s = 0.01;
  for (const Case& c :
       {Case{2, 4, 4.0}, Case{2, 64, 63.8}, Case{3, 4, 8.1}, Case{3, 64, 88}, Case{4, 4, 10.9}, Case{4, 64, 95.5}}) {
    BOOST_TEST_CONTEXT(c.ranks << " ranks, " << c.mib << " MiB") {
      const std::vector<TcpPath> ring(c.ranks, link_of(delay_s));
      const double delays = (gloo_allreduce_s(ring, c.mib * kMiB) - delay_s) / delay_s;
      BOOST_TEST(delays == c.measured_delays, boost::test_tools::tolerance(0.11));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_slow_or_window_bound_link_makes_every_segment_its_transfer) {
  const double delay_s = 0.001;
  // 3 ranks, 64 MiB: 66 segments of 1 MiB, 88 of them in turn.
  std::vector<TcpPath> ring(3, link_of(delay_s));
  ring[1] = link_of(delay_s, 100e6);  // 1 MiB at 100 Mbit/s: 84 ms, not 1 ms
  BOOST_TEST(gloo_allreduce_s(ring, 64 * kMiB) == 88 * kMiB * 8 / 100e6 + delay_s, boost::test_tools::tolerance(1e-9));
  ring[1] = link_of(delay_s, 1e12, 2 * kMiB);  // window / RTT: 2 MiB per 2 ms
  BOOST_TEST(gloo_allreduce_s(ring, 64 * kMiB) == 88 * (kMiB * 8 / (2 * kMiB * 8 / 0.002)) + delay_s,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(gloo_allreduce_s(std::vector<TcpPath>(1, link_of(delay_s)), kMiB) == 0);
}

BOOST_AUTO_TEST_CASE(the_scenario_ring_runs_through_the_dcs_in_order) {
  const em::Scenario scenario = harness_test::three_dcs();  // a-b 10 ms, a-c 40 ms, b-c 60 ms
  const TcpPath bc = gloo_path(scenario, 1, 2);
  BOOST_TEST(bc.delay_s == 0.06, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(bc.rtt_s == 0.12, boost::test_tools::tolerance(1e-9));
  // An unpaced stream's window: more than the harness's paced streams get.
  BOOST_TEST(bc.window_bytes > em::stream_window_bytes(scenario.host));
  // 4 MiB over 3 ranks: 8 segment times on the slowest link (60 ms), then its delay.
  BOOST_TEST(gloo_allreduce_s(scenario, 4 * kMiB) == 8 * 0.06 + 0.06, boost::test_tools::tolerance(1e-6));
}
