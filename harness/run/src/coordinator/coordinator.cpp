// The coordinator: launches the workers, distributes plans, runs the
// iterations, gates WAN links, gathers events; on any failure stops it all.
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "protocol/control_socket.hpp"
#include "coordinator/assignment.hpp"
#include "coordinator/clock_sync.hpp"
#include "process/exit_status.hpp"
#include "coordinator/health_probe.hpp"
#include "coordinator/iteration_reports.hpp"
#include "prefill/prefill_service.hpp"
#include "wanlab/harness/model/kv_routes.hpp"
#include "protocol/notifier.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/run/link_gate.hpp"
#include "wanlab/harness/run/run.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"
#include "wanlab/transport/options.hpp"

namespace wanlab::harness {
namespace {

using namespace run_detail;
namespace ctl = control;
namespace em = wanlab::emulator;
namespace fs = std::filesystem;

constexpr auto kFailureGrace = std::chrono::milliseconds(700);
constexpr auto kExitWait = std::chrono::seconds(15);

struct WorkerState {
  const WorkerPlan* plan = nullptr;
  const em::Host* host = nullptr;
  pid_t pid = -1;
  std::optional<int> exit_status;  // waitpid status once it ended
  std::shared_ptr<ControlSocket> control;
  bool hello = false;
  bool listening = false;
  bool ready = false;
  int reported = -1;  // last iteration reported
  bool said_failed = false;
  ClockSync clock;  // its CLOCK_MONOTONIC against the coordinator's
};

// A worker's report in the coordinator's clock. A time that would leave the
// clock's range is a malformed report.
void to_coordinator_clock(ctl::Report& report, const ClockSync& clock) {
  if (clock.offset_ns() == 0) return;
  const auto shift = [&clock](std::int64_t& t) { t = clock.to_coordinator(t); };
  for (Event& e : report.events) {
    shift(e.start_ns);
    shift(e.end_ns);
  }
  for (ctl::Arrival& a : report.arrivals) {
    shift(a.arrival_ns);
    shift(a.first_byte_ns);
  }
  for (ctl::SendRecord& s : report.sends) {
    shift(s.queued_ns);
    shift(s.first_sent_ns);
    shift(s.last_sent_ns);
  }
}

struct Failure {
  int worker = -1;  // -1: not a worker's
  std::string reason;
  bool lost = false;  // the worker itself died (rather than reporting a peer's trouble)
};

class Coordinator {
 public:
  Coordinator(const Plan& plan, const em::Scenario& scenario, const em::TestbedState& testbed,
              const RunOptions& options)
      : plan_(plan), scenario_(scenario), testbed_(testbed), options_(options), gate_(plan) {
    workers_.resize(plan.workers.size());
    for (std::size_t i = 0; i < plan.workers.size(); ++i) {
      if (plan.workers[i].worker.id != static_cast<int>(i))
        throw RunError(fmt::format("plan: worker {} has id {}", i, plan.workers[i].worker.id));
      workers_[i].plan = &plan.workers[i];
      workers_[i].host = &testbed.host(plan.workers[i].worker.host);
      if (!remote()) workers_[i].clock.same_clock();
    }
    harness_dir_ = em::run_dir(testbed.name) + "/harness";
    control_dir_ = harness_dir_ + "/control";
    if (plan.experiment.prefill.enabled)
      prefill_.emplace(PrefillService::Setup{
          &plan_, &scenario_, &testbed_, control_dir_, &io_, &changed_, &gate_, options_.log, remote(),
          [this](int worker) -> const ClockSync& { return workers_.at(static_cast<std::size_t>(worker)).clock; }});
  }

  ~Coordinator() { cleanup(); }

  // CLOCK_MONOTONIC when the first iteration began (0 before it has).
  std::int64_t origin_ns() const { return origin_ns_; }

