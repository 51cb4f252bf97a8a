// The coordinator against workers played by the test over its real control
// socket (runtime "external": it starts nothing): a full run with temporal
// sharing, and every way a worker can go wrong ends the run with an error
// that names the worker, promptly. Needs to write under /run/wanlab (root).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <thread>

#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/harness/run/control.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/run/run.hpp"

namespace hs = wanlab::harness;
namespace ctl = wanlab::harness::control;
namespace em = wanlab::emulator;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const char* kScenario = R"(
name = "ut"
[[dc]]
name = "east"
[[dc]]
name = "west"
[[link]]
between = ["east", "west"]
delay = "10ms"
)";

const char* kExperiment = R"(
name = "coordinator-test"
testbed = "ut.toml"
schedule = "atlas"
iterations = 2
[model]
layers = 2
hidden = 64
seq_len = 64
microbatches = 2
[parallel]
pp = 2
[compute]
forward_ms = 1
backward_ms = 2
[gpus]
east = 1
west = 1
)";

// A worker played by the test: a blocking client of the control socket.
class FakeWorker {
 public:
  FakeWorker(const std::string& socket_path, int id) : id_(id) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    socket_path.copy(address.sun_path, sizeof(address.sun_path) - 1);
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) break;
      std::this_thread::sleep_for(50ms);
    }
    timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~FakeWorker() { ::close(fd_); }

  void send(const ctl::Message& message) { send_bytes(ctl::encode(message)); }
  void send_bytes(const std::vector<std::byte>& bytes) { (void)!::write(fd_, bytes.data(), bytes.size()); }

  // The next message; nullopt at EOF or after 10 s.
  std::optional<ctl::Message> receive() {
    for (;;) {
      if (auto message = frames_.next()) return message;
      std::byte buffer[4096];
      const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
      if (n <= 0) return std::nullopt;
      frames_.feed(std::span<const std::byte>(buffer, static_cast<std::size_t>(n)));
    }
  }

  template <typename T>
  T expect() {
    auto message = receive();
    BOOST_TEST_REQUIRE(message.has_value(), "worker " << id_ << ": no message");
    BOOST_TEST_REQUIRE(std::holds_alternative<T>(*message), "worker " << id_ << ": got " << ctl::type_name(*message));
    return std::get<T>(*message);
  }

  // Runs the ops of one iteration as a worker would report them, asking the
  // gate for each gated send.
  ctl::Report play_iteration(int iteration, const hs::WorkerPlan& plan) {
    ctl::Report report;
    report.iteration = iteration;
    for (std::size_t i = 0; i < plan.ops.size(); ++i) {
      const hs::Op& op = plan.ops[i];
      if (op.kind == hs::OpKind::send && op.cross_dc && op.link_slot >= 0) {
        send(ctl::GateRequest{iteration, static_cast<int>(i)});
        const auto grant = expect<ctl::GateGrant>();
        BOOST_TEST(grant.op_index == static_cast<int>(i));
        granted.push_back(op.link_slot);
        send(ctl::GateRelease{iteration, static_cast<int>(i)});
      }
      hs::Event e;
      e.worker = id_;
      e.iteration = iteration;
      e.op_index = static_cast<int>(i);
      e.kind = op.kind;
      e.microbatch = op.microbatch;
      e.peer = op.peer;
      e.bytes = op.bytes;
      e.start_ns = hs::monotonic_ns();
      e.end_ns = e.start_ns + 1000;
      e.cross_dc = op.cross_dc;
      report.events.push_back(e);
      // What a cross-DC send's channel saw: queued 1 us before, two streams.
      if (op.kind == hs::OpKind::send && op.cross_dc)
        report.sends.push_back(ctl::SendRecord{
            e.op_index, e.start_ns - 1000, e.start_ns, e.end_ns, {{0, op.bytes - 1, 10, 20'000}, {1, 1, 12, 21'000}}});
    }
    return report;
  }

  std::vector<int> granted;  // link slots in the order the gate granted them

 private:
  int id_;
  int fd_ = -1;
  ctl::FrameReader frames_;
};

