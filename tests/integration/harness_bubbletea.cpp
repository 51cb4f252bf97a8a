// BubbleTea in a real run: an emulated two-DC WAN (40 ms one way), training
// workers, one prefill worker per worker borrowing its GPU and a decode sink
// in the decode DC, all real processes in podman containers, the KV caches over the
// emulated WAN. Prefill only ever holds a GPU where training does not, the
// iteration time stays that of training alone, and a prefill worker killed
// mid-run fails its requests only, leaving nothing behind.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "worker/gpu_lease.hpp"
#include "support/two_dc.hpp"
#include "support/wanlab_cli.hpp"
#include "wanlab/harness/run/gpu.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/run/run.hpp"
#include "wanlab/emulator/netns.hpp"

using namespace wanlab;
using namespace std::chrono_literals;
namespace hs = wanlab::harness;
namespace em = wanlab::emulator;
namespace fs = std::filesystem;

namespace {

const std::string kScenario = test::two_dc_scenario("hbt");

// Atlas, 2 stages x 2 replicas (the workers of a stage share a host), small and quick.
// The tests run it at scale 1 (see run()).
std::string experiment_text(const std::string& scenario_path, int iterations) {
  return R"(name = "bubbletea-itest"
testbed = ")" +
         scenario_path + R"("
schedule = "atlas"
iterations = )" +
         std::to_string(iterations) + R"(
[model]
layers = 4
hidden = 512
seq_len = 512
microbatches = 4
[parallel]
pp = 2
dp = 2
[compute]
forward_ms = 10
backward_ms = 20
[gpus]
east = 2
west = 2

# BubbleTea: a small served model (8 layers, KV 2 KiB per token) whose
# prefill takes milliseconds, so that it fits the pipeline's bubbles, and
# 40 requests a second.
[prefill]
enabled = true
arrivals = { rate = "40/s", prompt_median = 200, prompt_p90 = 600, seed = 3 }
decode_dc = "west"
ttft_slo = "3s"
max_batch_tokens = 1024
guard = "5ms"
[prefill.model]
layers = 8
hidden = 1024
kv_heads = 1
head_dim = 64
bytes_per_value = 2
[prefill.time]
tokens = [128, 512, 1024, 2048]
ms = [3, 8, 14, 27]
)";
}

struct Files {
  explicit Files(int iterations)
      : scenario("hbt", kScenario), experiment("bubbletea-itest", experiment_text(scenario.path(), iterations)) {}
  test::ScenarioFile scenario;
  test::ScenarioFile experiment;
};

// Processes of ours for testbed `name` (argv[0] is the container's
// /usr/bin/wanlab): "worker 3", "prefill-worker 1", "decode-sink", by pid.
std::map<pid_t, std::string> our_processes(const std::string& name) {
  std::map<pid_t, std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    if (argv.size() < 4 || argv[0] != hs::kWorkerExe || argv[3].find("/run/wanlab/" + name + "/") != 0) continue;
    found[std::stoi(pid)] = argv[1] + (argv.size() >= 6 ? " " + argv[5] : "");
  }
  return found;
}

// The worker whose prefill worker holds its GPU now (its lease says so), or -1
// after 20 s of looking.
int holding_prefill_worker(const std::string& name) {
  const std::string control = "/run/wanlab/" + name + "/harness/control/";
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    for (int worker = 0; worker < 4; ++worker) {
      try {
        const auto lease = hs::run_detail::GpuLease::open(control + "gpu-" + std::to_string(worker) + ".lease");
        if (lease.last_owner() == hs::run_detail::GpuOwner::prefill &&
            lease.busy_until_ns() > hs::monotonic_ns() + 1'000'000)
          return worker;
      } catch (const std::exception&) {
      }
    }
    std::this_thread::sleep_for(1ms);
  }
  return -1;
}

std::string leftovers(const std::string& name) {
  std::string found = test::leftovers(name);
  for (const auto& [pid, what] : our_processes(name)) found += " " + what + "(pid " + std::to_string(pid) + ")";
  return found + test::container_leftovers(name);
}