  RunRecord run() {
    fs::create_directories(control_dir_);
    RuntimeSetup setup;
    setup.choice = options_.runtime;
    setup.rootfs_dir = harness_dir_ + "/rootfs";
    setup.control_dir = control_dir_;
    setup.exe = options_.exe.empty() ? base::self_exe() : options_.exe;
    setup.image = options_.image;
    if (!remote()) setup.etc_files = em::host_identity(testbed_, testbed_.hosts.front()).files;
    setup.progress = options_.log;
    setup.slurm_nodes = options_.slurm_nodes;
    if (remote()) {
      secret_ = RunSecret::generate();
      setup.secret_hex = secret_->hex();
    }
    runtime_ = make_runtime(setup);
    log(fmt::format("workers run in {} ({})", runtime_->name(), runtime_->detail()));
    record_.plan = plan_;
    record_.runtime = runtime_->name();
    record_.runtime_detail = runtime_->detail();

    if (remote()) {
      tcp_acceptor_.emplace(io_, asio::ip::tcp::endpoint(asio::ip::address_v4(options_.control_ipv4), 0));
      control_address_ = ControlAddress{"", options_.control_ipv4, tcp_acceptor_->local_endpoint().port()}.to_string();
      log(fmt::format("the coordinator listens on {} (TCP, authenticated with the run's secret)", control_address_));
    } else {
      control_address_ = control_dir_ + "/control.sock";
      acceptor_.emplace(io_, asio::local::stream_protocol::endpoint(control_address_));
    }
    asio::co_spawn(io_, main(), [this](std::exception_ptr error) {
      if (error) main_error_ = error;
      io_.stop();
    });
    io_.run();
    if (main_error_) std::rethrow_exception(main_error_);
    return std::move(record_);
  }

 private:
  void log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }

  // Workers on other machines (--runtime slurm): TCP control, their own clocks.
  bool remote() const { return options_.runtime == RuntimeChoice::slurm; }

  std::string who(int worker) const {
    const Worker& w = workers_[worker].plan->worker;
    return fmt::format("worker {} (stage {}, replica {}, on {})", worker, w.stage, w.replica, w.host);
  }

  void fail(int worker, std::string reason, bool lost = false) {
    if (stopping_) return;
    failures_.push_back(Failure{worker, std::move(reason), lost});
    changed_.notify();
  }

  // Waits for `ready`; throws RunError on a failure (after a short grace in
  // which the root cause usually arrives) or at the deadline.
  template <typename Ready, typename Describe>
  asio::awaitable<void> wait_for(Ready ready, Clock::time_point deadline, Describe describe_timeout) {
    const bool done = co_await changed_.wait_for([&] { return !failures_.empty() || ready(); }, deadline);
    if (failures_.empty() && done) co_return;
    if (failures_.empty()) fail(-1, describe_timeout());
    co_await changed_.wait_for([] { return false; }, Clock::now() + kFailureGrace);
    co_await changed_.wait_for([&] { return lost_pending_ == 0; }, Clock::now() + std::chrono::seconds(4));
    throw RunError(failure_message());
  }

  std::string failure_message() const {
    // A worker that died explains the others' broken channels: name it first.
    std::vector<Failure> ordered = failures_;
    std::stable_partition(ordered.begin(), ordered.end(), [](const Failure& f) { return f.lost; });
    std::string text;
    for (const Failure& f : ordered) {
      const std::string line = f.worker >= 0 ? who(f.worker) + " failed: " + f.reason : f.reason;
      if (text.empty()) {
        text = line;
      } else if (text.size() < 2000) {
        text += "; also " + line;
      }
    }
    return text;
  }

  // ---- main sequence --------------------------------------------------------

