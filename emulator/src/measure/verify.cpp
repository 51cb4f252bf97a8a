#include "wanlab/emulator/verify.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/cpu_times.hpp"
#include "wanlab/emulator/datapath.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/probe.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::emulator {
using namespace detail;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A probe on the wire: Ethernet, IPv4 and UDP headers and probe.cpp's 16-byte
// stamped echo. The data plane charges it at the pair's rate.
constexpr std::uint64_t kProbeWireBytes = 14 + 20 + 8 + 16;
// Echoes per RTT check: the median of 20; with jitter the mean of 50.
constexpr int kMedianProbes = 20;
constexpr int kMeanProbes = 50;
constexpr int kMaxProbes = 400;
// Below this share of echoes answered, RTT is not measured.
constexpr double kMinAnswerShare = 0.05;
// Above this mean loss one way, TCP goodput says nothing of the rate.
constexpr double kMaxGoodputLoss = 0.10;
constexpr int kMaxStreams = 8;
// Standard errors of the mean by which jitter widens the RTT range.
constexpr double kJitterStandardErrors = 4;
constexpr int kMaxAttempts = 10;

double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// Mean of max(0, delay + U) for U uniform in [-jitter, +jitter].
double mean_latency_ms(const PairParams& pair) {
  const double delay = ms(pair.delay_ns), jitter = ms(pair.jitter_ns);
  if (jitter <= delay) return delay;
  return (delay + jitter) * (delay + jitter) / (4 * jitter);
}

double probe_serialization_ms(const PairParams& pair) {
  return pair.rate_bps == 0 ? 0 : static_cast<double>(kProbeWireBytes) * 8e3 / static_cast<double>(pair.rate_bps);
}

bool same_settings(const PairParams& a, const PairParams& b) {
  return a.rate_bps == b.rate_bps && a.flow_rate_bps == b.flow_rate_bps && a.delay_ns == b.delay_ns &&
         a.jitter_ns == b.jitter_ns && a.queue.kind == b.queue.kind && a.queue.value == b.queue.value &&
         a.loss == b.loss && a.loss_model == b.loss_model && a.ge_r == b.ge_r && a.ge_bad_loss == b.ge_bad_loss &&
         a.ge_good_loss == b.ge_good_loss && a.reorder == b.reorder;
}

std::string format_value(VerifyRow::Check check, double value) {
  return check == VerifyRow::Check::rtt ? fmt::format("{:.2f}", value) : fmt::format("{:.1f}", value / 1e6);
}

const char* unit(VerifyRow::Check check) { return check == VerifyRow::Check::rtt ? "ms" : "Mbit/s"; }
const char* name(VerifyRow::Check check) { return check == VerifyRow::Check::rtt ? "rtt" : "goodput"; }

std::string format_range(VerifyRow::Check check, const Range& range) {
  if (!range.bounded()) return "not checked";
  if (!std::isfinite(range.low)) return fmt::format("<= {} {}", format_value(check, range.high), unit(check));
  if (!std::isfinite(range.high)) return fmt::format(">= {} {}", format_value(check, range.low), unit(check));
  return fmt::format("{} - {} {}", format_value(check, range.low), format_value(check, range.high), unit(check));
}

std::string format_measured(const VerifyRow& row) {
  if (std::isnan(row.measured)) return "-";
  return fmt::format("{} {}", format_value(row.check, row.measured), unit(row.check));
}

const Host& first_host(const TestbedState& state, int dc) {
  for (const auto& host : state.hosts)
    if (host.dc_index == dc) return host;
  throw std::runtime_error(
      fmt::format("{}: DC {} has no hosts", state.name, state.dcs.at(static_cast<std::size_t>(dc))));
}

Endpoint endpoint(const Host& host) { return {host.netns, host.ipv4}; }

// The scenario to compare with, checked against the testbed's DCs.
Scenario configured_for(const TestbedState& state, const std::function<Scenario()>& configured) {
  Scenario scenario = configured();
  std::vector<std::string> names;
  for (const auto& dc : scenario.dcs) names.push_back(dc.name);
  if (names != state.dcs) {
    std::string ours, theirs;
    for (const auto& dc : names) ours += (ours.empty() ? "" : ", ") + dc;
    for (const auto& dc : state.dcs) theirs += (theirs.empty() ? "" : ", ") + dc;
    throw std::runtime_error(
        fmt::format("{}: its DCs ({}) are not those of testbed {} ({})", scenario.path, ours, state.name, theirs));
  }
  return scenario;
}

