// `wanlab verify` and `wanlab run --verify`: measure every DC pair of a running
// testbed (RTT, and with the rate check a short TCP goodput) and compare each
// with what the scenario configures, within a tolerance. The planning and the
// comparison are plain functions of the pair's settings (unit-tested); the
// measurement is verify_testbed, through probe.hpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {

struct VerifyOptions {
  bool goodput = false;                // also the rate check (--verify=rate, verify --rate)
  double tolerance = 0.10;             // relative, both checks
  std::uint64_t slack_ns = 2'000'000;  // absolute, added to the RTT check's bound
  double goodput_seconds = 2.0;        // counted, after a warm-up
  int attempts = 3;                    // of a check slower than allowed (measured_with_attempts)
};

// The option words, parsed strictly; each throws std::invalid_argument with a
// message that does not name the option (callers prefix it, as units.hpp).
// "rtt" -> false, "rate" -> true (whether to check goodput too).
bool parse_verify_check(std::string_view text);
// "10%" -> 0.10; must be below 100%.
double parse_verify_tolerance(std::string_view text);
// "2ms" -> 2'000'000 ns; at most 10 s.
std::uint64_t parse_verify_slack(std::string_view text);
// "3" -> 3; a whole number from 1 to 10.
int parse_verify_attempts(std::string_view text);

// An allowed range of a measured value; an open side is -inf or +inf.
struct Range {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool contains(double value) const { return value >= low && value <= high; }  // false for NaN
  bool bounded() const { return std::isfinite(low) || std::isfinite(high); }
};

// What round trip a pair should show, and how to measure it.
struct RttPlan {
  double expected_ms = 0;  // mean RTT the settings give: both delays (jittered latencies are
                           // clamped at 0, which raises their mean), plus a probe's serialization
  double spread_ms = 0;    // standard deviation of one RTT from jitter (0 without)
  bool use_mean = false;   // with jitter the mean of the echoes is compared, else their median
  int probes = 20;
  double interval_ms = 10;
  double answer_probability = 1;  // of one echo, from the configured loss both ways
  bool measurable = true;         // false: so much loss that too few echoes would come back
};
RttPlan plan_rtt(const PairParams& there, const PairParams& back);
// The allowed range of the measured median (or mean) from `answered` echoes:
// expected x (1 +- tolerance) +- slack, and with jitter +- 4 standard errors
// of the mean (4 x spread / sqrt(answered)); never below 0.
Range rtt_range(const RttPlan& plan, const VerifyOptions& options, std::size_t answered);

// The long-run mean loss of one direction: the Bernoulli probability, or
// Gilbert-Elliott's stationary mix of its good and bad states' losses.
double mean_loss(const PairParams& pair);

// What goodput a directed pair should show, and how to measure it.
struct GoodputPlan {
  int streams = 1;            // enough that socket buffers do not limit (at most 8)
  double warmup_seconds = 1;  // not counted: 30 RTTs of slow start and settling, 1-10 s
  double ceiling_bps =
      std::numeric_limits<double>::infinity();  // payload the shaping lets
                                                // through: min(rate, streams x flow_rate) x kPayloadShare
  bool lower_bound = false;                     // whether the ceiling must also be reached
  std::string why_no_lower_bound;               // when it need not: "loss", "reorder", "window", "queue < RTT/2"
};
GoodputPlan plan_goodput(const PairParams& pair, const HostSettings& host, double rtt_ms);
// [ceiling x (1 - tolerance), ceiling x (1 + tolerance)], the low side open
// without a lower bound, both open when the pair is unlimited.
Range goodput_range(const GoodputPlan& plan, const VerifyOptions& options);

// One line of the table: a pair's RTT ("east <-> west") or one direction's
// goodput ("east -> west").
struct VerifyRow {
  enum class Check { rtt, goodput };
  std::string pair;
  Check check = Check::rtt;
  std::string configured;          // as printed: "20.00 ms", "100mbit"
  double measured = std::nan("");  // ms or bit/s
  Range allowed;                   // ms or bit/s; unbounded: shown, not checked
  std::string how;                 // "median of 20/20 echoes", "4 streams, 2 s"
  std::string problem;             // why it fails when not for the range ("no echo came back")
  std::string unmeasured;          // why it was not measured ("its schedule pauses the link now"); passes
  int attempts = 1;                // measurements taken; the row is the best of them
  double host_stolen = 0;          // share of the CPUs' time a hypervisor took meanwhile (/proc/stat)
  bool passed() const { return problem.empty() && (!allowed.bounded() || allowed.contains(measured)); }
};