  asio::awaitable<void> main() {
    asio::co_spawn(io_, watch_interrupts(), asio::detached);
    asio::co_spawn(io_, accept_workers(), asio::detached);
    if (prefill_) prefill_->create_leases();
    launch_workers();
    if (prefill_) prefill_->launch(*runtime_, control_address_);
    const auto startup_deadline = Clock::now() + options_.startup_timeout;
    co_await wait_for(
        [&] { return all([](const WorkerState& w) { return w.hello && w.clock.known(); }); }, startup_deadline,
        [&] { return missing("connected", [](const WorkerState& w) { return w.hello && w.clock.known(); }); });
    if (remote()) log_clocks();
    log(fmt::format("{} workers connected; opening channels", workers_.size()));
    std::uint64_t longest_lead = 0;
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      ctl::Assign assign = assignment(static_cast<int>(i));
      longest_lead = std::max(longest_lead, assign.announce_lead_ns);
      workers_[i].control->post(std::move(assign));
    }
    if (longest_lead > 0)
      log(
          fmt::format("BubbleTea: sends between a DC's hosts are announced up to {:.1f} ms ahead (two KV pieces on "
                      "its link{})",
                      static_cast<double>(longest_lead) / 1e6, remote() ? ", and the control channel's delays" : ""));
    co_await wait_for([&] { return all([](const WorkerState& w) { return w.listening; }); }, startup_deadline,
                      [&] { return missing("listening", [](const WorkerState& w) { return w.listening; }); });
    for (auto& w : workers_) w.control->post(ctl::Connect{});
    co_await wait_for([&] { return all([](const WorkerState& w) { return w.ready; }); }, startup_deadline,
                      [&] { return missing("ready (channels open)", [](const WorkerState& w) { return w.ready; }); });
    if (prefill_) co_await wait_for_prefill(startup_deadline);
    const int iterations = plan_.experiment.iterations;
    for (int i = 0; i < iterations; ++i) co_await run_iteration(i, iterations);
    co_await stop_workers();
  }

  // Training does not wait for prefill: what is not ready by the deadline is given up.
  asio::awaitable<void> wait_for_prefill(Clock::time_point deadline) {
    co_await changed_.wait_for([&] { return !failures_.empty() || prefill_->settled(); }, deadline);
    if (!prefill_->settled())
      prefill_->give_up_unsettled(fmt::format("not ready within {} s", options_.startup_timeout.count()));
  }

  template <typename Predicate>
  bool all(Predicate predicate) const {
    return std::all_of(workers_.begin(), workers_.end(), predicate);
  }

  template <typename Predicate>
  std::string missing(const char* what, Predicate predicate) const {
    std::string ids;
    for (std::size_t i = 0; i < workers_.size(); ++i)
      if (!predicate(workers_[i])) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", i);
    return fmt::format("timed out after {} s waiting for workers to be {}: not yet {}",
                       options_.startup_timeout.count(), what, ids);
  }

  asio::awaitable<void> watch_interrupts() {
    asio::steady_timer tick(io_);
    while (!stopping_) {
      if (const int sig = base::interrupted_by()) {
        fail(-1, fmt::format("interrupted by signal {} ({})", sig, ::strsignal(sig)));
        co_return;
      }
      tick.expires_after(std::chrono::milliseconds(100));
      std::error_code ignored;
      co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }

  void launch_workers() {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const int id = static_cast<int>(i);
      LaunchSpec spec;
      spec.worker = id;
      spec.name = fmt::format("wanlab-{}-w{}", testbed_.name, id);
      spec.hostname = fmt::format("w{}-{}", id, workers_[i].host->name);
      spec.netns = workers_[i].host->netns;
      spec.host = workers_[i].host->name;
      spec.args = {"worker", "--control", control_address_, "--id", std::to_string(id)};
      workers_[i].pid = runtime_->launch(spec);
      if (workers_[i].pid > 0) asio::co_spawn(io_, watch_exit(id), asio::detached);
    }
  }

  asio::awaitable<void> watch_exit(int id) {
    WorkerState& w = workers_[id];
    const auto status = co_await wait_exit(io_, w.pid);
    if (!status) {
      if (!w.exit_status) fail(id, fmt::format("watching its process {}: {}", w.pid, std::strerror(errno)));
      co_return;
    }
    w.exit_status = *status;
    if (!stopping_ && !w.said_failed) fail(id, describe_status(*status), true);
    changed_.notify();
  }

