// A discrete-event simulation of a Plan: compute ops take their duration;
// transfers go over their directed link in TCP's rounds (tcp_model.hpp), or
// with tcp_dynamics off take latency + bytes / rate, where the rate of a
// cross-DC link is min(link rate x scale, streams x per-stream ceiling); and
// concurrent transfers share it (or queue, with temporal sharing).
// Unit tests check schedule arithmetic with free communication.
//
// The model in detail (docs/HARNESS.md has the formulas):
// - One link per directed DC pair, the intra-DC pair included, as the tc
//   program shapes them; its capacity is the pair's rate x scale (0: unlimited).
// - A transfer is on the wire for bits / its rate, then arrives one pair delay
//   later. Concurrent transfers share the capacity max-min fairly, each capped
//   by streams x per-stream ceiling x scale (streams = experiment.streams
//   across DCs, 1 inside). The per-stream ceiling is the least of the pair's
//   flow_rate, per_stream_ceiling_bps and, without tcp_dynamics,
//   stream_window_bytes x 8 / RTT.
// - With tcp_dynamics a transfer is on the wire in rounds: each round puts
//   round_bytes() (the streams' cwnds, capped by the window ceiling) on the
//   wire at its share, then leaves the link to others until one RTT after the
//   round began; slow start grows the cwnds (after_round). The cwnds belong to
//   the (sender, receiver) channel and last from message to message; a
//   channel idle since its last bit was sent restarts (after_idle).
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
// - Admission (prefill.hpp) runs at each iteration's start and at every
//   arrival within it, on that iteration's windows.
// - Chunks run per GPU in time order as the real run's lease would: from
//   their predicted start, or once training's compute or an earlier chunk
//   leaves the GPU. A chunk that would then overlap training compute (its
//   window was shorter than predicted) is dropped with the rest of its batch,
//   whose requests fail ("prediction wrong"): training never waits here, so
//   training_delay_ns stays 0 for every worker.
// - KV cache, per finished batch, to the decode host (the first host of
//   decode_dc, or of the worker's own DC with decode_dc = "local"). From that
//   host itself: free (loopback). Inside the DC: link "", the intra-DC pair's
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

#include <map>
#include <string>

#include "wanlab/emulator/scenario.hpp"
#include <vector>

#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/model/tcp_model.hpp"

namespace wanlab::harness {

struct LinkModel {
  bool free_communication = false;  // every transfer takes 0
  // 0: no ceiling (e.g. window / RTT). Like link rates, given at full size:
  // the simulator multiplies it by the experiment's scale.
  double per_stream_ceiling_bps = 0;
  // 0: none; else one TCP stream keeps at most this many bytes in flight
  // (window ceiling; at most window / RTT), before scale like every rate.
  double stream_window_bytes = 0;
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
};

// The emulated WAN of an experiment at `scale`: every rate and per-flow rate
// (defaults, intra-DC, links, events), byte-sized queue limits and the TCP
// buffer limits (defaults 4 MiB send, 6 MiB receive when the scenario has
// none) multiplied by scale, so that transfer times stay those of scale 1 for
// messages the planner scaled the same way; buffers stay at least the
// kernel's initial sizes. Delays are kept. Throws std::invalid_argument for a
// scale that is not > 0.
emulator::Scenario scale_scenario(const emulator::Scenario& scenario, double scale);

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
// (docs/HARNESS.md, "Pacing"). The coordinator paces by it; the simulator
// caps by it.
double ring_stream_pacing_bps(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model, int src,
                              int dst);

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

// The DC whose decode host receives the KV caches of a worker in `worker_dc`:
// [prefill] decode_dc, or the worker's own DC with decode_dc = "local"; -1 if
// decode_dc is not a DC of the testbed.
int decode_dc_of(const Experiment& experiment, const emulator::Scenario& scenario, int worker_dc);
// The host of `dc` that runs its decode sink: its first.
std::string decode_host_name(const emulator::Scenario& scenario, int dc);

// BubbleTea: how each worker's KV caches reach the decode DC, one model for
// both runners' admission (KvEstimate) and the simulator's transfers. A route
// is the directed link to the decode DC ("" inside the DC, where the caches
// of the DC's workers share its own link; free from the decode host itself,
// over loopback), its delay, and the
// rate one transfer gets alone there (min(link rate x scale, streams x
// per-stream ceiling x scale), as a training transfer; halved without
// temporal sharing, where it shares the link with training). Caches on one
// route go one after the other: queue() records one, and estimate_ns()
// counts what is still ahead of a new one.
class KvRoutes {
 public:
  struct Route {
    std::string link;
    int link_index = -1;  // src x DCs + dst across DCs, else -1
    double rate_bps = 0;  // infinite: no wire time
    std::int64_t delay_ns = 0;
    // Of the link's time, what training's sends leave to caches (leave_to_training).
    double share = 1;
    std::int64_t wire_ns(std::uint64_t bytes) const;      // at rate_bps, the link to itself
    std::int64_t expected_ns(std::uint64_t bytes) const;  // sharing it: wire_ns / share
  };

