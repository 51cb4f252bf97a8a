// A scenario file (TOML) parsed, validated and resolved into per-pair settings.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/emulator/schedule.hpp"

extern "C" {
#include "wanlab_shared.h"
}

namespace wanlab::emulator {

// Thrown for every bad input; what() is one line: "file:line:column: message"
// for file contents, "file: message" for a file that cannot be read, and
// "--option: message" from parse_link_option.
class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How long a packet may wait for its departure: sch_fq keeps departures up to
// its horizon (3 x this, 60 s; FqOptions), the nfqueue mark reaches about 17
// minutes ahead. Delay, jitter and the queue limit may each take a third, so a
// packet is never dropped by fq's horizon or released early by a wrapped mark.
// Longer delays and jitter are refused; a longer queue limit (a size at a low
// rate, a large BDP multiple) is cut to this.
inline constexpr std::uint64_t kMaxHoldPartNs = 20'000'000'000ull;

struct QueueLimit {
  enum class Kind { time, bytes, bdp };
  Kind kind = Kind::bdp;
  double value = 1.0;  // ns, bytes or multiples of the bandwidth-delay product
};

// "50ms" (time), "4mb" (bytes, 1024-based as tc) or "0.5bdp"; must be greater
// than 0. Throws std::invalid_argument saying what was expected.
QueueLimit parse_queue(std::string_view text);
// Shortest text parse_queue reads back as the same limit ("1bdp", "50ms", "4mb").
std::string format_queue(const QueueLimit& queue);

enum class LossModel { bernoulli, gilbert_elliott };

// Link settings as written; every field optional so that [defaults], [[link]]
// and [[event]] can be layered.
struct LinkParams {
  std::optional<std::uint64_t> rate_bps;       // 0 = unlimited
  std::optional<std::uint64_t> flow_rate_bps;  // 0 = no per-flow cap
  std::optional<std::uint64_t> delay_ns;
  std::optional<std::uint64_t> jitter_ns;
  std::optional<QueueLimit> queue;
  std::optional<double> loss;  // probability in [0, 1]; GE: P(good -> bad)
  std::optional<LossModel> loss_model;
  std::optional<double> ge_r;          // GE: P(bad -> good)
  std::optional<double> ge_bad_loss;   // GE: loss probability in the bad state
  std::optional<double> ge_good_loss;  // GE: loss probability in the good state
  std::optional<bool> reorder;

  // Fields set in `over` replace those here.
  void overlay(const LinkParams& over);
};

// Effective settings of one directed DC pair, every field decided.
struct PairParams {
  std::uint64_t rate_bps = 0;
  std::uint64_t flow_rate_bps = 0;
  std::uint64_t delay_ns = 0;
  std::uint64_t jitter_ns = 0;
  QueueLimit queue{};
  double loss = 0;
  LossModel loss_model = LossModel::bernoulli;
  double ge_r = 1;
  double ge_bad_loss = 1;
  double ge_good_loss = 0;
  bool reorder = false;

  // Fields set in `change` replace those here (how [[event]]s and `wanlab set`
  // apply to a running pair).
  void apply(const LinkParams& change);
};

struct Ipv4Prefix {
  std::uint32_t addr = 0;  // host byte order
  int len = 0;

  bool contains(std::uint32_t address) const;
  bool operator==(const Ipv4Prefix&) const = default;
};

// One entry of a [[dc]]'s `machines` (a scenario over real machines,
// docs/SCALE-OUT.md): a machine by its host name, or by its address or an
// address range ("10.0.0.7", "10.0.0.0/28").
struct Machine {
  std::string text;                  // as written
  std::optional<Ipv4Prefix> prefix;  // empty for a host name (resolved on each machine)