  asio::awaitable<void> accept_workers() {
    for (;;) {
      std::error_code ec;
      if (tcp_acceptor_) {
        auto socket = co_await tcp_acceptor_->async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::operation_aborted || !tcp_acceptor_ || !tcp_acceptor_->is_open()) co_return;
        if (ec) {
          // Out of descriptors (a flood of connections from the network): the
          // handshakes' deadline frees them; go on accepting.
          asio::steady_timer pause(io_, std::chrono::milliseconds(100));
          co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
          continue;
        }
        socket.set_option(asio::ip::tcp::no_delay(true), ec);
        auto control = std::make_shared<ControlSocket>(ControlSocket::Socket(std::move(socket)));
        asio::co_spawn(io_, authenticate_then_serve(control), asio::detached);
      } else {
        auto socket = co_await acceptor_->async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;  // closed
        asio::co_spawn(io_, serve(std::make_shared<ControlSocket>(ControlSocket::Socket(std::move(socket)))),
                       asio::detached);
      }
    }
  }

  // Over TCP anyone on the network may connect: one that does not prove it
  // holds the run's secret in time is dropped, and the run goes on (a
  // worker that never comes is the startup timeout's to report).
  asio::awaitable<void> authenticate_then_serve(std::shared_ptr<ControlSocket> control) {
    HandshakeDeadline deadline(io_.get_executor(), control);
    std::string refused;
    try {
      co_await control->authenticate_worker(*secret_);
    } catch (const std::exception& error) {
      refused = error.what();
    }
    deadline.decide();
    if (!refused.empty()) {
      log(fmt::format("refused a control connection: {}", refused));
      control->close();
      co_return;
    }
    co_await serve(control);
  }

  // One worker's control connection: its hello, then whatever it says.
  asio::awaitable<void> serve(std::shared_ptr<ControlSocket> socket) {
    int id = -1;
    std::string lost;  // why the connection ended, when it did without a word
    try {
      auto first = co_await socket->read();
      if (!first) co_return;
      if (prefill_ && PrefillService::is_hello(*first)) {
        co_await prefill_->serve(socket, std::move(*first));
        co_return;
      }
      const auto* hello = std::get_if<ctl::Hello>(&*first);
      if (!hello) throw ctl::ControlError("expected hello, got " + ctl::type_name(*first));
      if (hello->worker >= static_cast<int>(workers_.size()) || workers_[hello->worker].hello)
        throw ctl::ControlError(fmt::format("hello from unknown or repeated worker {}", hello->worker));
      id = hello->worker;
      workers_[id].hello = true;
      workers_[id].control = socket;
      if (remote()) socket->post(workers_[id].clock.first_probe(monotonic_ns()));
      changed_.notify();
      for (;;) {
        auto message = co_await socket->read();
        if (!message) break;
        handle(id, std::move(*message));
        changed_.notify();
      }
      lost = "closed its control connection";
    } catch (const std::system_error& error) {
      // A reset, as when the worker was killed: its exit status says more.
      lost = fmt::format("control connection: {}", error.what());
    } catch (const std::exception& error) {
      if (id < 0) {
        fail(-1, fmt::format("a process on the control socket: {}", error.what()));
      } else if (!stopping_) {
        fail(id, fmt::format("control connection: {}", error.what()));
      }
    }
    if (id >= 0 && !lost.empty() && !stopping_) co_await control_lost(id, lost);
  }

  // The connection ended without a word: wait a moment for the exit status, which says more.
  asio::awaitable<void> control_lost(int id, const std::string& what) {
    ++lost_pending_;
    if (workers_[id].pid > 0)
      co_await changed_.wait_for([&] { return workers_[id].exit_status.has_value() || stopping_; },
                                 Clock::now() + std::chrono::seconds(3));
    --lost_pending_;
    if (!workers_[id].exit_status && !workers_[id].said_failed) fail(id, what, true);
    changed_.notify();
  }

  void handle(int id, ctl::Message message) {
    WorkerState& w = workers_[id];
    if (std::holds_alternative<ctl::Listening>(message)) {
      w.listening = true;
      if (prefill_ && prefill_->make_leases_on_workers()) prefill_->lease_made(id);
    } else if (std::holds_alternative<ctl::Ready>(message)) {
      w.ready = true;
    } else if (auto* request = std::get_if<ctl::GateRequest>(&message)) {
      grant(gate_.request(id, request->iteration, request->op_index));
      if (prefill_) prefill_->link_changed();
    } else if (auto* release = std::get_if<ctl::GateRelease>(&message)) {
      grant(gate_.release(id, release->iteration, release->op_index));
      if (prefill_) prefill_->link_changed();
    } else if (auto* report = std::get_if<ctl::Report>(&message)) {
      accept_report(id, std::move(*report));
    } else if (auto* done = std::get_if<ctl::ComputeDone>(&message)) {
      if (!prefill_) throw ctl::ControlError("unexpected compute_done message: this run has no prefill");
      // An end outside the running iteration (a clock estimate gone stale over
      // a long run) moves nothing: the prediction stays as it was.
      const std::int64_t end = w.clock.to_coordinator(done->end_ns);
      const std::int64_t bound = w.clock.bound_ns();
      if (end >= iteration_start_ns_ - bound && end <= monotonic_ns() + bound)
        prefill_->compute_done(id, done->iteration, done->op_index, end);
    } else if (auto* reply = std::get_if<ctl::ClockReply>(&message)) {
      clock_reply(id, *reply);
    } else if (auto* failed = std::get_if<ctl::Failed>(&message)) {
      w.said_failed = true;
      fail(id, failed->reason, failed->reason.find("worker") == std::string::npos);
    } else {
      throw ctl::ControlError("unexpected " + ctl::type_name(message) + " message");
    }
  }

  void clock_reply(int id, const ctl::ClockReply& reply) {
    WorkerState& w = workers_[id];
    if (const auto next = w.clock.reply(reply, monotonic_ns())) w.control->post(*next);
  }

  void log_clocks() const {
    std::int64_t worst = 0;
    for (const WorkerState& w : workers_) worst = std::max(worst, w.clock.bound_ns());
    log(fmt::format("workers' clocks: offsets known within {:.2f} ms (half the shortest of {} round trips)",
                    static_cast<double>(worst) / 1e6, ClockSync::kProbes));
  }

  void grant(const std::vector<LinkGate::Grant>& grants) {
    for (const auto& g : grants) workers_[g.worker].control->post(ctl::GateGrant{current_iteration_, g.op_index});
  }

  ctl::Assign assignment(int id) const {
    std::vector<const em::Host*> hosts;
    for (const WorkerState& w : workers_) hosts.push_back(w.host);
    ctl::Assign assign = make_assignment(plan_, scenario_, hosts, id);
    if (prefill_) {
      assign.gpu_lease = prefill_->lease_path(id);
      assign.make_gpu_lease = prefill_->make_leases_on_workers();
    }
    assign.announced_ops = gate_.announced(id);
    if (!assign.announced_ops.empty()) {
      const int dc = workers_[static_cast<std::size_t>(id)].plan->worker.dc;
      assign.announce_lead_ns = static_cast<std::uint64_t>(announce_lead_ns(
          prefill_->dc_lead_ns(dc), workers_[static_cast<std::size_t>(id)].clock.bound_ns(), dc_control_delay_ns(dc)));
    }
    return assign;
  }

  // The longest control delay (half the clock probes' shortest round trip)
  // of the workers in `dc`, and so of the prefill workers beside them, whose
  // KV pieces take the DC's own link.
  std::int64_t dc_control_delay_ns(int dc) const {
    std::int64_t longest = 0;
    for (const WorkerState& w : workers_)
      if (w.plan->worker.dc == dc) longest = std::max(longest, w.clock.bound_ns());
    return longest;
  }

  // ---- iterations -----------------------------------------------------------

  std::chrono::seconds iteration_timeout() const {
    if (options_.iteration_timeout.count() > 0) return options_.iteration_timeout;
    try {
      const RunRecord simulated = simulate_training(plan_, scenario_, LinkModel{}, 1);
      const double seconds =
          simulated.iteration_end_ns.empty()
              ? 0
              : static_cast<double>(simulated.iteration_end_ns[0] - simulated.iteration_start_ns[0]) / 1e9;
      return std::chrono::seconds(30 + static_cast<long>(10 * seconds));
    } catch (const std::exception&) {
      return std::chrono::seconds(300);
    }
  }

  asio::awaitable<void> run_iteration(int i, int iterations) {
    current_iteration_ = i;
    gate_.start_iteration(i);
    const std::int64_t start = monotonic_ns();
    iteration_start_ns_ = start;
    if (i == 0) origin_ns_ = start;
    for (auto& w : workers_) w.control->post(ctl::Start{i});
    if (prefill_) {
      prefill_->start_iteration(i, start, origin_ns_, record_);
      prefill_->link_changed();  // the gate started over
    }
    const auto timeout = iteration_timeout_ ? *iteration_timeout_ : *(iteration_timeout_ = iteration_timeout());
    co_await wait_for(
        [&] { return all([i](const WorkerState& w) { return w.reported >= i; }); }, Clock::now() + timeout,
        [&] {
          return fmt::format("iteration {} did not finish within {} s: {}{}", i, timeout.count(), missing_reports(i),
                             gate_.link_count() ? "; links: " + gate_.describe() : "");
        });
    finish_iteration(i, start);
    const double seconds =
        static_cast<double>(record_.iteration_end_ns.back() - record_.iteration_start_ns.back()) / 1e9;
    if (options_.progress) {
      Progress progress;
      progress.iteration = i;
      progress.iterations = iterations;
      progress.iteration_s = seconds;
      progress.utilization_so_far = utilization_so_far(record_, workers_.size());
      if (prefill_) prefill_->fill(progress, record_);
      options_.progress(progress);
    }
  }

  std::string missing_reports(int i) const {
    std::string ids;
    for (std::size_t w = 0; w < workers_.size(); ++w)
      if (workers_[w].reported < i) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", w);
    return "workers " + ids + " have not finished";
  }

  void accept_report(int id, ctl::Report report) {
    if (report.iteration != current_iteration_ || workers_[id].reported >= report.iteration)
      throw ctl::ControlError(
          fmt::format("report of iteration {} while iteration {} runs", report.iteration, current_iteration_));
    const int iteration = report.iteration;
    to_coordinator_clock(report, workers_[id].clock);
    std::int64_t gpu_wait_ns = 0;
    for (const Event& e : report.events) gpu_wait_ns += e.gpu_wait_ns;
    add_wake_ups(report.events);
    reports_.accept(id, *workers_[id].plan, std::move(report));
    workers_[id].reported = iteration;
    if (prefill_) prefill_->add_training_delay(id, gpu_wait_ns);
  }

  // The emulation's health: how late the worker's timers woke it after its
  // compute ops of one iteration, and the compute those ops planned.
  void add_wake_ups(const std::vector<Event>& events) {
    EmulationSamples& samples = record_.emulation ? *record_.emulation : record_.emulation.emplace();
    for (const Event& e : events) {
      if (e.kind != OpKind::forward && e.kind != OpKind::backward) continue;
      samples.wake_late_ns.push_back(e.wake_late_ns);
      samples.compute_ns += e.end_ns - e.start_ns;
    }
  }

  void finish_iteration(int i, std::int64_t start) {
    reports_.finish(plan_, i, start, origin_ns_, record_);
    if (prefill_) prefill_->finish_iteration(i, record_);
  }

  // ---- the end --------------------------------------------------------------

  asio::awaitable<void> stop_workers() {
    stopping_ = true;
    for (auto& w : workers_) w.control->post(ctl::Stop{});
    if (prefill_) prefill_->stop();
    const auto ended = [](const WorkerState& w) { return w.exit_status.has_value() || w.pid <= 0; };
    co_await changed_.wait_for([&] { return all(ended) && (!prefill_ || prefill_->all_exited()); },
                               Clock::now() + kExitWait);
    if (prefill_) record_.prefill = prefill_->finish(record_);
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const auto& status = workers_[i].exit_status;
      if (workers_[i].pid <= 0) continue;
      if (!status) {
        log(fmt::format("{} did not exit after stop; stopping it", who(static_cast<int>(i))));
      } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
        log(fmt::format("{} {} after stop", who(static_cast<int>(i)), describe_status(*status)));
      }
    }
  }

  // Stops every worker still running, removes the runtime's leftovers and the run's files.
  void cleanup() noexcept {
    stopping_ = true;
    std::vector<pid_t> running;
    for (auto& w : workers_)
      if (w.pid > 0 && !w.exit_status) running.push_back(w.pid);
    if (prefill_)
      for (pid_t pid : prefill_->running()) running.push_back(pid);
    try {
      base::terminate_pids(running, 2000);
    } catch (...) {
    }
    for (pid_t pid : running) ::waitpid(pid, nullptr, WNOHANG);
    if (runtime_) runtime_->cleanup();
    // Sockets close while the io_context lives.
    for (auto& w : workers_) {
      if (w.control) w.control->close();
      w.control.reset();
    }
    if (prefill_) prefill_->close();
    std::error_code ignored;
    if (acceptor_) acceptor_->close(ignored);
    acceptor_.reset();
    if (tcp_acceptor_) tcp_acceptor_->close(ignored);
    tcp_acceptor_.reset();
    fs::remove_all(harness_dir_, ignored);
  }

  const Plan& plan_;
  const em::Scenario& scenario_;
  const em::TestbedState& testbed_;
  const RunOptions& options_;
  LinkGate gate_;
  std::string harness_dir_;
  std::string control_dir_;
  std::unique_ptr<WorkerRuntime> runtime_;
  std::vector<WorkerState> workers_;
  std::vector<Failure> failures_;
  Notifier changed_;
  bool stopping_ = false;
  int lost_pending_ = 0;  // connections lost whose worker's exit status is awaited
  int current_iteration_ = -1;
  std::int64_t iteration_start_ns_ = 0;  // the running iteration's start (CLOCK_MONOTONIC)
  std::optional<std::chrono::seconds> iteration_timeout_;
  std::int64_t origin_ns_ = 0;
  IterationReports reports_;
  RunRecord record_;
  std::exception_ptr main_error_;
  std::optional<PrefillService> prefill_;  // with [prefill] enabled
  std::string control_address_;            // what workers are told to connect to
  std::optional<RunSecret> secret_;        // workers on other machines prove they hold it
  // Last: destroyed first, with the coroutines it still holds.
  asio::io_context io_{1};
  std::optional<asio::local::stream_protocol::acceptor> acceptor_;
  std::optional<asio::ip::tcp::acceptor> tcp_acceptor_;
};

}  // namespace