struct Run {
  hs::RunRecord record;
  double mean_iteration_s = 0;
  double training_utilization = 0;
  double utilization_with_prefill = 0;
};

bool is_compute(const hs::Event& e) { return e.kind == hs::OpKind::forward || e.kind == hs::OpKind::backward; }

// Busy over wall of every GPU, the iterations after the first, like results.json.
Run measure(hs::RunRecord record) {
  Run run;
  const auto iterations = hs::summarize(record);
  run.mean_iteration_s = hs::summarize_run(iterations).mean_iteration_s;
  const std::int64_t from = record.iteration_start_ns.at(1), to = record.iteration_end_ns.back();
  const auto inside = [&](std::int64_t start, std::int64_t end) {
    return static_cast<double>(std::max<std::int64_t>(0, std::min(end, to) - std::max(start, from)));
  };
  double training = 0, prefill = 0;
  for (const auto& e : record.events)
    if (is_compute(e) && e.iteration >= 1) training += inside(e.start_ns, e.end_ns);
  if (record.prefill)
    for (const auto& s : record.prefill->spans) prefill += inside(s.start_ns, s.end_ns);
  double wall = 0;
  for (std::size_t i = 1; i < record.iteration_start_ns.size(); ++i)
    wall += static_cast<double>(record.iteration_end_ns[i] - record.iteration_start_ns[i]);
  const double gpus = static_cast<double>(record.plan.workers.size());
  run.training_utilization = training / (wall * gpus);
  run.utilization_with_prefill = (training + prefill) / (wall * gpus);
  run.record = std::move(record);
  return run;
}

// A testbed brought up through the CLI (the daemon is the wanlab binary's),
// always taken down.
struct CliTestbed {
  CliTestbed(const std::string& scenario_path, std::string testbed) : name(std::move(testbed)) {
    const auto up = test::wanlab({"up", scenario_path, "--name", name, "--quiet"});
    BOOST_TEST_REQUIRE(up.status == 0, up.output);
  }
  ~CliTestbed() { test::wanlab({"down", name}); }
  std::string name;
};

std::string testbed_name() { return "hbt-" + std::to_string(::getpid() % 100000); }

// Bytes through the loopback of every host of `state` so far (/proc/net/dev
// of each host's namespace: lo's receive count, which is its send count).
std::uint64_t loopback_bytes(const em::TestbedState& state) {
  std::uint64_t total = 0;
  for (const em::Host& host : state.hosts) {
    const em::NetnsScope in(host.netns);
    std::ifstream dev("/proc/thread-self/net/dev");
    for (std::string line; std::getline(dev, line);) {
      const auto name = line.find_first_not_of(' ');
      if (name != std::string::npos && line.compare(name, 3, "lo:") == 0) total += std::stoull(line.substr(name + 3));
    }
  }
  return total;
}

struct RunChoices {
  bool prefill = true;
  std::string decode_dc;  // empty: the experiment's
  std::optional<double> intra_host_bps;
  std::uint64_t* loopback_bytes = nullptr;  // when given: through the hosts' loopback during the run
};

// The coordinator in this process (run_plan) on a testbed of the CLI's, at
// scale 1 so that the testbed is the scenario as written.
hs::RunRecord run(const Files& files, const RunChoices& choices, const hs::RunOptions& options) {
  hs::Experiment experiment = hs::load_experiment(files.experiment.path());
  experiment.scale = 1;
  if (!choices.prefill) hs::apply_override(experiment, "prefill", "off");
  if (!choices.decode_dc.empty()) experiment.prefill.decode_dc = choices.decode_dc;
  if (choices.intra_host_bps) experiment.prefill.intra_host_bps = *choices.intra_host_bps;
  const em::Scenario scenario = hs::load_testbed(experiment);
  const hs::Plan plan = hs::make_plan(experiment, scenario);
  CliTestbed testbed(files.scenario.path(), testbed_name());
  const em::TestbedState state = em::load_state(testbed.name);
  const std::uint64_t loopback_before = choices.loopback_bytes ? loopback_bytes(state) : 0;
  hs::RunRecord record = hs::run_plan(plan, scenario, state, options);
  if (choices.loopback_bytes) *choices.loopback_bytes = loopback_bytes(state) - loopback_before;
  BOOST_TEST(!fs::exists("/run/wanlab/" + testbed.name + "/harness"));
  BOOST_TEST(record.runtime == "podman", "workers ran in " << record.runtime << ": " << record.runtime_detail);
  return record;
}

