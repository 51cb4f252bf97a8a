// verify's arithmetic without a testbed: what each pair's settings should
// show, the allowed ranges, the option words, and the table's verdicts.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <vector>

#include "wanlab/emulator/verify.hpp"

namespace em = wanlab::emulator;

namespace {

em::PairParams pair(std::uint64_t delay_ms, std::uint64_t rate_mbit = 100) {
  em::PairParams params;
  params.delay_ns = delay_ms * 1'000'000;
  params.rate_bps = rate_mbit * 1'000'000;
  return params;
}

em::HostSettings buffers(std::uint64_t wmem, std::uint64_t rmem) {
  em::HostSettings host;
  host.tcp_wmem_max = wmem;
  host.tcp_rmem_max = rmem;
  return host;
}

// 58 bytes on the wire each way at `mbit`.
double probe_ms(double mbit) { return 2 * 58 * 8 / (mbit * 1e3); }

}  // namespace

BOOST_AUTO_TEST_CASE(option_words_are_parsed_strictly) {
  BOOST_TEST(!em::parse_verify_check("rtt"));
  BOOST_TEST(em::parse_verify_check("rate"));
  BOOST_CHECK_THROW(em::parse_verify_check("goodput"), std::invalid_argument);
  BOOST_CHECK_THROW(em::parse_verify_check(""), std::invalid_argument);

  BOOST_TEST(em::parse_verify_tolerance("10%") == 0.10);
  BOOST_TEST(em::parse_verify_tolerance("0%") == 0.0);
  BOOST_TEST(em::parse_verify_tolerance("2.5%") == 0.025);
  for (const char* bad : {"10", "0.1", "100%", "150%", "-5%", "ten%"})
    BOOST_CHECK_THROW(em::parse_verify_tolerance(bad), std::invalid_argument);

  BOOST_TEST(em::parse_verify_slack("2ms") == 2'000'000u);
  BOOST_TEST(em::parse_verify_slack("0s") == 0u);
  BOOST_TEST(em::parse_verify_slack("10s") == 10'000'000'000u);
  for (const char* bad : {"2", "11s", "-1ms", "fast"})
    BOOST_CHECK_THROW(em::parse_verify_slack(bad), std::invalid_argument);

  BOOST_TEST(em::parse_verify_attempts("1") == 1);
  BOOST_TEST(em::parse_verify_attempts("10") == 10);
  for (const char* bad : {"0", "11", "-1", "1.5", "", "3x"})
    BOOST_CHECK_THROW(em::parse_verify_attempts(bad), std::invalid_argument);
}

namespace {

// A row as a measurement would leave it: `measured` against [low, high].
em::VerifyRow row(em::VerifyRow::Check check, double measured, double low, double high) {
  em::VerifyRow row;
  row.pair = "east <-> west";
  row.check = check;
  row.measured = measured;
  row.allowed = em::Range{low, high};
  row.how = "median of 20/20 echoes";
  return row;
}

// Hands out `rows` in turn, counting how many were asked for.
struct Script {
  std::vector<em::VerifyRow> rows;
  std::size_t taken = 0;
  em::VerifyRow operator()() { return rows.at(taken++); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(only_a_check_slower_than_allowed_is_measured_again_and_the_best_attempt_stands) {
  using Check = em::VerifyRow::Check;
  // Slower than allowed: an RTT above its range, a goodput below it. Not: the other sides, problems, unmeasured.
  BOOST_TEST(em::slower_than_allowed(row(Check::rtt, 25, 16, 24)));
  BOOST_TEST(!em::slower_than_allowed(row(Check::rtt, 15, 16, 24)));
  BOOST_TEST(!em::slower_than_allowed(row(Check::rtt, 20, 16, 24)));
  BOOST_TEST(em::slower_than_allowed(row(Check::goodput, 80e6, 86e6, 105e6)));
  BOOST_TEST(!em::slower_than_allowed(row(Check::goodput, 110e6, 86e6, 105e6)));
  auto failed = row(Check::rtt, 25, 16, 24);
  failed.problem = "none of 20 echoes came back";
  BOOST_TEST(!em::slower_than_allowed(failed));

  // RTTs within [16, 24] ms measured in turn: how many are taken, which stands.
  struct Case {
    const char* what;
    std::vector<double> rtts;
    std::size_t taken;
    double stands;
    const char* how;
  };
  const std::vector<Case> cases{
      {"a passing first measurement is the only one", {20}, 1, 20, "median of 20/20 echoes"},
      {"slow, then within bounds", {25, 21, 20}, 2, 21, "median of 20/20 echoes; best of 2 attempts"},
      {"slow every time: the lowest of all", {30, 26, 28}, 3, 26, "median of 20/20 echoes; best of 3 attempts"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      Script script;
      for (double rtt : c.rtts) script.rows.push_back(row(Check::rtt, rtt, 16, 24));
      const auto stood = em::measured_with_attempts(3, std::ref(script));
      BOOST_TEST(script.taken == c.taken);
      BOOST_TEST(stood.measured == c.stands);
      BOOST_TEST(stood.attempts == static_cast<int>(c.taken));
      BOOST_TEST(stood.passed() == (c.stands <= 24));
      BOOST_TEST(stood.how == c.how);
    }
  }

  // A failure after several names them.
  Script slow{{row(Check::rtt, 30, 16, 24), row(Check::rtt, 26, 16, 24), row(Check::rtt, 28, 16, 24)}};
  const auto best = em::measured_with_attempts(3, std::ref(slow));
  em::VerifyOptions options;
  const std::string said = em::describe_failure(best, options);
  BOOST_TEST(said.ends_with("(tolerance 10% + slack 2ms), the best of 3 attempts, each longer"), said);
  Script starved{{row(Check::goodput, 40e6, 86e6, 105e6), row(Check::goodput, 50e6, 86e6, 105e6)}};
  auto most = em::measured_with_attempts(2, std::ref(starved));
  BOOST_TEST(most.measured == 50e6);
  BOOST_TEST(em::describe_failure(most, options).ends_with("the best of 2 attempts, each lower"));
  // On a VM whose hypervisor took CPU time meanwhile, a slow check says how much (from 0.5% up).
  most.host_stolen = 0.004;
  BOOST_TEST(em::describe_failure(most, options).ends_with("each lower"));
  most.host_stolen = 0.24;
  const std::string stolen = em::describe_failure(most, options);
  BOOST_TEST(stolen.ends_with("each lower; the hypervisor took 24% of this machine's CPU time meanwhile: verify "
                              "again when the host is quieter"),
             stolen);

  // Faster than allowed ends it at once: no busy host makes a path faster.
  Script fast{{row(Check::goodput, 120e6, 86e6, 105e6), row(Check::goodput, 95e6, 86e6, 105e6)}};
  auto too_fast = em::measured_with_attempts(3, std::ref(fast));
  BOOST_TEST(fast.taken == 1u);
  BOOST_TEST(!too_fast.passed());
  too_fast.host_stolen = 0.24;  // a host cannot make a path faster: steal is no excuse there
  BOOST_TEST(em::describe_failure(too_fast, options).find("hypervisor") == std::string::npos);
  Script slow_then_fast{{row(Check::rtt, 30, 16, 24), row(Check::rtt, 12, 16, 24), row(Check::rtt, 20, 16, 24)}};
  auto short_rtt = em::measured_with_attempts(3, std::ref(slow_then_fast));
  BOOST_TEST(slow_then_fast.taken == 2u);
  BOOST_TEST(short_rtt.measured == 12);
  BOOST_TEST(!short_rtt.passed());

  // --attempts 1: one measurement, as before.
  Script single{{row(Check::rtt, 30, 16, 24), row(Check::rtt, 20, 16, 24)}};
  BOOST_TEST(!em::measured_with_attempts(1, std::ref(single)).passed());
  BOOST_TEST(single.taken == 1u);
}

BOOST_AUTO_TEST_CASE(rtt_without_jitter_is_the_median_of_twenty_against_both_delays) {
  const auto plan = em::plan_rtt(pair(10), pair(15));
  BOOST_TEST(plan.expected_ms == 25 + probe_ms(100), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(!plan.use_mean);
  BOOST_TEST(plan.spread_ms == 0);
  BOOST_TEST(plan.probes == 20);
  BOOST_TEST(plan.interval_ms == 10);
  BOOST_TEST(plan.measurable);

  // tolerance x expected + slack either side.
  em::VerifyOptions options;  // 10%, 2 ms
  const auto range = em::rtt_range(plan, options, 20);
  BOOST_TEST(range.low == plan.expected_ms * 0.9 - 2, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(range.high == plan.expected_ms * 1.1 + 2, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(range.contains(25.4));
  BOOST_TEST(!range.contains(50.0));
  BOOST_TEST(!range.contains(std::nan("")));

  // A slow link's serialization of the probe is part of what to expect.
  BOOST_TEST(em::plan_rtt(pair(10, 1), pair(10, 1)).expected_ms == 20 + probe_ms(1),
             boost::test_tools::tolerance(1e-9));
  // Nothing below 0: a zero delay with a large slack.
  options.slack_ns = 5'000'000;
  BOOST_TEST(em::rtt_range(em::plan_rtt(pair(0), pair(0)), options, 20).low == 0);
}

BOOST_AUTO_TEST_CASE(rtt_with_jitter_is_the_mean_of_fifty_and_the_range_widens) {
  auto there = pair(10), back = pair(10);
  there.jitter_ns = back.jitter_ns = 6'000'000;
  const auto plan = em::plan_rtt(there, back);
  BOOST_TEST(plan.use_mean);
  BOOST_TEST(plan.probes == 50);
  BOOST_TEST(plan.expected_ms == 20 + probe_ms(100), boost::test_tools::tolerance(1e-9));
  // Two uniforms in [-6, 6]: variance 2 x 36 / 3.
  BOOST_TEST(plan.spread_ms == std::sqrt(24.0), boost::test_tools::tolerance(1e-9));
  // Echoes 2 x jitter + 1 ms apart, so keeping order never holds one behind another.
  BOOST_TEST(plan.interval_ms == 13);

  em::VerifyOptions options;
  const auto plain = em::rtt_range(em::plan_rtt(pair(10), pair(10)), options, 50);
  const auto widened = em::rtt_range(plan, options, 50);
  BOOST_TEST(widened.high - plain.high == 4 * std::sqrt(24.0) / std::sqrt(50.0), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(plain.low - widened.low == 4 * std::sqrt(24.0) / std::sqrt(50.0), boost::test_tools::tolerance(1e-6));
  // Fewer answers, a wider range.
  BOOST_TEST(em::rtt_range(plan, options, 10).high > widened.high);

  // Jitter beyond the delay: latencies are clamped at 0, which raises the mean
  // to (d + j)^2 / 4j = 64 / 24 ms one way.
  auto clamped = pair(2, 0);
  clamped.jitter_ns = 6'000'000;
  BOOST_TEST(em::plan_rtt(clamped, pair(0, 0)).expected_ms == 64.0 / 24, boost::test_tools::tolerance(1e-9));
  // Large jitter: echoes at most 100 ms apart.
  clamped.jitter_ns = 500'000'000;
  BOOST_TEST(em::plan_rtt(clamped, pair(0, 0)).interval_ms == 100);
}

BOOST_AUTO_TEST_CASE(loss_sends_more_echoes_and_too_much_is_not_measured) {
  auto lossy = pair(10);
  lossy.loss = 0.2;
  const auto plan = em::plan_rtt(lossy, lossy);
  BOOST_TEST(plan.answer_probability == 0.64, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(plan.probes == 32);  // ceil(20 / 0.64)
  BOOST_TEST(plan.measurable);

  lossy.loss = 1.0;
  const auto dead = em::plan_rtt(lossy, pair(10));
  BOOST_TEST(!dead.measurable);
  BOOST_TEST(dead.probes == 0);

  // Gilbert-Elliott: a 10% share of time in the bad state, which loses all.
  auto ge = pair(10);
  ge.loss_model = em::LossModel::gilbert_elliott;
  ge.loss = 0.01;
  ge.ge_r = 0.09;
  ge.ge_bad_loss = 1;
  ge.ge_good_loss = 0;
  BOOST_TEST(em::mean_loss(ge) == 0.1, boost::test_tools::tolerance(1e-9));
  ge.loss = 0;  // never enters the bad state
  BOOST_TEST(em::mean_loss(ge) == 0);
}

BOOST_AUTO_TEST_CASE(goodput_expects_the_rate_less_headers_with_enough_streams) {
  em::VerifyOptions options;
  // 100 Mbit/s, 20 ms: one stream's 2 MB window carries 839 Mbit/s.
  const auto small = em::plan_goodput(pair(10), buffers(4 << 20, 4 << 20), 20);
  BOOST_TEST(small.streams == 1);
  BOOST_TEST(small.lower_bound);
  BOOST_TEST(small.ceiling_bps == 100e6 * 1448 / 1514, boost::test_tools::tolerance(1e-9));
  const auto range = em::goodput_range(small, options);
  BOOST_TEST(range.low == small.ceiling_bps * 0.9, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(range.high == small.ceiling_bps * 1.1, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(small.warmup_seconds == 1);

  // 1 Gbit/s, 50 ms with the kernel's default buffers: 3 MB windows carry
  // 503 Mbit/s each, so three streams.
  const auto wide = em::plan_goodput(pair(25, 1000), em::HostSettings{}, 50);
  BOOST_TEST(wide.streams == 3);
  BOOST_TEST(wide.lower_bound);
  // At most 8 streams; where they cannot fill the link only the ceiling holds.
  const auto starved = em::plan_goodput(pair(100, 10000), buffers(1 << 20, 1 << 20), 200);
  BOOST_TEST(starved.streams == 8);
  BOOST_TEST(!starved.lower_bound);
  BOOST_TEST(starved.why_no_lower_bound == "socket buffers");
  BOOST_TEST(!std::isfinite(em::goodput_range(starved, options).low));
  BOOST_TEST(starved.warmup_seconds == 6);                                                     // 30 RTTs
  BOOST_TEST(em::plan_goodput(pair(500, 10), em::HostSettings{}, 1000).warmup_seconds == 10);  // at most 10 s
}

BOOST_AUTO_TEST_CASE(goodput_has_no_lower_bound_where_tcp_cannot_fill_the_link) {
  const auto host = buffers(8 << 20, 16 << 20);
  auto lossy = pair(10);
  lossy.loss = 0.001;
  BOOST_TEST(em::plan_goodput(lossy, host, 20).why_no_lower_bound == "loss");
  auto reordering = pair(10);
  reordering.jitter_ns = 1'000'000;
  reordering.reorder = true;
  BOOST_TEST(em::plan_goodput(reordering, host, 20).why_no_lower_bound == "reorder");
  reordering.reorder = false;  // jitter with order kept: TCP fills the link
  BOOST_TEST(em::plan_goodput(reordering, host, 20).lower_bound);
  auto shallow = pair(10);
  shallow.queue = em::parse_queue("2ms");
  BOOST_TEST(em::plan_goodput(shallow, host, 20).why_no_lower_bound == "queue below RTT/2");

  // Unlimited: shown, not checked.
  const auto unlimited = em::plan_goodput(pair(10, 0), host, 20);
  BOOST_TEST(!em::goodput_range(unlimited, em::VerifyOptions{}).bounded());

  // A per-flow cap alone: several streams, each capped.
  auto capped = pair(10, 0);
  capped.flow_rate_bps = 10'000'000;
  const auto flows = em::plan_goodput(capped, host, 20);
  BOOST_TEST(flows.streams == 3);
  BOOST_TEST(flows.ceiling_bps == 30e6 * 1448 / 1514, boost::test_tools::tolerance(1e-9));
  // A per-flow cap below the link's rate: streams enough to fill the link.
  auto both = pair(10, 100);
  both.flow_rate_bps = 30'000'000;
  const auto filled = em::plan_goodput(both, host, 20);
  BOOST_TEST(filled.streams == 5);
  BOOST_TEST(filled.ceiling_bps == 100e6 * 1448 / 1514, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(rows_fail_outside_their_range_and_say_why) {
  em::VerifyOptions options;
  em::VerifyRow row;
  row.pair = "east <-> west";
  row.configured = "20.00 ms";
  row.allowed = em::Range{16, 24};
  row.measured = 20.3;
  BOOST_TEST(row.passed());
  BOOST_TEST(em::format_verify_row(row).find(" ok ") != std::string::npos, em::format_verify_row(row));

  row.measured = 80.41;
  BOOST_TEST(!row.passed());
  const std::string line = em::format_verify_row(row);
  BOOST_TEST(line.find("FAIL") != std::string::npos, line);
  BOOST_TEST(line.find("80.41 ms") != std::string::npos, line);
  BOOST_TEST(line.find("16.00 - 24.00 ms") != std::string::npos, line);
  const std::string said = em::describe_failure(row, options);
  BOOST_TEST(said ==
                 "east <-> west rtt: measured 80.41 ms, configured 20.00 ms; allowed 16.00 - 24.00 ms "
                 "(tolerance 10% + slack 2ms)",
             said);

  // No measurement where one was due fails; an unchecked row passes.
  row.measured = std::nan("");
  BOOST_TEST(!row.passed());
  row.allowed = em::Range{};
  BOOST_TEST(row.passed());
  BOOST_TEST(em::format_verify_row(row).find("not checked") != std::string::npos);
  row.problem = "none of 20 echoes came back";
  BOOST_TEST(!row.passed());
  BOOST_TEST(em::describe_failure(row, options) == "east <-> west rtt: none of 20 echoes came back");

  em::VerifyRow goodput;
  goodput.pair = "east -> west";
  goodput.check = em::VerifyRow::Check::goodput;
  goodput.configured = "100mbit";
  goodput.measured = 40e6;
  goodput.allowed.high = 105.2e6;
  BOOST_TEST(goodput.passed());  // only a ceiling
  goodput.allowed.low = 86.1e6;
  BOOST_TEST(!goodput.passed());
  BOOST_TEST(
      em::describe_failure(goodput, options) ==
          "east -> west goodput: measured 40.0 Mbit/s, configured 100mbit; allowed 86.1 - 105.2 Mbit/s (tolerance 10%)",
      em::describe_failure(goodput, options));

  em::VerifyResult result;
  result.rows = {goodput};
  BOOST_TEST(!result.passed());
  goodput.measured = 95e6;
  result.rows = {goodput};
  BOOST_TEST(result.passed());
}

// Rows none of which could be measured (a schedule that changes during the
// measurement or pauses the link, too much loss) say nothing of the testbed:
// verify fails, saying why, and `run --verify` does not start its command.
BOOST_AUTO_TEST_CASE(nothing_measured_is_not_a_pass) {
  em::VerifyRow rtt;
  rtt.pair = "east <-> west";
  rtt.unmeasured = "its schedule changes 50 ms into the measurement";
  em::VerifyRow goodput;
  goodput.pair = "east -> west";
  goodput.check = em::VerifyRow::Check::goodput;
  goodput.unmeasured = "its schedule pauses the link now";
  BOOST_TEST(rtt.passed());
  em::VerifyResult result;
  result.rows = {rtt, goodput};
  BOOST_TEST(!result.passed());
  BOOST_TEST(result.nothing_measured() ==
             "no pair could be measured: east <-> west rtt: its schedule changes 50 ms into the measurement; "
             "east -> west goodput: its schedule pauses the link now");
  result.rows = {rtt, goodput, goodput, goodput, goodput};
  BOOST_TEST(result.nothing_measured().ends_with("pauses the link now; and 2 more"), result.nothing_measured());

  // One measured row is enough; the others pass unmeasured.
  em::VerifyRow measured;
  measured.pair = "east <-> south";
  measured.allowed = em::Range{16, 24};
  measured.measured = 20;
  result.rows = {rtt, measured, goodput};
  BOOST_TEST(result.passed());
  BOOST_TEST(result.nothing_measured().empty());

  // A testbed of one DC has no pair to measure.
  result.rows.clear();
  BOOST_TEST(!result.passed());
  BOOST_TEST(result.nothing_measured() ==
             "no pair could be measured: the testbed has one DC (verify measures between DCs)");
}

// Across machines verify reads ping's and iperf3's own output (run on the
// nodes through srun): what they print on Debian 12, and their failures.
BOOST_AUTO_TEST_CASE(ping_and_iperf3_output_are_read_across_machines) {
  const std::string ping =
      "PING 10.99.0.3 (10.99.0.3) 56(84) bytes of data.\n"
      "64 bytes from 10.99.0.3: icmp_seq=1 ttl=64 time=37.2 ms\n"
      "64 bytes from 10.99.0.3: icmp_seq=3 ttl=64 time=31 ms\n"
      "\n--- 10.99.0.3 ping statistics ---\n"
      "3 packets transmitted, 2 received, 33.3333% packet loss, time 402ms\n"
      "rtt min/avg/max/mdev = 31.000/34.100/37.200/3.100 ms\n";
  BOOST_TEST(em::ping_times_ms(ping) == (std::vector<double>{37.2, 31.0}), boost::test_tools::per_element());
  BOOST_TEST(em::ping_times_ms("From 10.99.0.1 icmp_seq=1 Destination Host Unreachable\n").empty());

  BOOST_TEST(em::iperf3_received_bps(R"({"start": {}, "end": {"sum_sent": {"bits_per_second": 2e7},
                                         "sum_received": {"bits_per_second": 18500000.5}}})") == 18500000.5);
  const auto error_of = [](const std::string& json) {
    try {
      em::iperf3_received_bps(json);
    } catch (const std::runtime_error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  BOOST_TEST(error_of(R"({"start": {}, "end": {}, "error": "unable to connect to server: Connection refused"})") ==
             "iperf3: \"unable to connect to server: Connection refused\"");
  BOOST_TEST(error_of(R"({"end": {"sum_received": {}}})") == "iperf3's JSON has no end.sum_received.bits_per_second");
  BOOST_TEST(error_of("srun: error: Unable to create step").find("iperf3 did not write JSON: ") == 0u);
}