// Runs one measurement into `row`; a failure of the measurement itself fails
// the row, an interrupt stops verify.
template <typename Measure>
void measure_into(VerifyRow& row, Measure measure) {
  try {
    measure();
  } catch (const std::exception& error) {
    base::check_interrupted();
    row.problem = fmt::format("the measurement failed: {}", error.what());
  }
  base::check_interrupted();
}

const char* kChanged = "its settings changed during the measurement ([[event]] or wanlab set); verify again";

// Scheduled pairs (SCENARIO.md#schedules) as verify sees them: the settings
// the data plane gives a pair for the whole of a measurement, laid over the
// scenario's, or why they do not hold still that long. The scenario alone
// would compare a scheduled pair with its base settings, which its schedule
// replaces.
class Schedules {
 public:
  struct View {
    PairParams pair;
    std::string step;      // "the schedule's step now": when it holds for the measurement
    std::string unsteady;  // why it is not measured: it changes, or pauses the link
  };

  explicit Schedules(const TestbedState& state) {
    try {
      datapath_.emplace(open_data_plane(state));
    } catch (const std::exception& error) {
      throw std::runtime_error(fmt::format("{}: reading its data plane's schedules: {}", state.name, error.what()));
    }
  }

  // `pair` (src -> dst as configured) over the next `window_ns`.
  View over(const PairParams& pair, int src, int dst, std::uint64_t window_ns) const {
    View view{pair, "", ""};
    const std::uint64_t now = static_cast<std::uint64_t>(base::monotonic_ns());
    const Datapath::PairAt first = datapath_->pair_at(src, dst, now);
    if (!first.scheduled) return view;
    if (first.paused) {
      view.unsteady = "its schedule pauses the link now";
      return view;
    }
    for (std::uint64_t t = now + kStepCheckNs; t <= now + window_ns; t += kStepCheckNs) {
      const Datapath::PairAt at = datapath_->pair_at(src, dst, t);
      if (at.paused || at.config.rate_bps != first.config.rate_bps || at.config.delay_ns != first.config.delay_ns ||
          at.config.loss_p32 != first.config.loss_p32) {
        view.unsteady = fmt::format("its schedule changes {:.0f} ms into the measurement", ms(t - now));
        return view;
      }
    }
    view.pair.rate_bps = first.config.rate_bps;
    view.pair.delay_ns = first.config.delay_ns;
    if (pair.loss_model == LossModel::bernoulli)
      view.pair.loss = static_cast<double>(first.config.loss_p32) / 4294967296.0;
    view.step = "the schedule's step now";
    return view;
  }

 private:
  // Schedules step at 1 ms at the finest (SCENARIO.md#schedules).
  static constexpr std::uint64_t kStepCheckNs = 1'000'000;
  std::optional<Datapath> datapath_;
};

// `pair` over the window: as the data plane's schedules give it on one box;
// across machines (no schedules here: each gateway holds its own) as
// configured, or not measured when the scenario schedules it.
Schedules::View view_of(const Schedules* schedules, const Scenario& scenario, const PairParams& pair, int src, int dst,
                        std::uint64_t window_ns) {
  if (schedules) return schedules->over(pair, src, dst, window_ns);
  Schedules::View view{pair, "", ""};
  if (scenario.scheduled(src, dst))
    view.unsteady = "its schedule runs on the DC's gateway, which verify across machines does not follow";
  return view;
}

VerifyRow not_measured(VerifyRow row, const std::string& why) {
  row.unmeasured = why;
  row.how = "not measured: " + why;
  return row;
}

std::uint64_t seconds_ns(double seconds) { return static_cast<std::uint64_t>(seconds * 1e9); }