struct Fixture {
  Fixture() : name("ut" + std::to_string(::getpid() % 100000)) {
    scenario = em::parse_scenario(kScenario, "ut.toml");
    plan = hs::make_plan(hs::parse_experiment(kExperiment, "experiment.toml"), scenario);
    testbed.name = name;
    for (const auto& host : {"east-0", "west-0"}) {
      em::Host h;
      h.name = host;
      h.ipv4 = 0x7f000001;
      testbed.hosts.push_back(h);
    }
    options.runtime = hs::RuntimeChoice::external;
    options.startup_timeout = 10s;
    options.iteration_timeout = 10s;
  }
  ~Fixture() { fs::remove_all(em::run_dir(name)); }

  std::string socket_path() const { return em::run_dir(name) + "/harness/control/control.sock"; }

  // run_plan in a thread; the error message, or "" if it finished.
  std::future<std::string> start() {
    return std::async(std::launch::async, [this] {
      try {
        record = hs::run_plan(plan, scenario, testbed, options);
      } catch (const hs::RunError& error) {
        return std::string(error.what());
      }
      return std::string();
    });
  }

  // Both workers connected and given their plans.
  std::vector<std::unique_ptr<FakeWorker>> connect_both() {
    std::vector<std::unique_ptr<FakeWorker>> workers;
    for (int id = 0; id < 2; ++id) {
      workers.push_back(std::make_unique<FakeWorker>(socket_path(), id));
      workers.back()->send(ctl::Hello{id, 1});
    }
    for (int id = 0; id < 2; ++id) BOOST_TEST(workers[id]->expect<ctl::Assign>().plan.worker.id == id);
    return workers;
  }

  // Both workers listening, told to connect, and ready.
  static void ready_both(std::vector<std::unique_ptr<FakeWorker>>& workers) {
    for (auto& w : workers) w->send(ctl::Listening{});
    for (auto& w : workers) w->expect<ctl::Connect>();
    for (auto& w : workers) w->send(ctl::Ready{});
  }

  // Both workers ready and worker 0 started: its first report, played, not yet sent.
  ctl::Report first_report(std::vector<std::unique_ptr<FakeWorker>>& workers) {
    ready_both(workers);
    workers[0]->expect<ctl::Start>();
    return workers[0]->play_iteration(0, plan.workers[0]);
  }

  std::string name;
  em::Scenario scenario;
  hs::Plan plan;
  em::TestbedState testbed;
  hs::RunOptions options;
  hs::RunRecord record;
  std::vector<hs::Event> record_of_sends_;  // worker 0's sends of the iteration being played
};

// The coordinator's run directory is under /run/wanlab: root only. Without
// root the test fails with that reason rather than passing untested.
void require_root() { BOOST_TEST_REQUIRE(::geteuid() == 0, "needs root to write under /run/wanlab"); }

