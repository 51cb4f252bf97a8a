// BubbleTea's KV caches on their way to the decode DC, as both runners model
// them: the decode host of each worker, each worker's route there, and what
// admission estimates a cache will take on it (KvRoutes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness {

// KV caches on a DC's own link (decode in the training DC, on another host)
// go in pieces and leave the link to training: a training send between two
// hosts of the DC holds it from a lead before the compute it follows ends
// (the real run announces it then, LinkGate) until its bytes have left. At
// the announcement, what may still be granted is the piece leaving its
// sockets and the next one, granted as the first was released: the lead is
// those two pieces' wire time (KvRoutes::dc_lead_ns), the two pieces the
// piece size budgets for (KvRoutes::leave_to_training). Across machines the
// announcement reaches the coordinator one control delay late, and a grant
// it sent just before reaches the prefill worker one more later: the lead
// grows by both (each half the control channel's round trip, as the clock
// probes measured it), so that the last piece granted still ends before the
// send's bytes come.
std::int64_t announce_lead_ns(std::int64_t pieces_ns, std::int64_t worker_control_delay_ns,
                              std::int64_t prefill_control_delay_ns);

// The DC whose decode host receives the KV caches of a worker in `worker_dc`:
// [prefill] decode_dc, or the worker's own DC with decode_dc = "local"; -1 if
// decode_dc is not a DC of the testbed.
int decode_dc_of(const Experiment& experiment, const emulator::Scenario& scenario, int worker_dc);
// The host of `dc` that runs its decode sink: its first.
std::string decode_host_name(const emulator::Scenario& scenario, int dc);

// BubbleTea: how each worker's KV caches reach the decode DC, one model for
// both runners' admission (KvEstimate) and the simulator's transfers. A route
// is the directed link to the decode DC ("" inside the DC, where the caches
// of the DC's workers share its own link; "" too from the decode host
// itself, each worker's own NVLink to the decode GPUs), its delay, and the
// rate one transfer gets alone there (min(link rate x scale, streams x
// per-stream ceiling x scale), as a training transfer; halved without
// temporal sharing, where it shares the link with training; from the decode
// host tp x [prefill] intra_host_rate x scale, no delay). Caches on one
// route go one after the other: queue() records one, and estimate_ns()
// counts what is still ahead of a new one.
class KvRoutes {
 public:
  struct Route {
    std::string link;
    int link_index = -1;  // src x DCs + dst (src x DCs + src: a DC's own link); -1 from the decode host
    double rate_bps = 0;  // infinite: no wire time
    std::int64_t delay_ns = 0;
    // Of the link's time, what training's sends leave to caches (leave_to_training).
    double share = 1;
    // The pair's rate x scale, which sizes KV pieces (bytes_in).
    double link_bps = 0;
    // On a link: a KV piece, in bytes (leave_to_training; 0 before, and from the decode host).
    std::uint64_t piece_bytes = 0;
    std::int64_t wire_ns(std::uint64_t bytes) const;      // at rate_bps, the link to itself
    std::int64_t expected_ns(std::uint64_t bytes) const;  // sharing it: wire_ns / share
  };

  // `scenario` as written (rates at full size): the experiment's scale applies here.
  KvRoutes(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model);

