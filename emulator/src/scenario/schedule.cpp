// Schedules: CSV and Mahimahi traces, their checks, and the map entries.
#include "wanlab/emulator/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/input.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/units.hpp"

extern "C" {
#include "wanlab_edt.h"
}

namespace wanlab::emulator {
namespace {

using namespace std::string_view_literals;

struct Column {
  std::string_view name;
  unsigned bit;
};
constexpr std::array kColumns{Column{"time", 0}, Column{"rate", WANLAB_SCHED_RATE}, Column{"delay", WANLAB_SCHED_DELAY},
                              Column{"loss", WANLAB_SCHED_LOSS}, Column{"share", WANLAB_SCHED_SHARE}};
constexpr std::uint64_t kNsPerMs = 1'000'000;
constexpr std::size_t kMaxTraceBytes = 256u << 20;
constexpr std::uint64_t kNsPerSecond = 1'000'000'000;

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> cells;
  for (std::size_t comma; (comma = line.find(',')) != std::string_view::npos; line.remove_prefix(comma + 1))
    cells.push_back(trim(line.substr(0, comma)));
  cells.push_back(trim(line));
  return cells;
}

// Lines with their 1-based numbers, blank ones and '#' comments left out,
// one at a time: a trace's memory is what it parses to, not its lines.
struct Line {
  std::size_t number = 0;
  std::string_view text;
};
class ContentLines {
 public:
  explicit ContentLines(std::string_view text) : rest_(text) {}

  bool next(Line& line) {
    while (!rest_.empty()) {
      ++number_;
      const std::size_t end = rest_.find('\n');
      const std::string_view text = trim(rest_.substr(0, end));
      rest_ = end == std::string_view::npos ? std::string_view{} : rest_.substr(end + 1);
      if (!text.empty() && text.front() != '#') {
        line = {number_, text};
        return true;
      }
    }
    return false;
  }

 private:
  std::string_view rest_;
  std::size_t number_ = 0;
};

// The number of the content line at `index` (from 0), for a message.
std::size_t content_line_number(std::string_view text, std::size_t index) {
  ContentLines lines(text);
  Line line;
  for (std::size_t i = 0; i <= index && lines.next(line); ++i) {
  }
  return line.number;
}

[[noreturn]] void fail_at(const std::string& path, std::size_t line, std::string_view message) {
  throw ScenarioError(fmt::format("{}:{}: {}", path, line, message));
}

void check_step_count(std::size_t steps) {
  if (steps > WANLAB_SCHED_MAX_STEPS)
    throw std::invalid_argument(fmt::format("more than {} steps", WANLAB_SCHED_MAX_STEPS));
}

void check_order(const Schedule& schedule) {
  const auto& steps = schedule.steps;
  if (steps.empty()) throw std::invalid_argument("no steps");
  if (steps[0].at_ns != 0)
    throw ScheduleStepError(0, fmt::format("the first step is at {}; it must be at 0s (the schedule's start)",
                                           units::format_time(steps[0].at_ns)));
  for (std::size_t i = 1; i < steps.size(); ++i) {
    if (steps[i].at_ns <= steps[i - 1].at_ns)
      throw ScheduleStepError(
          i, fmt::format("time {} is not after the previous step's {}", units::format_time(steps[i].at_ns),
                         units::format_time(steps[i - 1].at_ns)));
  }
  if (schedule.period_ns != 0 && steps.back().at_ns >= schedule.period_ns)
    throw ScheduleStepError(
        steps.size() - 1, fmt::format("time {} is not inside the period of {}", units::format_time(steps.back().at_ns),
                                      units::format_time(schedule.period_ns)));
}

// Why the data plane sends nothing during a step (`held`, as it holds it):
// a rate of 0, or a share that leaves nothing of the rate.
std::string pause_reason(unsigned columns, const wanlab_sched_step& held, std::uint64_t pair_rate_bps,
                         const std::string& share) {
  const bool own_rate = (columns & WANLAB_SCHED_RATE) != 0;
  const std::uint64_t rate = own_rate ? held.rate_bps : pair_rate_bps;
  if (rate == 0) return "rate 0";
  if (held.share_p32 == 0xffffffffu)
    return fmt::format("a share of {} is 100% as the data plane holds it, in steps of 2^-32", share);
  return fmt::format("{} {} less a share of {} leaves less than 1 bit/s", own_rate ? "rate" : "the link's rate",
                     units::format_rate(rate), share);
}

// The data plane waits through a pause for the next step; a pause with no
// step after it would hold packets for ever. Whether a step pauses is the
// program's own rule (wanlab_edt_sched_paused) on the values it holds, so a
// share that rounds to 100% or a rate too small to share pauses here too.
// `held(i)`: step i as the data plane holds it; `share(i)`: its share as text.
template <typename Held, typename Share>
void check_sends(std::size_t count, bool loops, unsigned columns, const wanlab_pair_config& config, Held held,
                 Share share) {
  if (shares_pair_rate(columns) && config.rate_bps == 0)
    throw std::invalid_argument(
        "a share column needs a rate: give the link a rate or the schedule a rate column (an unlimited link has "
        "nothing to share)");
  auto paused = [&](std::size_t i) {
    const wanlab_sched_step step = held(i);
    return wanlab_edt_sched_paused(&config, columns, &step) != 0;
  };
  auto reason = [&](std::size_t i) { return pause_reason(columns, held(i), config.rate_bps, share(i)); };
  std::size_t sending = 0;
  while (sending < count && paused(sending)) ++sending;
  if (sending == count)
    throw ScheduleStepError(0, fmt::format("the link never sends: every step pauses it (this one: {})", reason(0)));
  if (!loops && paused(count - 1))
    throw ScheduleStepError(count - 1, fmt::format("the last step stops the link for good ({}); end with a step that "
                                                   "sends or give a period to loop",
                                                   reason(count - 1)));
}

// A pair config with the largest rate: a schedule that pauses the link at
// it pauses it at any rate.
wanlab_pair_config any_rate() {
  wanlab_pair_config config{};
  config.rate_bps = std::numeric_limits<std::uint64_t>::max();
  return config;
}

void merge_equal_neighbours(Schedule& schedule) {
  auto same = [](const ScheduleStep& a, const ScheduleStep& b) {
    ScheduleStep later = b;
    later.at_ns = a.at_ns;
    return a == later;
  };
  auto& steps = schedule.steps;
  steps.erase(std::unique(steps.begin(), steps.end(), same), steps.end());
}

}  // namespace