hs::RunOptions options(std::function<void(const hs::Progress&)> progress = {}) {
  hs::RunOptions options;
  options.exe = test::wanlab_bin();
  options.log = [](const std::string& line) { std::cout << "  " << line << "\n"; };
  options.progress = std::move(progress);
  return options;
}

std::int64_t percentile_50(std::vector<std::int64_t> values) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

BOOST_AUTO_TEST_CASE(prefill_fills_bubbles_without_slowing_training) {
  Files files(4);  // the means skip the first iteration: 3 measured
  RunChoices prefill_off;
  prefill_off.prefill = false;
  const Run training = measure(run(files, prefill_off, options()));
  const Run bubbletea = measure(run(files, {}, options([](const hs::Progress& p) {
                                      std::cout << "  progress: iteration " << p.iteration + 1 << ", utilization "
                                                << p.utilization_so_far << ", with prefill "
                                                << p.utilization_with_prefill_so_far.value_or(-1) << ", served "
                                                << p.requests_served << ", waiting " << p.requests_waiting
                                                << ", rejected " << p.requests_rejected << "\n";
                                    })));
  BOOST_TEST(test::eventually([&] { return leftovers(testbed_name()).empty(); }), leftovers(testbed_name()));
  BOOST_TEST_REQUIRE(bubbletea.record.prefill.has_value());
  const hs::PrefillRecord& prefill = *bubbletea.record.prefill;

  // Every prefill span lies in a training-idle interval of its GPU.
  BOOST_TEST(!prefill.spans.empty());
  for (const auto& s : prefill.spans) {
    BOOST_TEST(s.end_ns > s.start_ns);
    for (const auto& e : bubbletea.record.events)
      if (is_compute(e) && e.worker == s.worker)
        BOOST_TEST((e.end_ns <= s.start_ns || e.start_ns >= s.end_ns),
                   "prefill of batch " << s.batch << " on worker " << s.worker << " [" << s.start_ns << ", " << s.end_ns
                                       << ") overlaps training op " << e.op_index << " of iteration " << e.iteration);
  }

  // Requests: every one accounted for; the served ones have their first token after arrival.
  std::vector<std::int64_t> ttft;
  int served = 0, rejected = 0, failed = 0, unfinished = 0;
  for (const auto& r : prefill.requests) {
    if (r.state == hs::RequestState::served) {
      ++served;
      BOOST_TEST(r.first_token_ns > r.arrival_ns, "request " << r.id);
      ttft.push_back(r.first_token_ns - r.arrival_ns);
    }
    rejected += r.state == hs::RequestState::rejected;
    failed += r.state == hs::RequestState::failed;
    unfinished += r.state == hs::RequestState::unfinished;
  }
  std::uint64_t kv_bytes = 0;
  for (const auto& kv : prefill.kv) {
    BOOST_TEST(kv.end_ns >= kv.start_ns);
    if (!kv.link.empty()) BOOST_TEST(kv.link == "east->west");
    kv_bytes += kv.bytes;
  }
  std::int64_t delay = 0;
  for (const auto d : prefill.training_delay_ns) delay += d;
  std::cout << "  training alone: " << training.mean_iteration_s << " s per iteration, utilization "
            << training.training_utilization << "\n  with BubbleTea: " << bubbletea.mean_iteration_s
            << " s per iteration, utilization " << bubbletea.training_utilization << " training, "
            << bubbletea.utilization_with_prefill << " with prefill\n"
            << "  requests " << prefill.requests.size() << ": served " << served << ", rejected " << rejected
            << ", failed " << failed << ", unfinished " << unfinished << "; TTFT p50 " << percentile_50(ttft) / 1e6
            << " ms; " << prefill.spans.size() << " prefill spans, " << prefill.kv.size() << " KV transfers, "
            << kv_bytes << " KV bytes; training delayed " << delay / 1e6 << " ms in all\n";
  for (const auto& note : prefill.notes) std::cout << "  note: " << note << "\n";
  BOOST_TEST(served > 0);
  BOOST_TEST(prefill.requests.size() > 10u);
  BOOST_TEST(bubbletea.utilization_with_prefill > bubbletea.training_utilization);
  BOOST_TEST(bubbletea.utilization_with_prefill > training.training_utilization);
  // CI-safe: the runs differ by timer and scheduling noise on a loaded machine
  // (measured -3% to +13% on two cores, where the KV bytes also pass the
  // userspace NFQUEUE releaser); the delay bound below is the precise claim.
  BOOST_TEST(bubbletea.mean_iteration_s < 1.25 * training.mean_iteration_s);
  BOOST_TEST(bubbletea.mean_iteration_s > 0.75 * training.mean_iteration_s);
  // Prefill only takes a GPU that is free: training waits only when a bubble
  // ended earlier than predicted. Measured here: 7 to 53 ms over 3 or 4 iterations
  // of 4 workers, under 1% of their time; a loaded machine's timers wander more.
  const double worker_iterations =
      static_cast<double>(bubbletea.record.plan.workers.size() * bubbletea.record.iteration_end_ns.size());
  BOOST_TEST(static_cast<double>(delay) / 1e9 / worker_iterations < 0.02 * bubbletea.mean_iteration_s);
  BOOST_TEST(!prefill.prediction.empty());
}