VerifyRow verify_rtt(const TestbedState& state, const std::function<Scenario()>& configured, const Schedules* schedules,
                     const PairProbes& probes, const VerifyOptions& options, int a, int b) {
  const Scenario before = configured_for(state, configured);
  const PairParams there = before.pair(a, b), back = before.pair(b, a);
  // Long enough for every echo at the configured settings (a step only makes it longer or shorter by its delay).
  const RttPlan configured_plan = plan_rtt(there, back);
  const std::uint64_t window =
      seconds_ns((configured_plan.probes * configured_plan.interval_ms + 4 * configured_plan.expected_ms) / 1e3 + 1);
  const Schedules::View there_now = view_of(schedules, before, there, a, b, window),
                        back_now = view_of(schedules, before, back, b, a, window);
  const RttPlan plan = plan_rtt(there_now.pair, back_now.pair);
  VerifyRow row;
  row.pair = state.dcs[static_cast<std::size_t>(a)] + " <-> " + state.dcs[static_cast<std::size_t>(b)];
  row.check = VerifyRow::Check::rtt;
  row.configured = fmt::format("{:.2f} ms", plan.expected_ms);
  if (const std::string& why = !there_now.unsteady.empty() ? there_now.unsteady : back_now.unsteady; !why.empty())
    return not_measured(std::move(row), why);
  if (!plan.measurable)
    return not_measured(std::move(row),
                        fmt::format("configured loss answers {:.1f}% of echoes", 100 * plan.answer_probability));
  if (const std::string why = probes.unmeasurable ? probes.unmeasurable(a, b) : ""; !why.empty())
    return not_measured(std::move(row), why);
  measure_into(row, [&] {
    const std::vector<double> rtts = probes.rtt_ms(a, b, plan.probes, plan.interval_ms);
    row.how = fmt::format("{} of {}/{} {}", plan.use_mean ? "mean" : "median", rtts.size(), plan.probes,
                          probes.echo_name.empty() ? "echoes" : probes.echo_name);
    if (plan.use_mean) row.how += fmt::format(", jitter: sd {:.2f} ms", plan.spread_ms);
    if (rtts.empty()) {
      row.problem = fmt::format("none of {} echoes came back", plan.probes);
      return;
    }
    row.measured = plan.use_mean ? mean(rtts) : median(rtts);
    row.allowed = rtt_range(plan, options, rtts.size());
    if (const std::string& step = !there_now.step.empty() ? there_now.step : back_now.step; !step.empty())
      row.how += "; " + step;
  });
  const Scenario after = configured_for(state, configured);
  if (!same_settings(there, after.pair(a, b)) || !same_settings(back, after.pair(b, a))) row.problem = kChanged;
  return row;
}

VerifyRow verify_goodput(const TestbedState& state, const std::function<Scenario()>& configured,
                         const Schedules* schedules, const PairProbes& probes, const VerifyOptions& options, int src,
                         int dst) {
  const Scenario before = configured_for(state, configured);
  const PairParams configured_pair = before.pair(src, dst);
  // The measurement's length (its warm-up follows the RTT, which a step may change).
  const auto window_for = [&](const PairParams& there, const PairParams& back) {
    return seconds_ns(plan_goodput(there, before.host, plan_rtt(there, back).expected_ms).warmup_seconds +
                      options.goodput_seconds + 1);
  };
  std::uint64_t window = window_for(configured_pair, before.pair(dst, src));
  Schedules::View now = view_of(schedules, before, configured_pair, src, dst, window);
  Schedules::View back = view_of(schedules, before, before.pair(dst, src), dst, src, window);
  if (const std::uint64_t needed = window_for(now.pair, back.pair); needed > window) {
    now = view_of(schedules, before, configured_pair, src, dst, needed);
    back = view_of(schedules, before, before.pair(dst, src), dst, src, needed);
  }
  const PairParams& pair = now.pair;
  const GoodputPlan plan = plan_goodput(pair, before.host, plan_rtt(pair, back.pair).expected_ms);
  VerifyRow row;
  row.pair = state.dcs[static_cast<std::size_t>(src)] + " -> " + state.dcs[static_cast<std::size_t>(dst)];
  row.check = VerifyRow::Check::goodput;
  row.configured = pair.rate_bps ? units::format_rate(pair.rate_bps) : "unlimited";
  if (pair.flow_rate_bps) row.configured += ", flow " + units::format_rate(pair.flow_rate_bps);
  if (const std::string& why = !now.unsteady.empty() ? now.unsteady : back.unsteady; !why.empty())
    return not_measured(std::move(row), why);
  if (mean_loss(pair) > kMaxGoodputLoss || mean_loss(before.pair(dst, src)) > kMaxGoodputLoss)
    return not_measured(std::move(row), "loss above 10% leaves TCP's goodput unrelated to the rate");
  if (const std::string why = probes.unmeasurable ? probes.unmeasurable(src, dst) : ""; !why.empty())
    return not_measured(std::move(row), why);
  measure_into(row, [&] {
    GoodputOptions goodput;
    goodput.seconds = options.goodput_seconds;
    goodput.warmup_seconds = plan.warmup_seconds;
    goodput.streams = plan.streams;
    row.measured = probes.goodput_bps(src, dst, goodput);
    row.allowed = goodput_range(plan, options);
    row.how = fmt::format("{} stream{}, {:g} s", plan.streams, plan.streams == 1 ? "" : "s", options.goodput_seconds);
    if (!plan.lower_bound && std::isfinite(plan.ceiling_bps)) row.how += "; no lower bound: " + plan.why_no_lower_bound;
    if (!now.step.empty()) row.how += "; " + now.step;
  });
  if (!same_settings(configured_pair, configured_for(state, configured).pair(src, dst))) row.problem = kChanged;
  return row;
}

}  // namespace

