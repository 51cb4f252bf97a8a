// torch.distributed's gloo backend (torch 1.13's gloo) over the simulator's
// TCP model (tcp_model.hpp): what a user's PyTorch program moves across the
// emulated DCs, modelled on the same links as wanlab's own transfers.
//
// gloo keeps one TCP connection per pair of ranks, unpaced, and sends an
// unbound buffer only once the receiver has posted its own and said so (a
// rendezvous): the data leaves one way's delay (the receiver's notice) after
// both sides are ready. Checked against gloo through `wanlab launch` in
// bench/results/pytorch/ (examples/pytorch/p2p_allreduce.py, ddp_gpt.py).
#pragma once

#include <span>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/model/tcp_model.hpp"

namespace wanlab::harness {

// gloo's ring all-reduce cuts the tensor into segments of at most 1 MiB
// (kMaxSegmentSize in gloo/allreduce.cc), at least 2 per rank, their count
// rounded up to a multiple of the ranks.
inline constexpr double kGlooMaxSegmentBytes = 1 << 20;

struct GlooRingSegments {
  double segment_bytes = 0;
  double count = 0;  // a multiple of the ranks
};
GlooRingSegments gloo_ring_segments(int ranks, double bytes);

// DC `src` -> DC `dst` of `scenario` as one gloo connection sees it: one
// stream, unpaced (so an unpaced stream's window ceiling), RTT both ways' delays.
TcpPath gloo_path(const emulator::Scenario& scenario, int src, int dst);

// A point-to-point send of `bytes` on a connection in `state` (warm after a
// message, or new), from both sides being ready to the last byte's arrival:
// the receiver's notice one way, then the data (transfer_alone_s).
double gloo_send_s(const TcpPath& path, double notice_s, double bytes, TcpChannelState& state);

// gloo's ring all-reduce of `bytes` over `ring` (link i: rank i -> rank
// i + 1), from every rank being ready to the last rank done: the ring's
// 2 (n - 1) steps each move one rank's segments, two in flight, each a
// rendezvous, so a segment costs one one-way delay on the slowest link, or
// its transfer at that link's stream rate (rate, window / RTT) where that is
// longer; the last data arrives one way later. Measured (bench/results/
// pytorch/LATEST.md): 2 (n - 1) x segments / n one-way delays at 2, 3 and 4
// ranks, 4 and 64 MiB, within 10%.
double gloo_allreduce_s(std::span<const TcpPath> ring, double bytes);
// The same with one rank per DC of `scenario`, in DC order.
double gloo_allreduce_s(const emulator::Scenario& scenario, double bytes);

}  // namespace wanlab::harness