RunRecord run_plan(const Plan& plan, const emulator::Scenario& scenario, const emulator::TestbedState& testbed,
                   const RunOptions& options) {
  // Before any worker starts: the events of an oversized run would not fit.
  check_emulated_run(plan, plan.experiment.iterations);
  base::InterruptGuard interrupts;
  run_detail::HealthProbe health(testbed, scenario, options.idle_poll);
  Coordinator coordinator(plan, scenario, testbed, options);
  RunRecord record = coordinator.run();
  health.finish(record.emulation ? *record.emulation : record.emulation.emplace());
  // The same plan as the simulator runs it: its transfers for results.json,
  // and its iterations, against which the run's slowdown is attributed.
  // It starts where the run began in the testbed's timeline (its schedules
  // and [[event]]s run from `up`), so that a changing WAN is the same one.
  Plan timed = plan;
  if (emulator::has_timeline(scenario) && coordinator.origin_ns() > 0)
    timed.experiment.wan_start_ns = static_cast<std::uint64_t>(
        std::max<std::int64_t>(0, coordinator.origin_ns() - static_cast<std::int64_t>(testbed.created_mono_ns)));
  RunRecord planned =
      simulate_training(timed, scenario, link_model_for(scenario, plan.experiment.scale), plan.experiment.iterations);
  try {
    record.slowdown = attribute_slowdown(record, planned);
  } catch (const std::invalid_argument& error) {
    // A record the walk cannot follow gets no slowdown rather than no results.
    if (options.log) options.log(fmt::format("no slowdown against the plan: {}", error.what()));
  }
  record.simulated_transfers = std::move(planned.transfers);
  return record;
}

}  // namespace wanlab::harness
