// BubbleTea in the coordinator: the prefill workers (one per training worker,
// borrowing its emulated GPU) and the decode sinks (one per decode DC, on its
// first host), their control connections,
// the scheduler (requests at their arrival times, Admission into the bubbles
// predicted for the running iteration), the KV gate (temporal sharing: KV
// pieces take a WAN link only while training's gated sends neither hold nor
// wait for it) and the PrefillRecord. A prefill process that dies fails its
// outstanding requests and is avoided from then on; training goes on.
// Everything runs on the coordinator's io_context. Across machines
// (Setup::remote) times in the processes' messages move between their
// clocks and the coordinator's: a prefill worker's clock is its training
// worker's (one machine, one clock, one estimate, so that the two on one GPU
// line up), a decode sink's is probed like a worker's. Each training worker
// makes its GPU's lease file on its own machine.
#pragma once

#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/clock_sync.hpp"
#include "protocol/control_socket.hpp"
#include "worker/gpu_lease.hpp"
#include "protocol/notifier.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/harness/run/link_gate.hpp"
#include "wanlab/harness/bubbletea/admission.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/run/run.hpp"

namespace wanlab::harness::run_detail {

class PrefillService {
 public:
  struct Setup {
    const Plan* plan = nullptr;
    const emulator::Scenario* scenario = nullptr;  // as written: rates are scaled here
    const emulator::TestbedState* testbed = nullptr;
    std::string control_dir;
    asio::io_context* io = nullptr;
    Notifier* changed = nullptr;  // notified whenever a process's state changes
    const LinkGate* gate = nullptr;
    std::function<void(const std::string&)> log;
    bool remote = false;  // the processes run on other machines (--runtime slurm)
    // A training worker's clock against the coordinator's.
    std::function<const ClockSync&(int worker)> training_clock;
  };
  explicit PrefillService(Setup setup);

  // The lease file of worker's GPU: on one machine made by create_leases
  // before any worker starts; across machines by the training worker itself
  // (make_leases_on_workers), which then says it listens (lease_made).
  std::string lease_path(int worker) const;
  // How far ahead sends between two hosts of `dc` announce the DC's own
  // link: two KV pieces there (KvRoutes::dc_lead_ns), before control delays.
  std::int64_t dc_lead_ns(int dc) const { return kv_routes_->dc_lead_ns(dc); }
  void create_leases();
  bool make_leases_on_workers() const { return setup_.remote; }
  void lease_made(int worker);
  // Starts the decode sinks and one prefill worker per training worker, told
  // to connect to `control_address`.
  void launch(WorkerRuntime& runtime, const std::string& control_address);
  // Whether `message` is the first word of one of ours.
  static bool is_hello(const control::Message& message);
  // Serves one of our processes' control connections after its hello.
  asio::awaitable<void> serve(std::shared_ptr<ControlSocket> socket, control::Message hello);

  // Startup: every process is ready (or gone); after the deadline, those that
  // are not are given up (training does not wait for prefill).
  bool settled() const;
  void give_up_unsettled(const std::string& why);

  // Iteration `iteration` began at `start_ns` (CLOCK_MONOTONIC); `origin_ns`
  // is the run's origin; `record` holds the iterations before.
  void start_iteration(int iteration, std::int64_t start_ns, std::int64_t origin_ns, const RunRecord& record);
  // A compute of `worker` (op `op_index` of `iteration`) ended at `end_ns`
  // (the coordinator's CLOCK_MONOTONIC): its GPU's later windows follow.
  void compute_done(int worker, int iteration, int op_index, std::int64_t end_ns);
  // Its events are in `record`: the prediction error of its windows.
  void finish_iteration(int iteration, const RunRecord& record);
  void add_training_delay(int worker, std::int64_t ns);
  // Training's gated sends changed: KV pieces may go, or must wait.
  void link_changed();
  void fill(Progress& progress, const RunRecord& record) const;

  // The run is over: tells every process to stop.
  void stop();
  bool all_exited() const;
  std::vector<pid_t> running() const;
  // Closes the control connections (while the io_context lives).
  void close() noexcept;
  // What happened, for RunRecord::prefill (times from the origin).
  PrefillRecord finish(const RunRecord& record);

 private:
  struct Process {
    pid_t pid = -1;
    std::optional<int> exit_status;
    std::shared_ptr<ControlSocket> control;
    bool hello = false;
    bool assigned = false;
    bool ready = false;  // prefill worker: its KV channel is open; sink: listening
    bool gone = false;   // died, failed or was given up: avoided from then on
    ClockSync clock;     // a sink's CLOCK_MONOTONIC against the coordinator's
  };
  struct BatchState {
    Batch batch;
    bool over = false;                          // arrived or failed
    std::int64_t kv_start_ns = -1;              // CLOCK_MONOTONIC
    std::optional<control::KvArrived> arrived;  // the sink's word, held until the worker's KvSent
    bool kv_begun = false;                      // its first gated KV piece had the link
  };
  struct KvWaiter {
    int worker = 0;
    int batch = 0;
    int piece = 0;
  };

