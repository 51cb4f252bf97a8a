// The data plane: the tc program (bpf/wanlab_tc.bpf.c) and its maps.
//
// Datapath::load() loads the program into the kernel (root, or CAP_BPF +
// CAP_NET_ADMIN); attaching it to an interface is the caller's job, through
// program_fd(). pin() leaves the maps in a bpffs directory so that another
// process (`wanlab set`, `wanlab stats`) can open_pinned() them and change
// pairs or read counters while the program runs.
//
// DCs are numbered 0..num_dcs()-1; a directed pair is (src, dst). Every error
// is a std::runtime_error (std::out_of_range / std::invalid_argument for bad
// arguments) whose message says what was attempted.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern "C" {
#include "wanlab_shared.h"
}

namespace wanlab::emulator {

class Datapath {
 public:
  // Loads the program for num_dcs DCs (1..WANLAB_MAX_DCS) releasing packets by
  // `mode`. All pairs start disabled: packets pass untouched until set_pair.
  // `detour`: the interface (index, MAC) of a host the program is attached
  // to on the fq path, whose own sockets' packets to other DCs it sends back
  // in through the interface's ingress to be forwarded and shaped
  // (wanlab_tc.bpf.c).
  struct LocalDetour {
    int ifindex = 0;
    std::array<std::uint8_t, 6> mac{};
  };
  static Datapath load(int num_dcs, wanlab_release_mode mode, const std::optional<LocalDetour>& detour = std::nullopt);
  // Opens the maps another process pinned in dir. The result has no program
  // (program_fd() is -1) but supports everything else.
  static Datapath open_pinned(const std::string& dir);

  Datapath(Datapath&&) noexcept;
  Datapath& operator=(Datapath&&) noexcept;
  Datapath(const Datapath&) = delete;
  Datapath& operator=(const Datapath&) = delete;
  // Unloads what load() loaded; pinned maps stay until their pins are
  // unlinked. A moved-from Datapath may only be assigned to or destroyed.
  ~Datapath();

  int program_fd() const;
  int num_dcs() const;

  // Packets from or to addresses in the prefix belong to `dc`; the longest
  // matching prefix wins. Host bits of the address are ignored.
  void set_dc_prefix_v4(std::uint32_t addr_host_order, int prefix_len, int dc);
  void set_dc_prefix_v6(const std::array<std::uint8_t, 16>& addr, int prefix_len, int dc);

  // Takes effect with the next packet, without reloading. The pair's running
  // state (link backlog, loss generator) carries over unless config.generation
  // differs from the one the state was seeded for.
  void set_pair(int src, int dst, const wanlab_pair_config& config);
  wanlab_pair_config pair(int src, int dst) const;
  // Gives each of `pairs` ((src, dst)) a schedule (wanlab_shared.h: the
  // head, then its steps), all of them one map, so the kernel holds it once;
  // each pair's old one is replaced in a single map update, so its packets
  // see either the old or the new one. Throws std::invalid_argument for
  // entries that are not a schedule (steps out of order, more than
  // WANLAB_SCHED_MAX_STEPS, ...).
  void set_schedule(std::span<const std::pair<int, int>> pairs, std::span<const wanlab_sched_entry> entries);
  void set_schedule(int src, int dst, std::span<const wanlab_sched_entry> entries);
  // The pair goes back to its config alone; no-op without a schedule.
  void clear_schedule(int src, int dst);
  // The pair's schedule as the program reads it; empty when it has none.
  std::vector<wanlab_sched_entry> schedule(int src, int dst) const;
  // The map each scheduled pair reads its schedule from: the kernel's id
  // (pairs that share a map show the same) and its head, without its steps.
  struct ScheduleMap {
    int src = 0;
    int dst = 0;
    std::uint32_t id = 0;
    wanlab_sched_head head{};
  };
  std::optional<ScheduleMap> schedule_map(int src, int dst) const;  // nullopt: none
  std::vector<ScheduleMap> schedule_maps() const;                   // every scheduled pair's
  // What the program uses for a packet the link starts at t_ns
  // (CLOCK_MONOTONIC): the pair's config with its schedule's step at t_ns
  // laid over it. `paused`: the step sends nothing (config.rate_bps is then 0).
  struct PairAt {
    wanlab_pair_config config{};
    bool scheduled = false;
    bool paused = false;
  };
  PairAt pair_at(int src, int dst, std::uint64_t t_ns) const;
  // Counters summed over CPUs (qdelay_max_ns: the maximum).
  wanlab_pair_stats stats(int src, int dst) const;
  // The program's running state of the pair, read under its lock; the link's
  // backlog is next_free_ns minus CLOCK_MONOTONIC now.
  wanlab_pair_state state(int src, int dst) const;

  // Pins the maps (and the program, if loaded here) as files in dir, which
  // must be on a bpffs mount. They outlive this process until unlinked.
  void pin(const std::string& dir) const;

 private:
  struct Impl;
  explicit Datapath(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "queue-overflow", "loss": how statistics name enum wanlab_drop_reason.
std::string_view drop_reason_name(int reason);

}  // namespace wanlab::emulator