  struct Span {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
  };
  // The same time as sorted, disjoint spans (ends increase with starts).
  static std::vector<Span> merged(std::vector<Span> spans);
  // Where caches take turns on a link (a DC's own link, or a WAN link under
  // temporal sharing), they leave it to training's sends: per link_index, the
  // spans (sorted, disjoint) during which `training`'s sends hold it. A WAN
  // send holds its link to its last bit, [start, end - the pair's delay]; a
  // send between two hosts of a DC holds the DC's own link from dc_lead_ns
  // before it starts (call leave_to_training first: it sizes the pieces).
  std::map<int, std::vector<Span>> training_busy(const RunRecord& training) const;
  // Whether `worker`'s caches take turns on a link with the caches of others
  // and with training's sends (a DC's own link, a WAN link under temporal sharing).
  bool takes_turns(int worker) const;
  // Admission's model of such a route: the share of the link's time that
  // `training` (the plan's iteration, simulated) leaves to caches. Sizes the
  // KV pieces first, from the same iteration: every training send that takes
  // turns with them (a WAN link's gated sends, its temporal-sharing slots; a
  // DC's own link's sends between two of its hosts, each announced) may find
  // up to two pieces ahead of its bytes (one on the wire, the next granted
  // or paced behind it), so a piece is sized for 2 x piece x those sends to
  // be kKvCostOfIteration of the iteration.
  void leave_to_training(const RunRecord& training);
  // What KV pieces may cost training over an iteration, as a share of it:
  // half the 2% an iteration with prefill may differ from one without (the
  // generalization benchmark's target), as the emulation's health takes half.
  static constexpr double kKvCostOfIteration = 0.01;
  // At least about three segments. A floor of 32 KB made a piece 8-240 ms on
  // the slow links of scaled runs (3.2 to 0.11 Gbit/s at scale 0.01), each a
  // wait for training's sends: bubbletea-general seed 14's iteration was 6%
  // over prefill off, and 1.006-1.010 with this floor (2026-11-27).
  static constexpr std::uint64_t kMinPiece = 4u << 10;
  static constexpr std::uint64_t kMaxPiece = 4u << 20;
  // How long before a send between two hosts of `dc` ends the compute it
  // follows the send holds the DC's own link: two of its KV pieces' wire time
  // (0 where no caches cross that link).
  std::int64_t dc_lead_ns(int dc) const;
  // About `seconds` of `worker`'s link (Route::link_bps), in bytes, within [kMinPiece, kMaxPiece].
  std::uint64_t bytes_in(int worker, double seconds) const;
  // Between two grants of `worker`'s KV pieces across DCs: a piece's wire
  // time and a quarter. Paced below the link's rate: written to the sockets
  // is not yet on the wire, and pieces back to back would keep a queue ahead
  // of training's sends.
  std::int64_t piece_interval_ns(int worker) const;

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
  // the emulator's own overhead.
  void observe(int worker, std::uint64_t bytes, std::int64_t took_ns);
  double slowdown(int worker) const;
  // The real run: a cache arrived `late_ns` after admission predicted its
  // first token (negative: early), at `now_ns`. Estimates on the route then
  // add a margin: the lateness that at most kLateShare of the route's caches
  // that arrived within the last TTFT SLO exceeded (with fewer than
  // 1 / kLateShare of them, the largest), when positive. A moving average of
  // the wire time is short half the time, and the SLO is judged on the p99 of
  // TTFT, which the share follows (bubbletea-3dc-local, 2026-11-23: with the
  // p90 of the samples 12-23 of about 280 served requests came late; with the
  // largest of the last 20, 1-10, at the same utilization). Samples expire
  // after one SLO: a route whose margin once rose past what the SLO allows is
  // refused every request, gets no cache to learn from, and kept that margin
  // for good (bench/harness/bubbletea-general.sh seed 6, 2026-11-27: caches
  // 1-3 s late behind slipped prefills locked 8 of 9 workers out from 60 s
  // into a 230 s run; 16% utilization with prefill against 70% simulated).
  void observe_lateness(int worker, std::int64_t late_ns, std::int64_t now_ns);
  std::int64_t margin_ns(int worker, std::int64_t now_ns) const;
  static constexpr double kLateShare = 0.01;
  // A cache's wire time on `worker`'s route, stretched by slowdown(): what
  // estimates and queue times count for it.
  std::int64_t wire_ns(int worker, std::uint64_t bytes) const;

 private:
  std::vector<Route> routes_;  // per worker
  const Plan* plan_ = nullptr;
  void size_pieces(std::int64_t iteration_ns);
  int dcs_ = 0;
  bool temporal_sharing_ = false;
  std::map<int, std::int64_t> free_at_;  // per link_index (-1 - worker on its decode host): when its queue empties
  std::map<int, double> slowdown_;       // per the same key: measured / modelled wire time
  struct Lateness {
    std::int64_t at_ns = 0;
    std::int64_t late_ns = 0;
  };
  // Per the same key: the lateness of caches within the horizon, oldest first.
  std::map<int, std::vector<Lateness>> lateness_;
  std::int64_t lateness_horizon_ns_ = 0;           // the TTFT SLO
};

}  // namespace wanlab::harness