  // `scenario` as written (rates at full size): the experiment's scale applies here.
  KvRoutes(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model);

  struct Span {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
  };
  // Where caches take turns on a link (a DC's own link, or a WAN link under
  // temporal sharing), they leave it to training's sends: per link_index, the
  // spans (sorted, disjoint) during which `training`'s sends hold it. A WAN
  // send holds its link to its last bit, [start, end - the pair's delay]; a
  // send between two hosts of a DC holds the DC's own link from
  // kAnnounceLeadNs before it starts.
  std::map<int, std::vector<Span>> training_busy(const RunRecord& training) const;
  // Whether `worker`'s caches take turns on a link with the caches of others
  // and with training's sends (a DC's own link, a WAN link under temporal sharing).
  bool takes_turns(int worker) const;
  // Admission's model of such a route: the share of the link's time that
  // `training` (the plan's iteration, simulated) leaves to caches.
  void leave_to_training(const RunRecord& training);

  const Route& route(int worker) const { return routes_.at(static_cast<std::size_t>(worker)); }
  // Delay + wire time + the wire time of caches queued before it and not yet sent at `now_ns`.
  std::int64_t estimate_ns(int worker, std::uint64_t bytes, std::int64_t now_ns) const;
  // A cache of `bytes` from `worker`, ready at `ready_ns`, takes its turn on the route.
  void queue(int worker, std::int64_t ready_ns, std::uint64_t bytes);
  struct Waiting {
    int worker = 0;
    std::int64_t ready_ns = 0;
    std::uint64_t bytes = 0;
  };
  // The real run, as a cache arrives: `worker`'s route queue starts again
  // from `now_ns` with the caches still waiting for it (those of every worker
  // that shares the route), at the wire times learned since their placement.
  // What placements added up drifts: caches placed before a slowdown was
  // learned counted at the model's rate, and a route that carries less than
  // the caches placed on it grows a real queue the sum never shows
  // (bt-latency 40 ms: caches waited 5 s on a DC's own link that admission
  // took for empty, TTFT p99 7.3 s against a 3 s SLO).
  void requeue(int worker, std::int64_t now_ns, std::vector<Waiting> waiting);
  // Whether two workers' caches queue on one route (a DC's own link, or one WAN link).
  bool same_queue(int worker, int other) const;
  // The real run: a cache of `bytes` took `took_ns` from the start of its
  // sending to its arrival. Later estimates and queue times on that route
  // stretch the wire time by how much slower than the model caches went
  // (a moving average, never below 1): gate waits, sharing with training,
  // the emulator's own overhead. On a route the model gives no wire time
  // (loopback on a sink's host) they take the measured time per byte.
  void observe(int worker, std::uint64_t bytes, std::int64_t took_ns);
  double slowdown(int worker) const;
  // The real run: a cache arrived `late_ns` after admission predicted its
  // first token (negative: early). Estimates on the route then add the
  // largest of its last kLatenessSamples such figures, when positive: a
  // moving average of the wire time is short half the time, and a TTFT SLO
  // bounds the slowest requests (bubbletea-3dc-local, 2026-11-23: without it
  // TTFT p99 was 1.12-1.24x the SLO; with the p90 of the samples 12-23 of
  // about 280 served requests came late, with the largest 1-10, at the same
  // utilization).
  void observe_lateness(int worker, std::int64_t late_ns);
  std::int64_t margin_ns(int worker) const;
  static constexpr std::size_t kLatenessSamples = 20;

 private:
  std::int64_t wire_ns(int worker, std::uint64_t bytes) const;  // the route's, stretched by slowdown

  std::vector<Route> routes_;  // per worker
  const Plan* plan_ = nullptr;
  int dcs_ = 0;
  bool temporal_sharing_ = false;
  std::map<int, std::int64_t> free_at_;         // per link_index (-1 - worker inside a DC): when its queue empties
  std::map<int, double> slowdown_;              // per the same key: measured / modelled wire time
  std::map<int, double> unshaped_ns_per_byte_;  // per the same key, on a route with no modelled wire time: measured
  std::map<int, std::vector<std::int64_t>> lateness_;  // per the same key: the last caches' lateness, oldest first
};

// About 31.7 years: simulated times are int64 nanoseconds; a run that goes
// beyond this has a link or a compute step absurdly slow for its messages.
inline constexpr double kMaxSimulatedNs = 1e18;

}  // namespace wanlab::harness