std::string finish(std::future<std::string>& run, std::chrono::seconds within = 15s) {
  if (run.wait_for(within) != std::future_status::ready) return "(run_plan did not return in time)";
  return run.get();
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_run_with_well_behaved_workers_records_their_events, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  ready_both(workers);
  for (int iteration = 0; iteration < 2; ++iteration) {
    for (int id = 0; id < 2; ++id) {
      BOOST_TEST(workers[id]->expect<ctl::Start>().iteration == iteration);
      auto report = workers[id]->play_iteration(iteration, plan.workers[id]);
      // Worker 1 says when worker 0's messages arrived: from 1 ms to 5 ms after they were sent.
      if (id == 1)
        for (const auto& e : record_of_sends_)
          report.arrivals.push_back(ctl::Arrival{0, e.op_index, e.start_ns + 5'000'000, e.start_ns + 1'000'000});
      record_of_sends_.clear();
      if (id == 0)
        for (const auto& e : report.events)
          if (e.kind == hs::OpKind::send) record_of_sends_.push_back(e);
      workers[id]->send(report);
    }
  }
  for (auto& w : workers) w->expect<ctl::Stop>();
  workers.clear();  // the workers exit
  BOOST_TEST(finish(run) == "");
  BOOST_TEST(record.runtime == "external");
  BOOST_REQUIRE(record.iteration_start_ns.size() == 2u);
  std::size_t ops = plan.workers[0].ops.size() + plan.workers[1].ops.size();
  BOOST_TEST(record.events.size() == 2 * ops);
  // Sends end when they arrived (the receiver's word), times from the run's origin.
  for (const auto& e : record.events) {
    if (e.worker == 0 && e.kind == hs::OpKind::send) BOOST_TEST(e.end_ns - e.start_ns == 5'000'000);
    BOOST_TEST(e.start_ns >= 0);
    BOOST_TEST(e.start_ns < 60'000'000'000);
  }
  // Worker 0's cross-DC messages, both ends on the run's clock, with their
  // streams. (Worker 1's: their receiver reported no arrival, so no record.)
  std::size_t sends = 0;
  for (const auto& e : record.events) sends += e.worker == 0 && e.kind == hs::OpKind::send && e.cross_dc ? 1 : 0;
  BOOST_TEST(sends > 0u);
  BOOST_REQUIRE(record.transfers.size() == sends);
  for (const auto& t : record.transfers) {
    BOOST_TEST(t.worker == 0);
    BOOST_TEST(t.peer == 1);
    BOOST_TEST(t.first_sent_ns - t.queued_ns == 1000);
    BOOST_TEST(t.first_received_ns - t.first_sent_ns == 1'000'000);
    BOOST_TEST(t.last_received_ns - t.first_sent_ns == 5'000'000);
    BOOST_TEST(t.queued_ns >= 0);
    BOOST_REQUIRE(t.streams.size() == 2u);
    BOOST_TEST(t.streams[1].cwnd == 12u);
    BOOST_TEST(t.streams[0].bytes + t.streams[1].bytes == t.bytes);
  }
  // The simulator's transfers of the same plan, beside them.
  BOOST_TEST(record.simulated_transfers.size() == 2 * 2 * plan.experiment.model.microbatches);
  BOOST_TEST(!fs::exists(em::run_dir(name) + "/harness"));
}

BOOST_FIXTURE_TEST_CASE(gated_sends_are_granted_in_slot_order, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  ready_both(workers);
  for (int iteration = 0; iteration < 2; ++iteration)
    for (int id = 0; id < 2; ++id) {
      workers[id]->expect<ctl::Start>();
      workers[id]->send(workers[id]->play_iteration(iteration, plan.workers[id]));
    }
  for (auto& w : workers) w->expect<ctl::Stop>();
  workers[0]->granted.insert(workers[0]->granted.end(), workers[1]->granted.begin(), workers[1]->granted.end());
  const auto granted = workers[0]->granted;
  workers.clear();
  BOOST_TEST(finish(run) == "");
  // Each worker's sends on its link, slots 0 and 1, once per iteration.
  BOOST_TEST(granted == (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}), boost::test_tools::per_element());
}

BOOST_FIXTURE_TEST_CASE(a_malformed_frame_is_an_error_naming_the_worker, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  workers[0]->send(ctl::Listening{});
  workers[1]->send_bytes({std::byte{1}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{77}});
  const std::string error = finish(run);
  BOOST_TEST(error.find("worker 1 (stage 1, replica 0, on west-0) failed") == 0u, error);
  BOOST_TEST(error.find("unknown type 77") != std::string::npos, error);
  BOOST_TEST(!fs::exists(em::run_dir(name) + "/harness"));
}