unsigned schedule_column(std::string_view name) {
  for (const Column& column : kColumns)
    if (column.name == name) return column.bit;
  std::vector<std::string_view> names;
  for (const Column& column : kColumns) names.push_back(column.name);
  // A trace's file may be any file (a `file` naming /etc/shadow): what it holds
  // is shown only when it is a near miss of a column's name.
  const std::string hint = base::did_you_mean(name, names);
  if (hint.empty()) throw std::invalid_argument("unknown column (columns: time, rate, delay, loss, share)");
  throw std::invalid_argument(
      fmt::format("unknown column {}{} (columns: time, rate, delay, loss, share)", base::quoted(name), hint));
}

void set_schedule_cell(ScheduleStep& step, unsigned column, std::string_view text) {
  auto through_link_key = [&](std::string_view key) {
    try {
      return parse_link_option({}, key, text);
    } catch (const ScenarioError& error) {
      // "--delay: expected ..." -> "expected ...": the caller names the column.
      std::string_view message = error.what();
      throw std::invalid_argument(std::string(message.substr(message.find(": ") + 2)));
    }
  };
  switch (column) {
    case 0: step.at_ns = units::parse_time(text); break;
    case WANLAB_SCHED_RATE: step.rate_bps = text == "0" ? 0 : through_link_key("rate").rate_bps.value(); break;
    case WANLAB_SCHED_DELAY: step.delay_ns = through_link_key("delay").delay_ns.value(); break;
    case WANLAB_SCHED_LOSS: step.loss = through_link_key("loss").loss.value(); break;
    case WANLAB_SCHED_SHARE: step.share = units::parse_percent(text); break;
    default: throw std::invalid_argument(fmt::format("column bit {:#x} unknown", column));
  }
}

void finish_schedule(Schedule& schedule) {
  check_step_count(schedule.steps.size());
  check_order(schedule);
  check_link_sends(schedule, any_rate());
  merge_equal_neighbours(schedule);
}

wanlab_sched_step data_plane_step(const ScheduleStep& step) {
  wanlab_sched_step held{};
  held.at_ns = step.at_ns;
  held.rate_bps = step.rate_bps;
  held.delay_ns = step.delay_ns;
  held.loss_p32 = probability_p32(step.loss);
  held.share_p32 = probability_p32(step.share);
  return held;
}

void check_link_sends(const Schedule& schedule, const wanlab_pair_config& config) {
  const auto& steps = schedule.steps;
  check_sends(
      steps.size(), schedule.period_ns != 0, schedule.columns, config,
      [&](std::size_t i) { return data_plane_step(steps[i]); },
      [&](std::size_t i) { return units::format_percent(steps[i].share); });
}

void check_link_sends(std::span<const wanlab_sched_entry> entries, const wanlab_pair_config& config) {
  if (entries.size() < 2) return;
  const wanlab_sched_head& head = entries[0].head;
  check_sends(
      entries.size() - 1, head.period_ns != 0, head.columns, config, [&](std::size_t i) { return entries[i + 1].step; },
      [&](std::size_t i) { return fmt::format("{:g}%", 100.0 * entries[i + 1].step.share_p32 / 4294967296.0); });
}

