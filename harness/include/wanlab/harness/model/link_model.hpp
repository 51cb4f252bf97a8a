// The links as both runners see them: the emulated WAN at the experiment's
// scale, the link model the simulator runs on it (TCP's dynamics, the window
// ceiling, the payload share of a frame), one direction of a DC pair as the
// TCP model's path (tcp_model.hpp), and the pacing of ring all-reduces that
// share a link, which the coordinator sets and the simulator caps by.
#pragma once

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/model/tcp_model.hpp"
#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness {

struct LinkModel {
  bool free_communication = false;  // every transfer takes 0
  // 0: no ceiling (e.g. window / RTT). Like link rates, given at full size:
  // the simulator multiplies it by the experiment's scale.
  double per_stream_ceiling_bps = 0;
  // 0: none; else one TCP stream keeps at most this many bytes in flight
  // (window ceiling; at most window / RTT), before scale like every rate.
  double stream_window_bytes = 0;
  // 0: none; else each stream's send buffer, before scale: the window
  // ceiling is then also the part of it that the harness's transport keeps
  // in flight, which depends on the stream's pacing rate and RTT
  // (emulator::chunk_writer_send_share). Only with stream_window_bytes > 0:
  // stream_window_bytes = 0 means no window ceiling at all.
  double send_buffer_bytes = 0;
  // TCP's dynamics (tcp_model.hpp): a transfer goes in rounds of one RTT,
  // from its channel's cwnd (the initial window on a new channel) growing by
  // slow start, the window ceiling binding in flight; an idle channel's cwnd
  // restarts as Linux's does when `slow_start_after_idle`. Off: a transfer
  // moves at its steady rate from its first byte to its last.
  bool tcp_dynamics = false;
  bool slow_start_after_idle = true;
  // The share of a link's rate (and of a per-flow cap) that carries TCP
  // payload: the emulator charges whole frames, 1514 bytes for 1448 of data.
  double payload_share = 1.0;
  // With tcp_dynamics: what a WAN link's ACKs take of the link back, per bit
  // of payload (tcp_model.hpp's kAckShareOfData; 0: ACKs are free).
  double ack_share = 0;
  // With tcp_dynamics: a link serves first rounds that reach it at one
  // instant one after another, a segment apart, so that data-parallel
  // replicas, which the simulator runs exactly in step, drift apart as real
  // ones do (docs/SIMULATOR.md, "Replicas out of step"). Off: they stay in
  // step, as the order of temporal sharing's link slots is taken.
  bool serve_ties_in_turn = true;
};

// The emulated WAN of an experiment at `scale`: every rate and per-flow rate
// (defaults, intra-DC, links, events), byte-sized queue limits and the TCP
// buffer limits (defaults 4 MiB send, 6 MiB receive when the scenario has
// none) multiplied by scale, so that transfer times stay those of scale 1 for
// messages the planner scaled the same way; buffers stay at least the
// kernel's initial sizes. Delays are kept. Throws std::invalid_argument for a
// scale that is not > 0.
//
// A byte-sized queue keeps at least `queue_floor_bytes` (never more than its
// full size): TCP's segments do not scale, so at a small scale a sender's
// burst is a whole message, which a queue scaled below it drops (a real
// sender's NIC would hold it back), and a message that loses its last
// segments waits out TCP's 200 ms minimum RTO. `wanlab train` passes twice its
// largest message (run_scenario).
emulator::Scenario scale_scenario(const emulator::Scenario& scenario, double scale,
                                  std::uint64_t queue_floor_bytes = 0);

// The least a scaled byte-sized queue of a run keeps: twice the plan's
// largest message, so that two senders' whole messages fit at once (as when
// two stages on one host send to the next host together; three-dc.toml's
// comment). Why and what it measured: docs/EXPERIMENT.md, choosing scale,
// and bench/results/bubbletea/queue-floor-20261202/findings.md. Both
// runners use it: `wanlab train`'s testbed and the simulator's queues.
std::uint64_t queue_floor_bytes(const Plan& plan);

// The link model the testbed implies at the experiment's `scale`: TCP's
// dynamics, with the window ceiling of the [host] buffers the run's hosts get
// (scale_scenario's; emulator/tcp_window.hpp), in full-size bytes like every
// figure here; the scenario's tcp_slow_start_after_idle (the kernel's
// default: on) and the payload share of a frame (emulator::kPayloadShare).
LinkModel link_model_for(const emulator::Scenario& scenario, double scale);

// One direction of a DC pair as the simulator's TCP model sees it
// (tcp_model.hpp): `there`'s rate and flow cap times the model's payload
// share, its one-way delay, `rtt_s`, the model's window ceiling, every rate
// and the window times `scale`. `paced_streams` > 0: the harness paces each
// of that many streams at the rate / paced_streams (cross-DC channels with
// the experiment's pacing); 0: not paced.
TcpPath tcp_path_for(const emulator::PairParams& there, double rtt_s, const LinkModel& model, double scale,
                     int paced_streams);

// The ring all-reduces of `plan` whose ring crosses DC pair src -> dst: one
// per stage with a member in `src` followed by one in `dst` (a two-member
// ring crosses both ways), none where nothing is reduced.
int ring_flows_between(const Plan& plan, int src, int dst);

// The pacing of each stream of a ring all-reduce sent from `src` to `dst`,
// payload bits/s: where k > 1 rings cross the pair and their windows
// together would take more than the link (k x streams x the stream's
// ceiling > capacity), each stream its share, capacity / (k x streams);
// infinity otherwise (paced as any cross-DC stream). Without it every ring's
// streams were paced at the link's whole rate, the rings' slow starts
// overfilled the queue together, and the ring that lost most crept on in
// congestion avoidance at 40-50% of the link after the other had finished
// (docs/SIMULATOR.md, "Pacing, as both runners take it"). The coordinator paces by it; the simulator
// caps by it.
double ring_stream_pacing_bps(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model, int src,
                              int dst);

}  // namespace wanlab::harness
