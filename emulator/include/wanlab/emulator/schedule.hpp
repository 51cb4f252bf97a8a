// Schedules: a DC pair's rate, delay, loss and cross-traffic share over time,
// from a CSV trace, a Mahimahi trace or a scenario's inline steps, and the map
// entries the tc program reads them from (wanlab_shared.h: wanlab_sched_*).
//
// Every parser throws ScenarioError with one line that names where:
// "trace.csv:7: rate: expected a rate like \"100mbit\", got \"fast\"".
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include "wanlab_shared.h"
}

namespace wanlab::emulator {

// What holds from at_ns until the next step (or the period's end).
struct ScheduleStep {
  std::uint64_t at_ns = 0;
  std::uint64_t rate_bps = 0;  // 0: the link sends nothing during the step
  std::uint64_t delay_ns = 0;
  double loss = 0;   // probability
  double share = 0;  // of the rate, taken by cross-traffic

  bool operator==(const ScheduleStep&) const = default;
};

struct Schedule {
  std::string where;            // "scenario.toml:12:1" or the trace's path, for messages
  unsigned columns = 0;         // WANLAB_SCHED_*: what the steps set
  std::uint64_t period_ns = 0;  // the steps repeat after this; 0: the last holds
  std::vector<ScheduleStep> steps;

  // The step in effect `offset_ns` after the schedule's time 0.
  const ScheduleStep& step_at(std::uint64_t offset_ns) const;
  // The time-weighted mean rate over one period (or up to the last step).
  double mean_rate_bps() const;
  // The same columns, period and steps (`where` aside): one map in the data plane.
  bool same_steps(const Schedule& other) const;
};

// The columns of CSV traces and inline steps, in this order: time first.
// Returns its WANLAB_SCHED_* bit, 0 for "time", or throws
// std::invalid_argument naming the known ones (and the likely one meant).
unsigned schedule_column(std::string_view name);
// Parses one value of a column into the step, through the link keys' own
// parsers (a rate may also be "0": the link pauses). Throws std::invalid_argument.
void set_schedule_cell(ScheduleStep& step, unsigned column, std::string_view text);
// A fault of one step (its index), which the caller places: a CSV line, an
// inline step.
class ScheduleStepError : public std::invalid_argument {
 public:
  ScheduleStepError(std::size_t step, const std::string& what) : std::invalid_argument(what), step_(step) {}
  std::size_t step() const { return step_; }

 private:
  std::size_t step_;
};

// Checks the steps (the first at 0, times ascending, inside the period, the
// link not stopped for good at any pair's rate: check_link_sends) and merges
// equal neighbours. Throws std::invalid_argument, ScheduleStepError for a
// step's own fault.
void finish_schedule(Schedule& schedule);

// Whether a schedule's steps share the pair's own rate (a share column
// without a rate column): the one kind whose pauses depend on the pair.
inline bool shares_pair_rate(unsigned columns) {
  return (columns & WANLAB_SCHED_SHARE) != 0 && (columns & WANLAB_SCHED_RATE) == 0;
}
// A step as the data plane holds it: its loss and share in fixed point
// (probability_p32). schedule_entries' steps.
wanlab_sched_step data_plane_step(const ScheduleStep& step);
// Whether a pair whose config is `config` (make_pair_config's; its rate is
// what a schedule without a rate column shares) ever sends under the
// schedule, judged by the tc program's own rule (wanlab_edt_sched_paused) on
// the values the data plane holds: a share that rounds to 100%, or a rate
// that a share leaves below 1 bit/s, pauses the link as rate 0 does. Throws
// ScheduleStepError when every step pauses the link (naming the first step)
// or, without a period, the last one does; std::invalid_argument for a share
// of an unlimited link.
void check_link_sends(const Schedule& schedule, const wanlab_pair_config& config);
// The same for a schedule as the data plane holds it (Datapath::schedule).
void check_link_sends(std::span<const wanlab_sched_entry> entries, const wanlab_pair_config& config);

// The most schedule steps one testbed's data plane holds in all, counting
// each distinct schedule once (pairs with equal schedules share one map):
// two of the largest, 256 MiB of maps.
inline constexpr std::uint64_t kMaxTestbedScheduleSteps = 2ull * WANLAB_SCHED_MAX_STEPS;
// Throws std::invalid_argument saying the total and the limit when `steps`
// is above kMaxTestbedScheduleSteps.
void check_schedule_total(std::uint64_t steps);

// The text of a trace file: a regular file of at most 256 MiB (a Mahimahi
// trace at 1 Gbit/s is about 500,000 lines a minute). The parsers below
// read it line by line: what they hold grows with the steps they make, not
// with the trace's lines or milliseconds. Throws ScenarioError
// "PATH: cannot read trace: reason".
std::string read_trace_file(const std::string& path);

// A CSV trace: a header row naming the columns ("time,rate,delay,loss,share",
// time first, any subset of the others), then one row per step with a value
// of each; blank lines and lines starting with '#' are skipped.
Schedule parse_schedule_csv(std::string_view text, const std::string& path, std::uint64_t period_ns);
// A Mahimahi trace: one line per delivery opportunity of 1500 bytes, its time
// in whole milliseconds (non-decreasing; repeated lines are more in that
// millisecond). The trace repeats after its last time, as Mahimahi replays it.
// The result has the rate of each `resolution_ns` window (the last one may be
// shorter), so its mean rate is the trace's exactly.
Schedule parse_mahimahi_trace(std::string_view text, const std::string& path, std::uint64_t resolution_ns);
inline constexpr std::uint64_t kMahimahiPacketBytes = 1500;

// The map entries for the data plane: the head (time 0 at start_ns), then
// the steps with probabilities in fixed point.
std::vector<wanlab_sched_entry> schedule_entries(const Schedule& schedule, std::uint64_t start_ns);

}  // namespace wanlab::emulator