  struct Sink {
    int dc = 0;
    const emulator::Host* host = nullptr;
    int senders = 0;  // prefill workers whose KV caches it receives
  };

  int workers() const { return static_cast<int>(sink_of_.size()); }
  bool is_sink(int index) const { return index >= workers(); }
  // The process index of the sink that receives `worker`'s KV caches.
  int sink_process(int worker) const { return workers() + sink_of_[worker]; }
  const Sink& sink_at(int index) const { return sinks_[index - workers()]; }
  // Whether `worker` can take prefill: it and its sink are ready and not gone.
  bool usable(int worker) const;
  std::string who(int index) const;
  std::string link_of(int worker) const;  // "east->europe"; empty inside its decode DC
  bool on_dc_link(int worker) const;
  std::string kv_link(int worker) const;  // what a gated KV piece holds: link_of, or its DC's own link
  control::PrefillAssign assignment(int worker) const;
  control::SinkAssign sink_assignment(int index) const;
  std::int64_t kv_wire_ns(int worker, std::uint64_t bytes) const;
  std::uint64_t largest_kv_bytes() const;

  void on_hello(int index, std::shared_ptr<ControlSocket> socket);
  void clock_reply(int index, const control::ClockReply& reply);
  const ClockSync& clock_of(int index) const;
  // Messages' times on the coordinator's clock (received) and the process's (sent).
  void to_coordinator_clock(int index, control::Message& message) const;
  void assign_ready();
  void handle(int index, control::Message message);
  void handle_sink(int index, control::Message& message);
  void handle_worker(int worker, control::Message& message);
  void chunk_done(int worker, const control::PrefillDone& done);
  void kv_arrived(const control::KvArrived& arrived);
  void kv_sent(int worker, const control::KvSent& sent);
  void kv_done(BatchState& b, const control::KvArrived& arrived);
  void requeue_kv(int worker);
  asio::awaitable<void> watch_exit(int index);
  asio::awaitable<void> connection_lost(int index, std::string what);
  void gone(int index, const std::string& why);

  asio::awaitable<void> feed_arrivals();
  void arrive(const Request& request);
  void schedule();
  void place(const Batch& batch);
  std::int64_t slot_end(const Chunk& chunk) const;
  std::int64_t batch_deadline(const Batch& batch);
  int fail_batches(const std::function<bool(const BatchState&)>& which, const std::string& reason);
  void grant_kv();
  bool kv_turn(int worker, int batch, int piece);
  bool kv_requested(int batch) const;  // its first piece waits for the gate
  asio::awaitable<void> wake_kv(std::string link, std::int64_t at_ns);

  RequestOutcome& outcome(int request);
  std::optional<double> ttft_p50_s() const;

  Setup setup_;
  const Experiment& experiment_;
  std::vector<Sink> sinks_;
  std::vector<int> sink_of_;  // per training worker: its index in sinks_
  std::vector<GpuLease> leases_;
  std::string lease_tag_;           // across machines: this run's, in its lease files' names
  std::vector<bool> lease_ready_;   // per training worker: its lease file exists
  std::vector<Process> processes_;  // prefill workers by training worker id, then the sinks
  bool stopping_ = false;

  std::vector<Request> requests_;
  std::size_t next_arrival_ = 0;
  std::optional<Admission> admission_;
  std::optional<RunRecord> simulated_;  // the plan's first iteration, simulated: iteration 0's prediction
  std::vector<Window> windows_;         // what is left of the running iteration's prediction
  std::vector<Window> predicted_;       // the running iteration's prediction, whole
  std::vector<std::map<int, std::int64_t>> predicted_ends_;  // per worker: op index -> its compute's predicted end
  DriftFollower drift_;                                      // how far each worker's windows have moved
  std::vector<std::set<std::int64_t>> chunk_ends_;           // per worker: the ends of chunks placed on it
  std::int64_t origin_ns_ = 0;
  bool started_ = false;
  std::map<int, BatchState> batches_;
  std::map<int, RequestOutcome> outcomes_;  // arrived requests, by id
  std::vector<KvWaiter> kv_waiting_;
  std::map<std::string, KvWaiter> kv_holding_;         // per link: the piece on it
  std::map<std::string, int> kv_cache_on_;             // per DC's own link: the batch whose cache is on it
  std::map<std::string, std::int64_t> kv_next_grant_;  // per link: the earliest next grant (pacing)
  std::set<std::string> kv_wakes_;                     // links with a grant_kv timer pending
  std::optional<KvRoutes> kv_routes_;                  // admission's KV estimate, the simulator's model
  PrefillRecord record_;
  int iteration_ = 0;          // the running one
  std::map<int, int> missed_;  // batches not done by their SLO, per iteration
};

}  // namespace wanlab::harness::run_detail