// decode_dc = "local": a decode sink in each DC that trains (east and west),
// each receiving the caches of its own DC's workers, none over the WAN. The
// caches of workers on a sink's own host go to the decode GPUs over NVLink:
// timed at intra_host_rate (here 1 Gbit/s, so that a cache of 0.4-2 MB
// takes 3-16 ms), their bytes not sent through the host's loopback.
BOOST_AUTO_TEST_CASE(local_decode_serves_from_a_sink_in_every_training_dc) {
  Files files(3);
  constexpr double kIntraHostBps = 1e9;
  std::uint64_t loopback = 0;
  RunChoices choices;
  choices.decode_dc = "local";
  choices.intra_host_bps = kIntraHostBps;
  choices.loopback_bytes = &loopback;
  const hs::RunRecord record = run(files, choices, options());
  BOOST_TEST(test::eventually([&] { return leftovers(testbed_name()).empty(); }), leftovers(testbed_name()));
  BOOST_TEST_REQUIRE(record.prefill.has_value());
  std::set<std::string> dcs_served;
  std::uint64_t on_host_bytes = 0;
  int on_host = 0;
  for (const auto& kv : record.prefill->kv) {
    BOOST_TEST(kv.link.empty(), "batch " << kv.batch << " crossed " << kv.link);
    const hs::Worker& worker = record.plan.workers.at(static_cast<std::size_t>(kv.worker)).worker;
    dcs_served.insert(worker.dc_name);
    if (worker.host != worker.dc_name + "-0") continue;
    // From its first byte's turn to its arrival: the NVLink's time, and not
    // much more (a timer's and a header's delay on a loaded machine).
    const auto wire_ns = static_cast<std::int64_t>(static_cast<double>(kv.bytes) * 8e9 / kIntraHostBps);
    const std::int64_t took_ns = kv.end_ns - kv.start_ns;
    BOOST_TEST(took_ns >= wire_ns, "batch " << kv.batch << ": " << took_ns << " ns for " << kv.bytes << " bytes");
    BOOST_TEST(took_ns <= wire_ns + 50'000'000, "batch " << kv.batch << ": " << took_ns << " ns, timed " << wire_ns);
    on_host_bytes += kv.bytes;
    ++on_host;
  }
  int served = 0;
  for (const auto& r : record.prefill->requests) served += r.state == hs::RequestState::served;
  std::cout << "  local decode: " << served << " requests served, KV caches from " << dcs_served.size() << " DCs, "
            << on_host << " (" << on_host_bytes << " B) timed on a sink's host; " << loopback
            << " B through the hosts' loopback\n";
  BOOST_TEST(served > 0);
  BOOST_TEST(dcs_served == (std::set<std::string>{"east", "west"}));
  BOOST_TEST_REQUIRE(on_host > 0);
  // Training's messages between workers of one host and each KV cache's
  // header cross the loopback; the caches' bytes do not.
  BOOST_TEST(loopback < on_host_bytes / 4, loopback << " B through loopback, " << on_host_bytes << " B of caches");
}

