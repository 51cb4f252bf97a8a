// A discrete-event simulation of a Plan: compute ops take their duration;
// transfers go over their directed link in TCP's rounds (tcp_model.hpp), or
// with tcp_dynamics off take latency + bytes / rate, where the rate of a
// cross-DC link is min(link rate x scale, streams x per-stream ceiling); and
// concurrent transfers share it (or queue, with temporal sharing).
// Unit tests check schedule arithmetic with free communication.
//
// The model in detail (docs/SIMULATOR.md has the formulas):
// - One link per directed DC pair, the intra-DC pair included, as the tc
//   program shapes them; its capacity is the pair's rate x scale (0: unlimited).
// - A transfer is on the wire for bits / its rate, then arrives one pair delay
//   later. Concurrent transfers share the capacity (link_share.hpp: with
//   tcp_dynamics as the emulator's drop-tail FIFO, in proportion to what each
//   pushes; else max-min fairly), each capped by streams x per-stream ceiling
//   x scale (streams = experiment.streams across DCs, 1 inside). With
//   tcp_dynamics, first rounds that reach a link at one instant go a
//   segment's time apart (LinkModel::serve_ties_in_turn), so that replicas
//   drift apart as real ones do. The per-stream ceiling is the least of the
//   pair's flow_rate, per_stream_ceiling_bps and, without tcp_dynamics,
//   the path's window x 8 / RTT (tcp_path_for: the receive window and the
//   share of the send buffer the transport keeps in flight at the path's
//   pacing rate and RTT).
// - With tcp_dynamics a transfer is on the wire in rounds: each round puts
//   round_bytes() (the streams' cwnds, capped by the window ceiling) on the
//   wire at its share, then leaves the link to others until its ACKs are back:
//   one RTT after the round began, plus what then waits in the queue of the
//   link back (a WAN link's ACKs ride it); slow start grows the cwnds
//   (after_round). The cwnds belong to the (sender, receiver) channel and last
//   from message to message; a channel idle since its last bit was sent
//   restarts (after_idle), and the receiver's own message on the wire (the
//   same connections carry both ways) sets its pacing rate again
//   (on_peer_segment). A message
//   that goes on before its channel's last round is acknowledged sends into
//   what that round left of the window, as part of it (one stream of bytes,
//   as TCP sends queued messages).
// - Messages from one worker to another go one after the other, as through one
//   transport channel; only the head of a channel is on the wire.
// - With temporal sharing, slotted transfers on a link go on the wire one at a
//   time in link_slot order (the next may start when the previous one's last
//   bit is sent); other transfers share the link with them.
// - Two workers on one emulated host exchange messages for free (loopback is
//   not shaped by the emulator either).
// - allreduce: once every member has joined, 2(R-1) ring steps; in each step
//   every member sends stage_param_bytes / R to its ring successor over the
//   link model, and the step ends when all have arrived.
// - With the experiment's [fabric] (fabric.hpp) the DC pairs stay as above
//   between DCs, but inside a DC: workers packed onto servers of
//   gpus_per_server GPUs (each DC's in (stage, replica) order); between two
//   workers on one server, NVLink (tp x nvlink_rate per transfer, no shared
//   cap, no delay); between servers, the DC's fabric (tp x nic_rate per
//   transfer, all together at most the plan's GPUs there x nic_rate /
//   oversubscription, the fabric's latency), at a steady rate without TCP
//   rounds (RDMA); nothing is free. The ring all-reduce is pipelined: each
//   member sends its 2(R-1) chunks to its successor as one transfer, and the
//   collective ends 2(R-1) - 1 of the ring's longest hop delays after the last
//   arrives. [prefill]'s KV caches keep the scenario's pairs.
// - Iterations are separated by a barrier: iteration i + 1 starts when the
//   last worker has finished iteration i. No jitter, loss or TCP slow start.
//
// BubbleTea ([prefill] enabled): the training is simulated first and does
// not change; record.prefill is then filled from it.
// - Requests: load_requests(experiment, the run's end). Iteration i's windows
//   are iteration i - 1's simulated idle offsets placed at i's start (for
//   iteration 0 its own, as the real run's first prediction comes from a
//   simulation), windows shorter than the guard dropped; prediction errors
//   against iteration i's own for i >= 1.
// - Admission (bubbletea/admission.hpp) runs at each iteration's start and at every
//   arrival within it, on that iteration's windows.
// - Chunks run per GPU in time order as the real run's lease would: from
//   their predicted start, or once training's compute or an earlier chunk
//   leaves the GPU. A chunk that would then overlap training compute (its
//   window was shorter than predicted) is dropped with the rest of its batch,
//   whose requests fail ("prediction wrong"): training never waits here, so
//   training_delay_ns stays 0 for every worker.
// - KV cache, per finished batch, to the decode host (the first host of
//   decode_dc, or of the worker's own DC with decode_dc = "local"). From that
//   host itself: bytes / (tp x [prefill] intra_host_rate x scale), its NVLink,
//   one cache at a time per worker. Inside the DC: link "", the intra-DC pair's
//   delay + bytes / rate, one cache at a time on the DC's link. Across DCs: rate = min(link
//   rate x scale, streams x per-stream ceiling), as a training transfer gets
//   alone. With temporal sharing it goes on the wire at the first time from
//   its prefill's end when the directed link is free, for its whole wire
//   time, of training's sends ([start, end - pair delay] of each send event)
//   and of earlier KV caches, and arrives one delay after its last bit.
//   All-reduce ring traffic is not counted (the coordinator's gate does not
//   order it either). Without temporal sharing it starts at once at half that
//   rate: an approximation of sharing the link with training.
// - Outcomes: served (first token = the KV cache's arrival, within the run),
//   rejected, failed, unfinished (admitted but not arrived by the run's end,
//   or still waiting for a window).
#pragma once

#include <cstddef>
#include <cstdint>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

// What a simulation handled and held at most. Everything but the events is
// per iteration: it is bounded by the plan's size, not by the iterations.
struct SimulationStats {
  std::uint64_t completions = 0;   // compute ends, message or ring-chunk arrivals, and TCP round ends
  std::size_t peak_transfers = 0;  // transfers started in one iteration
  std::size_t peak_pending = 0;    // compute ends and arrivals waiting at once
};

// Refuses runs beyond kMaxRunSteps (check_plan_size with `iterations`) and
// runs whose simulated time passes kMaxSimulatedNs (ExperimentError: links or
// compute far too slow for the messages). Throws std::logic_error if the plan
// deadlocks (a plan from make_plan never does).
RunRecord simulate(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model, int iterations = 1,
                   SimulationStats* stats = nullptr);
// The experiment planned (make_plan) and simulated for its iterations over
// the link model its testbed implies: `wanlab train --simulate` and each
// `wanlab whatif` point.
RunRecord simulate_experiment(const Experiment& experiment, const emulator::Scenario& scenario);
// The training alone, whatever [prefill] says: what the planner orders link
// slots by, and what the real run predicts its first iteration's bubbles from.
RunRecord simulate_training(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model,
                            int iterations = 1, SimulationStats* stats = nullptr);

// About 31.7 years: simulated times are int64 nanoseconds; a run that goes
// beyond this has a link or a compute step absurdly slow for its messages.
inline constexpr double kMaxSimulatedNs = 1e18;

}  // namespace wanlab::harness