  bool is_single() const { return !prefix || prefix->len == 32; }
};

struct Dc {
  std::string name;
  int hosts = 1;
  std::vector<Machine> machines;  // empty: emulated hosts on one box
  // The machine that carries the DC's traffic to other DCs (its NIC holds
  // the DC's links): `gateway`, or the first of `machines`.
  std::string gateway;
};

// A directed or symmetric selection of DC pairs ([[link]] and [[event]]).
struct LinkSpec {
  std::string from;
  std::string to;
  bool symmetric = false;  // `between = [a, b]`
  LinkParams params;
  std::shared_ptr<const Schedule> schedule;  // its `schedule`, if given and read
  bool gives_schedule = false;               // it gives one (null when ScheduleFiles::skip left it unread)
  bool removes_schedule = false;             // `wanlab set --no-schedule`: no schedule from here on
  std::string where;                         // "file:line:column" of the table, for later errors

  // Whether this spec covers the directed pair src -> dst.
  bool matches(std::string_view src, std::string_view dst) const;
};

struct Event {
  std::uint64_t at_ns = 0;
  LinkSpec link;
};

struct HostSettings {
  std::optional<std::string> tcp_congestion;  // "cubic" | "bbr"
  std::optional<std::uint64_t> tcp_wmem_max;  // bytes
  std::optional<std::uint64_t> tcp_rmem_max;  // bytes
  std::optional<bool> tcp_slow_start_after_idle;
};

struct Scenario {
  std::string path;
  std::string source;  // the text that was parsed (a testbed keeps this copy)
  std::string name;    // [a-z0-9-], 1..12 characters
  std::uint64_t seed = 1;
  Ipv4Prefix pool{0x0a4d0000, 16};  // 10.77.0.0/16; DC i gets the i-th /24
  LinkParams defaults;
  std::shared_ptr<const Schedule> defaults_schedule;  // [defaults] schedule
  LinkParams intra_dc;
  HostSettings host;
  std::vector<Dc> dcs;
  std::vector<LinkSpec> links;
  std::vector<Event> events;  // sorted by at_ns