void check_schedule_total(std::uint64_t steps) {
  constexpr std::uint64_t kMiB = 1u << 20;
  if (steps > kMaxTestbedScheduleSteps)
    throw std::invalid_argument(
        fmt::format("the testbed's schedules come to {} steps ({} MiB of maps), more than {} ({} MiB) for one testbed",
                    steps, steps * sizeof(wanlab_sched_entry) / kMiB, kMaxTestbedScheduleSteps,
                    kMaxTestbedScheduleSteps * sizeof(wanlab_sched_entry) / kMiB));
}

bool Schedule::same_steps(const Schedule& other) const {
  return columns == other.columns && period_ns == other.period_ns && steps == other.steps;
}

const ScheduleStep& Schedule::step_at(std::uint64_t offset_ns) const {
  if (period_ns != 0) offset_ns %= period_ns;
  auto after = std::upper_bound(steps.begin(), steps.end(), offset_ns,
                                [](std::uint64_t t, const ScheduleStep& s) { return t < s.at_ns; });
  return after == steps.begin() ? steps.front() : *(after - 1);
}

double Schedule::mean_rate_bps() const {
  const std::uint64_t end = period_ns != 0 ? period_ns : steps.back().at_ns;
  if (end == 0) return static_cast<double>(steps.front().rate_bps);
  double bits = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::uint64_t until = i + 1 < steps.size() ? steps[i + 1].at_ns : end;
    bits += static_cast<double>(steps[i].rate_bps) * static_cast<double>(until - steps[i].at_ns);
  }
  return bits / static_cast<double>(end);
}

std::string read_trace_file(const std::string& path) {
  try {
    return base::read_regular_file(path, base::ReadRules{kMaxTraceBytes, true});
  } catch (const base::FileError& error) {
    throw ScenarioError(fmt::format("{}: cannot read trace: {}", path, error.reason()));
  }
}

Schedule parse_schedule_csv(std::string_view text, const std::string& path, std::uint64_t period_ns) {
  ContentLines lines(text);
  Line header;
  if (!lines.next(header)) fail_at(path, 1, R"(no header row; the first line names the columns, as in "time,rate")");
  Schedule schedule;
  schedule.where = path;
  schedule.period_ns = period_ns;
  std::vector<unsigned> columns;
  const std::vector<std::string_view> names = split(header.text);
  for (std::string_view name : names) {
    try {
      columns.push_back(schedule_column(name));
    } catch (const std::invalid_argument& error) {
      fail_at(path, header.number, error.what());
    }
    if (columns.size() == 1 && columns[0] != 0) fail_at(path, header.number, "the first column must be time");
    if (columns.size() > 1 && (columns.back() == 0 || (schedule.columns & columns.back())))
      fail_at(path, header.number, fmt::format("column {} given twice", base::quoted(name)));
    schedule.columns |= columns.back();
  }
  if (schedule.columns == 0) fail_at(path, header.number, "no column besides time (rate, delay, loss, share)");
  for (Line row; lines.next(row);) {
    if (schedule.steps.size() == WANLAB_SCHED_MAX_STEPS)
      fail_at(path, row.number, fmt::format("more than {} rows", WANLAB_SCHED_MAX_STEPS));
    const std::vector<std::string_view> cells = split(row.text);
    if (cells.size() != columns.size())
      fail_at(path, row.number, fmt::format("{} values, the header names {} columns", cells.size(), columns.size()));
    ScheduleStep step;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      try {
        set_schedule_cell(step, columns[i], cells[i]);
      } catch (const std::invalid_argument& error) {
        fail_at(path, row.number, fmt::format("{}: {}", names[i], error.what()));
      }
    }
    schedule.steps.push_back(step);
  }
  if (schedule.steps.empty()) fail_at(path, header.number, "no rows after the header");
  try {
    finish_schedule(schedule);
  } catch (const ScheduleStepError& error) {
    fail_at(path, content_line_number(text, error.step() + 1), error.what());
  } catch (const std::invalid_argument& error) {
    throw ScenarioError(fmt::format("{}: {}", path, error.what()));
  }
  return schedule;
}

