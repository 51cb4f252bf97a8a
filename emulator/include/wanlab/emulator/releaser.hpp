// The nfqueue release path: packets the tc program marked with a departure
// time wait in an NFQUEUE until then; this releaser gives each its ACCEPT
// verdict at that time. Runs on an Asio event loop in the namespace where the
// queue lives; talks nfnetlink through libmnl.
#pragma once

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <array>
#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wanlab/base/late_bounds.hpp"
#include "wanlab/base/wake_lead.hpp"

struct mnl_socket;
struct nlmsghdr;

namespace wanlab::emulator {

// Verdicts given, and how many left later than each of base::kLateBoundsNs
// (10 us to 10 ms) after their departure time: what a run's emulation health
// judges them by.
struct LateCounts {
  std::uint64_t packets = 0;  // verdicts given
  std::uint64_t late_max_ns = 0;
  std::array<std::uint64_t, base::kLateBoundsNs.size()> late_over{};  // later than kLateBoundsNs[i]
  void count(std::uint64_t late_ns);  // one more verdict, `late_ns` after its departure
  bool operator==(const LateCounts&) const = default;
};

// The whole queue's verdicts (the counts it derives from), and per DC pair.
struct ReleaserStats : LateCounts {
  std::uint64_t held = 0;         // waiting now
  std::uint64_t late_sum_ns = 0;  // sum of (verdict time - departure time)
  // Packets the kernel dropped instead of handing them to the releaser: its
  // queue was full (queue_dropped) or the netlink socket was (user_dropped).
  // Lost to the emulation, not to the scenario.
  std::uint64_t queue_dropped = 0;
  std::uint64_t user_dropped = 0;
  // The same verdicts per DC pair (a host of `from` to a host of `to`), on a
  // testbed of namespaces; those with a verdict since the testbed came up.
  struct Pair : LateCounts {
    std::string from;
    std::string to;
    bool operator==(const Pair&) const = default;
  };
  std::vector<Pair> pairs;
  bool operator==(const ReleaserStats&) const = default;
};

// Which DC pair a queued packet travels between: the DC of the host behind
// each core-side interface (the FORWARD hook's in and out devices).
struct ReleaserPairs {
  std::vector<std::string> dcs;
  std::vector<std::pair<std::uint32_t, int>> dc_of_ifindex;  // (ifindex, DC)
};

// The daemon publishes its releaser's counters once a second to
// /run/wanlab/<testbed>/releaser.toml; `wanlab stats` and the benchmark read
// them. The file's one format, written and read only here: every counter a key
// holding a whole number from 0, then a [[pair]] table per DC pair with its
// from, to and counters. Reading is strict, like state.toml: a missing
// or unknown key, or a value of another type, is a std::runtime_error of one
// line, "PATH:LINE:COLUMN: key: ...".
std::string releaser_stats_path(const std::string& testbed);
std::string format_releaser_stats(const ReleaserStats& stats);
// The counters by the names releaser.toml gives them, in its order (`wanlab stats --json` too):
// a pair's (packets, late_max_ns, late_over_10us, ...), and the whole queue's (those, then its own).
std::vector<std::pair<std::string_view, std::uint64_t>> late_counters(const LateCounts& counts);
std::vector<std::pair<std::string_view, std::uint64_t>> releaser_counters(const ReleaserStats& stats);
void write_releaser_stats(const std::string& path, const ReleaserStats& stats);  // replaced whole, never through a link
ReleaserStats read_releaser_stats(const std::string& path);
// The drops of NFQUEUE `queue_num` from the text of /proc/net/netfilter/nfnetlink_queue
// (a line per bound queue: number, peer port id, total, copy mode, copy range,
// queue_dropped, user_dropped, ...); nothing if the queue has no line.
std::optional<std::pair<std::uint64_t, std::uint64_t>> nfqueue_drops(std::string_view proc_text,
                                                                     std::uint16_t queue_num);
// Absent (before the daemon's first second, or on the fq path): nullopt.
std::optional<ReleaserStats> read_releaser_stats_if_present(const std::string& path);

class NfqueueReleaser {
 public:
  NfqueueReleaser(asio::io_context& io, std::uint16_t queue_num, ReleaserPairs pairs = {},
                  std::uint32_t max_queue_len = 200'000);
  ~NfqueueReleaser();
  NfqueueReleaser(const NfqueueReleaser&) = delete;
  NfqueueReleaser& operator=(const NfqueueReleaser&) = delete;

  void start();
  const ReleaserStats& stats() const { return stats_; }

 private:
  struct Held {
    std::uint64_t depart_ns;
    std::uint64_t order;  // arrival order breaks ties, keeping FIFO
    std::uint32_t packet_id;
    std::uint32_t pair;  // index in stats_.pairs, or kNoPair
    bool operator>(const Held& other) const {
      return depart_ns != other.depart_ns ? depart_ns > other.depart_ns : order > other.order;
    }
  };

  void configure(std::uint16_t queue_num, std::uint32_t max_queue_len);
  void wait_readable();
  void drain_socket();
  void handle_packet(const nlmsghdr* nlh, std::uint64_t now_ns);
  void release_due(std::uint64_t now_ns);
  void arm_timer();
  void queue_verdict(const Held& packet, std::uint64_t now_ns);
  std::uint32_t pair_of(std::uint32_t indev, std::uint32_t outdev) const;
  static constexpr std::uint32_t kNoPair = UINT32_MAX;
  void flush_verdicts();

  asio::io_context& io_;
  mnl_socket* socket_ = nullptr;
  std::uint32_t port_id_ = 0;
  std::uint16_t queue_num_;
  asio::posix::stream_descriptor readable_;
  asio::steady_timer timer_;
  std::uint64_t timer_at_ns_ = 0;  // 0: not armed
  base::WakeLead wake_lead_;
  // Busy-waiting for departures, per window of the kernel's real-time period
  // (may_spin()): the thread's CPU time at the window's start, and the most
  // it may use in a window and still spin.
  std::uint64_t spin_window_start_ns_ = 0;
  std::uint64_t window_cpu_start_ns_ = 0;
  std::uint64_t spin_window_ns_ = 1'000'000'000;
  std::uint64_t spin_budget_ns_ = 0;
  bool may_spin(std::uint64_t now_ns);
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held_;
  std::uint64_t arrivals_ = 0;
  std::vector<char> receive_buffer_;
  std::vector<char> verdict_batch_;
  std::size_t verdict_bytes_ = 0;
  ReleaserStats stats_;
  std::size_t dcs_ = 0;
  std::unordered_map<std::uint32_t, int> dc_of_ifindex_;
};

}  // namespace wanlab::emulator