  int dc_index(const std::string& name) const;  // -1 if unknown
  // Whether its DCs are real machines (`machines`), not emulated hosts.
  bool over_machines() const { return !dcs.empty() && !dcs.front().machines.empty(); }
  // Effective settings for src -> dst (same index: intra-DC): built-in
  // defaults, then [defaults] (src != dst) or [intra_dc] (src == dst), then
  // every [[link]] matching the directed pair. Events are not applied.
  // Throws std::out_of_range for an index outside dcs.
  PairParams pair(int src, int dst) const;
  // Round trip of the pair before events: delay src -> dst plus dst -> src;
  // what make_pair_config expects as rtt_ns.
  std::uint64_t rtt_ns(int src, int dst) const;
  // The schedule of src -> dst: the last of `links` that gives or removes one
  // (a [[link]]'s, then live ones from changes.toml), else [defaults]'
  // (src != dst); null if none, or if the file was read with ScheduleFiles::skip.
  std::shared_ptr<const Schedule> schedule(int src, int dst) const;
  // Whether src -> dst runs a schedule, also one whose trace file
  // ScheduleFiles::skip left unread (a [defaults] trace file left unread is
  // not seen).
  bool scheduled(int src, int dst) const;
  // The distinct schedules of the pairs (equal ones once, however many
  // pairs run them) and the pairs of each: one map each in the data plane.
  struct SharedSchedule {
    std::shared_ptr<const Schedule> schedule;
    std::vector<std::pair<int, int>> pairs;  // (src, dst)
  };
  std::vector<SharedSchedule> shared_schedules() const;
  // The /24 of DC `dc`: the dc-th /24 inside pool.
  Ipv4Prefix dc_prefix(int dc) const;
};

// Reads, validates and returns the scenario, or throws ScenarioError. Validation
// covers unknown keys, bad units, negative values, duplicate names, unknown DCs
// in links/events, every DC pair lacking a delay, a scheduled pair that would
// never send at a rate it has (check_link_sends), and schedules above the
// testbed's total (kMaxTestbedScheduleSteps; equal ones count once).
//
// A schedule's trace file is named relative to the scenario's directory.
// ScheduleFiles::skip leaves trace files unread (their schedules null): how a
// testbed's own copy of its scenario is read, whose schedules are already in
// the data plane and whose relative paths no longer resolve.
enum class ScheduleFiles { read, skip };
Scenario load_scenario(const std::string& path, ScheduleFiles files = ScheduleFiles::read);
Scenario parse_scenario(std::string_view toml_text, const std::string& path, ScheduleFiles files = ScheduleFiles::read);

// One link key: the one vocabulary of [defaults], [intra_dc], [[link]],
// [[event]], changes.toml and the `wanlab set` options (--flow-rate for
// flow_rate), so that a key added here reaches all of them.
struct LinkKey {
  std::string_view name;      // as in the scenario file: "flow_rate"
  std::string_view expected;  // for a value of the wrong type: `a rate like "100mbit"`
  std::string_view metavar;   // the value in a usage line: "RATE"
  bool is_bool;               // a TOML boolean in the file; on|off|true|false as text
  // Parses `text` into its field of `params`; throws std::invalid_argument.
  void (*set)(LinkParams& params, std::string_view text);
};

// Every link key, in the order docs/SCENARIO.md lists them.
std::span<const LinkKey> link_keys();
const LinkKey* find_link_key(std::string_view name);  // nullptr if unknown
// The key's command-line option: "flow_rate" -> "--flow-rate".
std::string link_option_name(std::string_view key);

// Parses link settings given on the command line (`wanlab set --rate 200mbit`)
// through the key's own parser (link_keys()); `field` names the option in
// errors. `field` is a link key as in the scenario file ("flow_rate"); dashes
// and a leading "--" are accepted ("--flow-rate"). Returns `params` with that
// field set; throws ScenarioError
// ("--rate: expected a rate like \"100mbit\", got \"fast\"", or
// "--dealy: unknown link setting; did you mean --delay?").
LinkParams parse_link_option(LinkParams params, std::string_view field, std::string_view value);

// The map value the tc program reads for one directed pair. rtt_ns sizes BDP
// queue limits; pair_index and the scenario seed seed the loss generator.
// Queue limits become time: a time limit as is; bytes at the pair's rate (the
// per-flow rate if the link rate is unlimited; 0 = no limit if both are);
// k BDPs as max(k * rtt_ns, time to send 64 KiB at that rate), so one GSO
// burst always fits. Probabilities are p * 2^32 rounded, saturated at
// 0xffffffff. The seed is a nonzero mix of seed and pair_index; generation = 1.
wanlab_pair_config make_pair_config(const PairParams& params, std::uint64_t rtt_ns, std::uint64_t seed,
                                    std::uint32_t pair_index);
// A probability as the program reads it: p * 2^32 rounded, saturated at
// 0xffffffff (certain).
std::uint32_t probability_p32(double probability);

// A directed DC pair's name in reports, results.json and the trace: "east->west".
inline std::string pair_name(std::string_view from, std::string_view to) {
  return std::string(from) + "->" + std::string(to);
}

// A DC pair over time, for a model of the testbed (the simulator): its
// settings `at_ns` after the testbed came up, as the emulator applies them.
// The [[event]]s due by then are layered over the pair's links in order (as
// the daemon rewrites the pairs at each), then the pair's schedule (which
// starts when the testbed comes up) sets its step's columns with the data
// plane's own arithmetic (wanlab_edt.h): a rate replaces the pair's, a share
// takes its part of the rate, delay and loss replace theirs. `paused`: the
// step leaves the link nothing to send (params.rate_bps is then 0).
struct PairAt {
  PairParams params;
  bool paused = false;
};
PairAt pair_at(const Scenario& scenario, int src, int dst, std::uint64_t at_ns);
// The first time after `at_ns` at which pair_at(src, dst) may change: the
// next [[event]] or the next step of the pair's schedule then in force;
// UINT64_MAX when nothing changes any more.
std::uint64_t next_pair_change_ns(const Scenario& scenario, int src, int dst, std::uint64_t at_ns);
// Whether any pair of different DCs changes over time (a schedule or an [[event]]).
bool has_timeline(const Scenario& scenario);

}  // namespace wanlab::emulator
