// The soak's drops, each judged against the configuration in force when it
// happened: the data plane's counters of every directed DC pair are read
// once a second (a slice), and its drops in the slice are explained when a
// configuration in force during it (before or after that second's `set`, as
// the data plane's pair_config map holds them) permits them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/emulator/datapath.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::bench::soak {

// The queue can only overflow where what the senders may have in flight takes
// longer to serialize than the queue limit allows. A TCP sender keeps at most
// its send buffer unacknowledged (tcp_wmem max, plus one 64 KiB skb of
// overshoot), framed as 1514-byte frames per 1448 bytes of payload; twice that
// covers segments in the queue twice (a spurious retransmission). Every byte
// in the emulated queue was charged at a rate no lower than the slowest the
// pair has had, so its backlog never exceeds
//   2 x streams x (wmem + 64 KiB) x 1514/1448 x 8 / slowest rate.
// A queue limit at or above that cannot overflow: a queue drop there is not
// explained by the configuration.
struct QueueBound {
  int streams = 0;  // on this directed pair at most
  std::uint64_t wmem_bytes = 0;
  double slowest_bps = 0;  // the slowest rate the pair has had so far (0: none yet)

  double backlog_bytes() const;
  double backlog_ns() const;
};

bool permits_loss(const wanlab_pair_config& config);
bool permits_queue_drops(const wanlab_pair_config& config, const QueueBound& bound);

// One directed DC pair through the run.
struct PairTrack {
  std::string label;
  bool wan = false;  // between two DCs (not within one)
  QueueBound bound;
  wanlab_pair_config config{};             // as the data plane holds it now
  wanlab_pair_stats counters{};            // at the start of the current slice
  bool loss_ok = false, queue_ok = false;  // some configuration in force during the current slice permits them
  std::uint64_t queue_expected = 0, queue_unexpected = 0, loss_expected = 0, loss_unexpected = 0;
  int slices = 0, slices_queue_ruled_out = 0, slices_loss_ruled_out = 0;
  std::vector<std::string> unexplained;  // "t=123s: 4 queue drop(s), ..."
};

// Drops of all pairs in a slice or a row, explained ("expected") or not.
struct DropCounts {
  std::uint64_t queue_expected = 0, queue_unexpected = 0, loss_expected = 0, loss_unexpected = 0;
  DropCounts& operator+=(const DropCounts& other);
};

class DropJudge {
 public:
  // Every directed pair of the testbed, from its pinned maps; WAN pairs carry
  // `wan_streams` streams at most, with `wmem_bytes` of send buffer each.
  DropJudge(const emulator::TestbedState& state, int wan_streams, std::uint64_t wmem_bytes);

  // After a `set`: the new configuration widens the current slice, which
  // now holds both the old and the new one.
  void widen() { read_configs(true); }
  // Closes the slice that ends now (t seconds in): each pair's drops against
  // what its configurations during the slice permit; a new slice starts.
  DropCounts end_slice(double t);
  // Packets and bytes the WAN pairs had passed at the last slice's end.
  wanlab_pair_stats wan_totals() const;
  const std::vector<PairTrack>& pairs() const { return pairs_; }
  // Drops the map descriptors, which would keep the maps alive after `down`.
  void close() { datapath_.reset(); }

 private:
  void read_configs(bool widen);
  DropCounts judge(PairTrack& track, const wanlab_pair_stats& now, double t);
  PairTrack& track(int src, int dst) { return pairs_[static_cast<std::size_t>(src * dcs_ + dst)]; }

  int dcs_ = 0;
  std::optional<emulator::Datapath> datapath_;
  std::vector<PairTrack> pairs_;
};

}  // namespace wanlab::bench::soak