bool parse_verify_check(std::string_view text) {
  if (text == "rtt") return false;
  if (text == "rate") return true;
  throw std::invalid_argument("expected rtt or rate, got " + base::quoted(text));
}

double parse_verify_tolerance(std::string_view text) {
  const double fraction = units::parse_percent(text);
  if (fraction >= 1) throw std::invalid_argument("expected a tolerance below 100%, got " + base::quoted(text));
  return fraction;
}

std::uint64_t parse_verify_slack(std::string_view text) {
  const std::uint64_t ns = units::parse_time(text);
  if (ns > 10'000'000'000ull) throw std::invalid_argument("expected at most 10s, got " + base::quoted(text));
  return ns;
}

int parse_verify_attempts(std::string_view text) { return base::parse_integer<int>(text, 1, kMaxAttempts); }

double mean_loss(const PairParams& pair) {
  if (pair.loss_model == LossModel::bernoulli) return pair.loss;
  const double entering = pair.loss, leaving = pair.ge_r;
  const double bad_share = entering + leaving > 0 ? entering / (entering + leaving) : 0;
  return bad_share * pair.ge_bad_loss + (1 - bad_share) * pair.ge_good_loss;
}

RttPlan plan_rtt(const PairParams& there, const PairParams& back) {
  RttPlan plan;
  plan.expected_ms =
      mean_latency_ms(there) + mean_latency_ms(back) + probe_serialization_ms(there) + probe_serialization_ms(back);
  const double jitter_there = ms(there.jitter_ns), jitter_back = ms(back.jitter_ns);
  // A uniform in [-j, j] has variance j^2 / 3 (less where it is clamped at 0).
  plan.spread_ms = std::sqrt((jitter_there * jitter_there + jitter_back * jitter_back) / 3);
  plan.use_mean = plan.spread_ms > 0;
  // Echoes far enough apart that keeping order does not hold one behind another.
  plan.interval_ms = plan.use_mean ? std::clamp(2 * std::max(jitter_there, jitter_back) + 1, 10.0, 100.0) : 10.0;
  plan.answer_probability = (1 - mean_loss(there)) * (1 - mean_loss(back));
  plan.measurable = plan.answer_probability >= kMinAnswerShare;
  const int wanted = plan.use_mean ? kMeanProbes : kMedianProbes;
  plan.probes =
      plan.measurable ? std::min(kMaxProbes, static_cast<int>(std::ceil(wanted / plan.answer_probability))) : 0;
  return plan;
}

Range rtt_range(const RttPlan& plan, const VerifyOptions& options, std::size_t answered) {
  double margin = plan.expected_ms * options.tolerance + ms(options.slack_ns);
  if (plan.use_mean && answered > 0)
    margin += kJitterStandardErrors * plan.spread_ms / std::sqrt(static_cast<double>(answered));
  return Range{std::max(0.0, plan.expected_ms - margin), plan.expected_ms + margin};
}

GoodputPlan plan_goodput(const PairParams& pair, const HostSettings& host, double rtt_ms) {
  GoodputPlan plan;
  const double rtt_s = rtt_ms / 1e3;
  // Slow start and the first losses of several cubic streams take tens of
  // RTTs to settle (15 left 136 ms paths 5-8% short on this machine).
  plan.warmup_seconds = std::clamp(30 * rtt_s, 1.0, 10.0);
  const double rate = pair.rate_bps ? static_cast<double>(pair.rate_bps) : kInf;
  const double flow = pair.flow_rate_bps ? static_cast<double>(pair.flow_rate_bps) : kInf;
  if (std::isinf(rate) && std::isinf(flow)) {
    plan.why_no_lower_bound = "unlimited";
    return plan;
  }
  const double window = stream_window_limit_bps(host, rtt_s);
  const double per_stream = std::min(flow, window);
  // Streams enough to fill the link; with only a per-flow cap, two or more
  // (whether each stream is capped shows only with several).
  const double target = std::isinf(rate) ? 2 * flow : rate;
  plan.streams =
      std::isinf(per_stream) ? 1 : std::clamp(static_cast<int>(std::ceil(1.25 * target / per_stream)), 1, kMaxStreams);
  const double shaped = std::min(rate, plan.streams * flow);
  plan.ceiling_bps = shaped * kPayloadShare;
  const std::uint64_t rtt_ns = static_cast<std::uint64_t>(rtt_ms * 1e6);
  if (mean_loss(pair) > 0) {
    plan.why_no_lower_bound = "loss";
  } else if (pair.jitter_ns > 0 && pair.reorder) {
    plan.why_no_lower_bound = "reorder";
  } else if (plan.streams * window < 1.1 * shaped) {
    plan.why_no_lower_bound = "socket buffers";
  } else if (make_pair_config(pair, rtt_ns, 1, 0).queue_limit_ns < rtt_ns / 2) {
    plan.why_no_lower_bound = "queue below RTT/2";
  } else {
    plan.lower_bound = true;
  }
  return plan;
}

Range goodput_range(const GoodputPlan& plan, const VerifyOptions& options) {
  if (std::isinf(plan.ceiling_bps)) return Range{};
  Range range;
  range.high = plan.ceiling_bps * (1 + options.tolerance);
  if (plan.lower_bound) range.low = plan.ceiling_bps * (1 - options.tolerance);
  return range;
}

bool slower_than_allowed(const VerifyRow& row) {
  if (!row.problem.empty() || !row.unmeasured.empty() || std::isnan(row.measured) || !row.allowed.bounded())
    return false;
  return row.check == VerifyRow::Check::rtt ? row.measured > row.allowed.high : row.measured < row.allowed.low;
}

VerifyRow measured_with_attempts(int attempts, const std::function<VerifyRow()>& measure) {
  VerifyRow best = measure();
  int taken = 1;
  const auto better = [](const VerifyRow& row, const VerifyRow& than) {
    return row.check == VerifyRow::Check::rtt ? row.measured < than.measured : row.measured > than.measured;
  };
  while (taken < attempts && slower_than_allowed(best)) {
    VerifyRow again = measure();
    ++taken;
    if (slower_than_allowed(again)) {
      if (better(again, best)) best = std::move(again);
    } else {
      best = std::move(again);  // it passed, or failed in a way no busy host explains
    }
  }
  best.attempts = taken;
  if (taken > 1) best.how += fmt::format("; best of {} attempts", taken);
  return best;
}

std::string verify_table_header() {
  return fmt::format("{:<16} {:<7} {:>12} {:>13} {:>21}  {:<6} {}", "PAIR", "CHECK", "CONFIGURED", "MEASURED",
                     "ALLOWED", "RESULT", "HOW");
}

std::string format_verify_row(const VerifyRow& row) {
  const bool checked = !row.problem.empty() || row.allowed.bounded();
  return fmt::format("{:<16} {:<7} {:>12} {:>13} {:>21}  {:<6} {}", row.pair, name(row.check), row.configured,
                     format_measured(row), format_range(row.check, row.allowed),
                     row.passed() ? (checked ? "ok" : "-") : "FAIL", row.how);
}

std::string describe_failure(const VerifyRow& row, const VerifyOptions& options) {
  if (!row.problem.empty()) return fmt::format("{} {}: {}", row.pair, name(row.check), row.problem);
  std::string why = fmt::format("tolerance {}", units::format_percent(options.tolerance));
  if (row.check == VerifyRow::Check::rtt) why += " + slack " + units::format_time(options.slack_ns);
  std::string line = fmt::format("{} {}: measured {}, configured {}; allowed {} ({})", row.pair, name(row.check),
                                 format_measured(row), row.configured, format_range(row.check, row.allowed), why);
  if (row.attempts > 1)
    line += fmt::format(", the best of {} attempts, each {}", row.attempts,
                        row.check == VerifyRow::Check::rtt ? "longer" : "lower");
  if (slower_than_allowed(row) && row.host_stolen >= base::kStolenNamed)
    line += fmt::format(
        "; the hypervisor took {:.0f}% of this machine's CPU time meanwhile: verify again when the host is quieter",
        100 * row.host_stolen);
  return line;
}

bool VerifyResult::passed() const {
  return nothing_measured().empty() &&
         std::all_of(rows.begin(), rows.end(), [](const VerifyRow& row) { return row.passed(); });
}

std::string VerifyResult::nothing_measured() const {
  constexpr std::size_t kNamed = 3;
  if (rows.empty()) return "no pair could be measured: the testbed has one DC (verify measures between DCs)";
  if (std::any_of(rows.begin(), rows.end(), [](const VerifyRow& row) { return row.unmeasured.empty(); })) return "";
  std::string why;
  for (std::size_t i = 0; i < std::min(rows.size(), kNamed); ++i)
    why += fmt::format("{}{} {}: {}", i == 0 ? "" : "; ", rows[i].pair, name(rows[i].check), rows[i].unmeasured);
  if (rows.size() > kNamed) why += fmt::format("; and {} more", rows.size() - kNamed);
  return "no pair could be measured: " + why;
}

namespace {

// measured_with_attempts, and what the hypervisor took meanwhile.
VerifyRow attempted(const VerifyOptions& options, const std::function<VerifyRow()>& measure) {
  const std::optional<base::CpuTimes> before = base::read_cpu_times();
  VerifyRow row = measured_with_attempts(options.attempts, measure);
  if (const std::optional<base::CpuTimes> after = base::read_cpu_times(); before && after)
    row.host_stolen = base::stolen_share(*before, *after);
  return row;
}

// Every pair's RTT first, then each direction's goodput, one at a time.
VerifyResult verify_pairs(const TestbedState& state, const std::function<Scenario()>& configured,
                          const VerifyOptions& options, const std::function<void(const VerifyRow&)>& on_row,
                          const Schedules* schedules, const PairProbes& probes) {
  configured_for(state, configured);  // the DCs match before anything is measured
  base::InterruptGuard interrupts;
  VerifyResult result;
  const int n = static_cast<int>(state.dcs.size());
  auto add = [&](VerifyRow row) {
    if (on_row) on_row(row);
    result.rows.push_back(std::move(row));
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      add(attempted(options, [&] { return verify_rtt(state, configured, schedules, probes, options, a, b); }));
  if (options.goodput)
    for (int src = 0; src < n; ++src)
      for (int dst = 0; dst < n; ++dst)
        if (src != dst)
          add(attempted(options,
                        [&] { return verify_goodput(state, configured, schedules, probes, options, src, dst); }));
  return result;
}

}  // namespace

VerifyResult verify_testbed(const TestbedState& state, const std::function<Scenario()>& configured,
                            const VerifyOptions& options, const std::function<void(const VerifyRow&)>& on_row) {
  if (state.kind == TestbedKind::attached || state.kind == TestbedKind::member)
    throw std::runtime_error(
        fmt::format("testbed {} is {} on {}: it has no hosts of its own to measure between "
                    "(verify measures testbeds made by wanlab up, and across machines runs in a Slurm job)",
                    state.name, state.machine ? "a part of `wanlab join`" : "attached", state.dev));
  // Between the first hosts of two DCs, in their namespaces.
  PairProbes probes;
  probes.rtt_ms = [&state](int a, int b, int count, double interval_ms) {
    return measure_rtt_ms(endpoint(first_host(state, a)), endpoint(first_host(state, b)), count, interval_ms);
  };
  probes.goodput_bps = [&state](int src, int dst, const GoodputOptions& goodput) {
    return measure_goodput_bps(endpoint(first_host(state, src)), endpoint(first_host(state, dst)), goodput);
  };
  const Schedules schedules(state);
  return verify_pairs(state, configured, options, on_row, &schedules, probes);
}

VerifyResult verify_machines(const TestbedState& state, const std::function<Scenario()>& configured,
                             const VerifyOptions& options, const std::function<void(const VerifyRow&)>& on_row,
                             const PairProbes& probes) {
  return verify_pairs(state, configured, options, on_row, nullptr, probes);
}

}  // namespace wanlab::emulator