namespace {

// `first`: no line has been a time yet, so the file may be any file: its
// line is not shown.
std::uint64_t mahimahi_ms(const Line& line, const std::string& path, bool first) {
  std::uint64_t ms = 0;
  const char* end = line.text.data() + line.text.size();
  auto [stop, error] = std::from_chars(line.text.data(), end, ms);
  if (error != std::errc{} || stop != end || ms > units::kMaxTimeNs / kNsPerMs) {
    if (first) fail_at(path, line.number, "expected a time in whole milliseconds (not a Mahimahi trace)");
    fail_at(path, line.number, fmt::format("expected a time in whole milliseconds, got {}", base::quoted(line.text)));
  }
  return ms;
}

// A Mahimahi trace's last time (its period) and how many opportunities fall
// on it (they are the next round's first), every line checked.
struct MahimahiEnd {
  std::uint64_t last_ms = 0;
  std::uint64_t at_last = 0;
};
MahimahiEnd scan_mahimahi(std::string_view text, const std::string& path) {
  MahimahiEnd end;
  std::size_t last_line = 0;
  ContentLines lines(text);
  for (Line line; lines.next(line);) {
    const std::uint64_t ms = mahimahi_ms(line, path, last_line == 0);
    if (last_line != 0 && ms < end.last_ms)
      fail_at(path, line.number, fmt::format("{} ms is before the previous line's {} ms", ms, end.last_ms));
    end.at_last = last_line != 0 && ms == end.last_ms ? end.at_last + 1 : 1;
    end.last_ms = ms;
    last_line = line.number;
  }
  if (last_line == 0 || end.last_ms == 0)
    fail_at(path, last_line == 0 ? 1 : last_line, "the trace must end after 0 ms (its last time is its period)");
  return end;
}

// Appends the rate of `opportunities` in `window` as a step, unless the last
// step has that rate already: the steps grow with the trace's changes, not
// with its windows.
void add_window(Schedule& schedule, std::uint64_t window, std::uint64_t opportunities, std::uint64_t resolution_ns) {
  const std::uint64_t at = window * resolution_ns;
  const std::uint64_t length = std::min(resolution_ns, schedule.period_ns - at);
  const double bits = static_cast<double>(opportunities * kMahimahiPacketBytes * 8);
  const auto rate = static_cast<std::uint64_t>(std::llround(bits * kNsPerSecond / static_cast<double>(length)));
  if (schedule.steps.empty() || schedule.steps.back().rate_bps != rate) schedule.steps.push_back({at, rate, 0, 0, 0});
}

}  // namespace

Schedule parse_mahimahi_trace(std::string_view text, const std::string& path, std::uint64_t resolution_ns) {
  if (resolution_ns == 0) throw ScenarioError(fmt::format("{}: resolution must be greater than 0", path));
  const MahimahiEnd end = scan_mahimahi(text, path);
  Schedule schedule;
  schedule.where = path;
  schedule.columns = WANLAB_SCHED_RATE;
  schedule.period_ns = end.last_ms * kNsPerMs;
  const std::uint64_t windows = (schedule.period_ns + resolution_ns - 1) / resolution_ns;
  if (windows > WANLAB_SCHED_MAX_STEPS)
    throw ScenarioError(fmt::format("{}: {} windows of {} (more than {}); use a coarser resolution", path, windows,
                                    units::format_time(resolution_ns), WANLAB_SCHED_MAX_STEPS));
  // Window by window in time order; a run of empty windows is one pause. An
  // opportunity at the period's end is the next round's first (Mahimahi adds
  // the last time to its base and starts the trace again): window 0's.
  std::uint64_t window = 0, opportunities = end.at_last;
  ContentLines lines(text);
  for (Line line; lines.next(line);) {
    const std::uint64_t ms = mahimahi_ms(line, path, false);
    if (ms == end.last_ms) break;
    const std::uint64_t in = ms * kNsPerMs / resolution_ns;
    if (in == window) {
      ++opportunities;
      continue;
    }
    add_window(schedule, window, opportunities, resolution_ns);
    if (in > window + 1) add_window(schedule, window + 1, 0, resolution_ns);
    window = in;
    opportunities = 1;
  }
  add_window(schedule, window, opportunities, resolution_ns);
  if (window + 1 < windows) add_window(schedule, window + 1, 0, resolution_ns);
  try {
    finish_schedule(schedule);
  } catch (const std::invalid_argument& error) {
    throw ScenarioError(fmt::format("{}: {}", path, error.what()));
  }
  return schedule;
}

std::vector<wanlab_sched_entry> schedule_entries(const Schedule& schedule, std::uint64_t start_ns) {
  std::vector<wanlab_sched_entry> entries(schedule.steps.size() + 1);
  wanlab_sched_head& head = entries[0].head;
  head.start_ns = start_ns;
  head.period_ns = schedule.period_ns;
  head.steps = static_cast<__u32>(schedule.steps.size());
  head.columns = schedule.columns;
  for (std::size_t i = 0; i < schedule.steps.size(); ++i) entries[i + 1].step = data_plane_step(schedule.steps[i]);
  return entries;
}

}  // namespace wanlab::emulator