// Whether a row failed only by being slower than allowed: an RTT above its
// range, a goodput below it. A busy host (other work, a hypervisor's steal)
// can cause that, and only that: it delays echoes and slows streams, and
// never makes a path faster than the data plane lets it be.
bool slower_than_allowed(const VerifyRow& row);
// Runs `measure` until a row is not slower than allowed, at most `attempts`
// times, and returns the best row (the lowest RTT or highest goodput) with
// `attempts` and its HOW saying how many were taken. A row that fails on the
// other side, or for a problem, ends it at once: no host makes that.
VerifyRow measured_with_attempts(int attempts, const std::function<VerifyRow()>& measure);

std::string verify_table_header();
std::string format_verify_row(const VerifyRow& row);
// One line naming the pair and check, measured and configured values and the
// allowed range, and for a slow one the hypervisor's steal meanwhile (from
// base::kStolenNamed up); for a failed row.
std::string describe_failure(const VerifyRow& row, const VerifyOptions& options);

struct VerifyResult {
  std::vector<VerifyRow> rows;
  // Every row passed and at least one was measured: rows none of which
  // could be measured say nothing of the testbed.
  bool passed() const;
  // When no row was measured, one line saying why ("no pair could be
  // measured: east <-> west rtt: its schedule pauses the link now"); else empty.
  std::string nothing_measured() const;
};

// How verify measures a pair of DCs (by index): RTTs of `count` echoes every
// `interval_ms` (ms each; a lost one left out), and TCP goodput (bit/s at the
// receiver); `unmeasurable` says why a pair cannot be ("" when it can; may be empty).
struct PairProbes {
  std::function<std::vector<double>(int a, int b, int count, double interval_ms)> rtt_ms;
  std::function<double(int src, int dst, const GoodputOptions& options)> goodput_bps;
  std::function<std::string(int a, int b)> unmeasurable;
  std::string echo_name;  // what the table calls an echo ("pings"); default "echoes"
};

// Measures a namespace testbed between the first hosts of every two DCs: all
// RTTs first, then (options.goodput) each direction's goodput, one at a time.
// `configured` gives the scenario to compare with; it is asked before and
// after each measurement, and a row whose settings changed meanwhile (an
// [[event]], `wanlab set`) fails saying so. Its DCs must be the testbed's.
// `on_row` sees each row when done. SIGINT/SIGTERM meanwhile stop it with an
// exception after the current measurement. Attached testbeds are refused.
VerifyResult verify_testbed(const TestbedState& state, const std::function<Scenario()>& configured,
                            const VerifyOptions& options, const std::function<void(const VerifyRow&)>& on_row);

// Across machines (a testbed of `wanlab join`): the same checks and order,
// each pair measured by `probes` (slurm_probes: ping and iperf3 on the
// allocation's nodes through srun). The schedules live on the gateways and
// are not followed: a scheduled pair is not measured.
VerifyResult verify_machines(const TestbedState& state, const std::function<Scenario()>& configured,
                             const VerifyOptions& options, const std::function<void(const VerifyRow&)>& on_row,
                             const PairProbes& probes);

// What pings' output says: each reply's time (ms), in order.
std::vector<double> ping_times_ms(std::string_view output);
// iperf3 -J's goodput at the receiver (end.sum_received.bits_per_second);
// throws std::runtime_error saying what is missing or what iperf3's error was.
double iperf3_received_bps(std::string_view json);

// For a testbed of `wanlab join` inside a Slurm job: each DC is measured from
// the allocation's first node in it (a DC with none is not measured); ping
// (as often as the RTT plan says) and an iperf3 client run on the near node,
// an iperf3 server on the far one, each a one-task step `srun --overlap`.
// iperf3 must be on each node's PATH. Throws std::runtime_error outside a
// Slurm job or for a node in no DC.
PairProbes slurm_probes(const Scenario& scenario);

}  // namespace wanlab::emulator