BOOST_AUTO_TEST_CASE(a_killed_prefill_worker_fails_its_requests_only) {
  Files files(8);
  const std::string name = testbed_name();
  std::atomic<int> finished{-1};
  hs::RunRecord record;
  std::string error;
  std::thread runner([&] {
    try {
      record = run(files, {}, options([&](const hs::Progress& p) { finished = p.iteration; }));
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  BOOST_TEST(test::eventually([&] { return finished >= 1; }, 90s));
  // The victim: a prefill worker while it holds its GPU, so that a batch of its own is unfinished.
  const int worker = holding_prefill_worker(name);
  BOOST_TEST_REQUIRE(worker >= 0);
  pid_t victim = 0;
  for (const auto& [pid, what] : our_processes(name))
    if (what == "prefill-worker " + std::to_string(worker)) victim = pid;
  BOOST_TEST(victim > 0);
  if (victim > 0) ::kill(victim, SIGKILL);
  const std::string who = "prefill worker " + std::to_string(worker);
  runner.join();
  BOOST_TEST_REQUIRE(error.empty(), error);
  BOOST_TEST(record.iteration_end_ns.size() == 8u);
  BOOST_TEST(test::eventually([&] { return leftovers(name).empty(); }), leftovers(name));
  BOOST_TEST_REQUIRE(record.prefill.has_value());
  const auto& prefill = *record.prefill;
  for (const auto& note : prefill.notes) std::cout << "  note: " << note << "\n";
  std::string note;
  for (const auto& n : prefill.notes)
    if (n.find(who) != std::string::npos) note = n;
  BOOST_TEST(note.find("killed by signal 9") != std::string::npos, note);
  // Its requests failed with the reason; the other workers served requests to the end.
  int failed_by_kill = 0, served_late = 0;
  const std::int64_t late = record.iteration_start_ns.at(5);
  for (const auto& r : prefill.requests) {
    if (r.state == hs::RequestState::failed && r.reason.find(who) != std::string::npos) ++failed_by_kill;
    if (r.state == hs::RequestState::served && r.arrival_ns > late) ++served_late;
  }
  std::cout << "  " << failed_by_kill << " requests failed with " << who << ", " << served_late
            << " served after iteration 5\n";
  BOOST_TEST(failed_by_kill > 0);
  BOOST_TEST(served_late > 0);
  for (const auto& s : prefill.spans)
    if (s.worker == worker)
      BOOST_TEST(s.start_ns < late, "worker " << worker << "'s GPU was used after its prefill worker died");
}

BOOST_AUTO_TEST_CASE(a_killed_training_worker_still_ends_the_run_and_its_prefill_processes) {
  Files files(200);
  const std::string name = testbed_name();
  std::atomic<int> finished{-1};
  std::string error;
  std::thread runner([&] {
    try {
      run(files, {}, options([&](const hs::Progress& p) { finished = p.iteration; }));
    } catch (const hs::RunError& e) {
      error = e.what();
    }
  });
  BOOST_TEST(test::eventually([&] { return finished >= 1; }, 90s));
  const auto processes = our_processes(name);
  BOOST_TEST(processes.size() == 9u);  // 4 workers, 4 prefill workers, the sink
  for (const auto& [pid, what] : processes)
    if (what == "worker 2") ::kill(pid, SIGKILL);
  runner.join();
  BOOST_TEST(error.find("worker 2") != std::string::npos, error);
  BOOST_TEST(error.find("signal 9") != std::string::npos, error);
  BOOST_TEST(test::eventually([&] { return leftovers(name).empty(); }), leftovers(name));
}