BOOST_FIXTURE_TEST_CASE(a_report_that_does_not_match_the_plan_is_refused, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  auto report = first_report(workers);
  report.events.pop_back();
  workers[0]->send(report);
  const std::string error = finish(run);
  BOOST_TEST(error.find("worker 0 (stage 0") == 0u, error);
  BOOST_TEST(error.find("events for") != std::string::npos, error);
}

// compute_done is BubbleTea's (a worker whose GPU prefill shares): in a run
// without prefill it is a protocol error like any message out of place.
BOOST_FIXTURE_TEST_CASE(a_compute_done_without_prefill_is_refused, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  ready_both(workers);
  workers[0]->expect<ctl::Start>();
  workers[0]->send(ctl::ComputeDone{0, 0, 1});
  const std::string error = finish(run);
  BOOST_TEST(error.find("worker 0 (stage 0") == 0u, error);
  BOOST_TEST(error.find("unexpected compute_done message: this run has no prefill") != std::string::npos, error);
}

BOOST_FIXTURE_TEST_CASE(send_records_that_do_not_match_the_plan_are_refused, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  auto report = first_report(workers);
  BOOST_REQUIRE(!report.sends.empty());
  report.sends.push_back(report.sends.front());  // one send recorded twice
  workers[0]->send(report);
  const std::string error = finish(run);
  BOOST_TEST(error.find("worker 0 (stage 0") == 0u, error);
  BOOST_TEST(error.find("send record for op " + std::to_string(report.sends.front().op_index) +
                        " does not match the plan's cross-DC sends") != std::string::npos,
             error);
}

BOOST_FIXTURE_TEST_CASE(a_worker_that_never_connects_times_out, Fixture) {
  require_root();
  options.startup_timeout = 2s;
  auto run = start();
  FakeWorker only(socket_path(), 0);
  only.send(ctl::Hello{0, 1});
  const auto started = std::chrono::steady_clock::now();
  const std::string error = finish(run);
  BOOST_TEST(error.find("timed out after 2 s waiting for workers to be connected: not yet 1") != std::string::npos,
             error);
  BOOST_TEST((std::chrono::steady_clock::now() - started < 10s));
}

BOOST_FIXTURE_TEST_CASE(a_worker_that_hangs_up_or_gives_up_ends_the_run, Fixture) {
  require_root();
  auto run = start();
  auto workers = connect_both();
  workers[0]->send(ctl::Failed{"listening on 10.77.0.2:47000: Address already in use"});
  workers[1].reset();  // hangs up without a word
  const std::string error = finish(run);
  BOOST_TEST(error.find("worker 0 (stage 0, replica 0, on east-0) failed: listening on") != std::string::npos, error);
  BOOST_TEST(
      error.find("worker 1 (stage 1, replica 0, on west-0) failed: closed its control connection") != std::string::npos,
      error);
}

BOOST_FIXTURE_TEST_CASE(a_stranger_on_the_control_socket_ends_the_run, Fixture) {
  require_root();
  auto run = start();
  FakeWorker stranger(socket_path(), 0);
  stranger.send(ctl::Hello{7, 1});
  const std::string error = finish(run);
  BOOST_TEST(error.find("hello from unknown or repeated worker 7") != std::string::npos, error);
}

// Before the run directory exists and any worker starts: a run whose events
// would go beyond kMaxRunSteps (16 steps per iteration here).
BOOST_FIXTURE_TEST_CASE(an_oversized_run_is_refused_before_any_worker_starts, Fixture) {
  plan.experiment.iterations = static_cast<int>(hs::kMaxRunSteps);
  std::string message = "(no error)";
  try {
    hs::run_plan(plan, scenario, testbed, options);
  } catch (const hs::ExperimentError& error) {
    message = error.what();
  }
  BOOST_TEST(message.find("experiment.toml: the run is too big: iterations 2000000 x 16 steps per iteration") == 0,
             message);
  BOOST_TEST(!fs::exists(em::run_dir(name)));
}
