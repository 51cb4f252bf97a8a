// The testbed's daemon: starting it (`up`, `attach`), recognising it (`down`,
// `status`) and its body (`wanlab daemon`).
#include "wanlab/emulator/daemon.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <utility>
#include <thread>
#include <mutex>
#include <condition_variable>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <net/if.h>
#include <functional>
#include <tuple>
#include <iterator>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/releaser.hpp"

namespace fs = std::filesystem;

namespace wanlab::emulator {
namespace detail {
namespace {

std::vector<std::string> daemon_argv(const std::string& exe, const std::string& testbed, int ready_fd) {
  return {exe, "daemon", "--testbed", testbed, "--ready-fd", std::to_string(ready_fd)};
}

// Everything until the other end closes.
std::string read_all(int fd) {
  std::string text;
  char buf[512];
  for (;;) {
    const ssize_t len = ::read(fd, buf, sizeof(buf));
    if (len < 0 && errno == EINTR) continue;
    if (len <= 0) return text;
    text.append(buf, static_cast<std::size_t>(len));
  }
}

}  // namespace

void start_daemon(TestbedState& state, const std::string& exe) {
  if (exe.empty()) throw std::logic_error(state.name + ": no binary to start the daemon from (UpOptions::exe)");
  base::Pipe ready = base::make_pipe(state.name + ": creating the daemon's ready pipe");
  const std::string log = run_dir(state.name) + "/daemon.log";
  base::UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!log_fd) base::throw_errno(state.name + ": opening " + log);
  base::SpawnOptions options;
  options.new_session = true;
  options.search_path = false;
  options.stdin_fd = base::kDevNull;
  options.stdout_fd = options.stderr_fd = log_fd.get();
  options.keep_fds = {ready.write.get()};
  base::Child daemon = base::spawn(daemon_argv(exe, state.name, ready.write.get()), options);
  ready.write.reset();
  // The daemon writes "ok" once its releaser listens, or an error line.
  std::string answer = read_all(ready.read.get());
  if (!answer.starts_with("ok")) {
    if (answer.empty()) answer = "it exited without a word; see " + log;
    throw std::runtime_error(state.name + ": daemon failed: " + answer);  // ~Child kills and reaps it
  }
  state.daemon_pid = daemon.release();
  write_state(state);
}

// Exactly "EXE daemon --testbed NAME ..." as start_daemon runs it: a word-for-word
// match, so testbed "a" never takes another testbed's daemon for its own.
bool pid_is_our_daemon(pid_t pid, const std::string& testbed) {
  if (pid <= 0) return false;
  std::string cmdline;
  try {
    cmdline = base::read_regular_file(fmt::format("/proc/{}/cmdline", pid), base::ReadRules{1u << 16, true});
  } catch (const std::exception&) {
    return false;
  }
  std::vector<std::string> argv;
  std::istringstream words(cmdline);
  for (std::string word; std::getline(words, word, '\0');) argv.push_back(word);
  return argv.size() >= 4 && argv[1] == "daemon" && argv[2] == "--testbed" && argv[3] == testbed;
}

std::vector<pid_t> daemons_of(const std::string& name) {
  std::vector<pid_t> found;
  const std::string exe = base::self_exe();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid_text = entry.path().filename();
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == ::getpid() || !pid_is_our_daemon(pid, name)) continue;
    std::error_code link_error;
    const std::string target = fs::read_symlink(entry.path() / "exe", link_error);
    // A binary rebuilt since `up` shows as "PATH (deleted)".
    if (!link_error && (target == exe || target == exe + " (deleted)")) found.push_back(pid);
  }
  return found;
}

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

// Answers `up`, once: "ok" or the error.
void tell(int& fd, const std::string& text) {
  if (fd < 0) return;
  [[maybe_unused]] auto written = ::write(fd, text.data(), text.size());
  ::close(fd);
  fd = -1;
}

// steady_clock counts signed nanoseconds: a later time is "never", not the past.
Clock::time_point at_mono(std::uint64_t ns) {
  if (ns > static_cast<std::uint64_t>(INT64_MAX)) return Clock::time_point::max();
  return Clock::time_point(std::chrono::nanoseconds(static_cast<std::int64_t>(ns)));
}

// The releaser is the emulated link: it must not wait behind the programs
// whose packets it releases.
void ask_for_real_time_priority() {
  sched_param priority{};
  priority.sched_priority = 10;
  if (::sched_setscheduler(0, SCHED_FIFO, &priority) < 0)
    fmt::print(stderr, "wanlab daemon: no real-time priority ({}); release times may suffer under load\n",
               std::strerror(errno));
}

// The DC behind each host's interface in the core namespace (this one), so
// that the releaser counts its verdicts per DC pair.
ReleaserPairs releaser_pairs(const TestbedState& state) {
  ReleaserPairs pairs;
  if (state.kind != TestbedKind::namespaces) return pairs;
  pairs.dcs = state.dcs;
  for (const Host& host : state.hosts)
    if (const unsigned ifindex = ::if_nametoindex(host.core_ifname.c_str()); ifindex != 0)
      pairs.dc_of_ifindex.emplace_back(ifindex, host.dc_index);
  return pairs;
}

// One timer per [[event]]; each rewrites the pairs from the scenario as it is by then.
std::vector<std::unique_ptr<asio::steady_timer>> schedule_events(asio::io_context& io, const TestbedState& state,
                                                                 const Scenario& scenario) {
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  for (const auto& event : scenario.events) {
    auto timer = std::make_unique<asio::steady_timer>(io, at_mono(event_due_mono_ns(state, event.at_ns)));
    timer->async_wait([&state, at = event.at_ns](const asio::error_code& ec) {
      if (ec) return;
      refresh_data_plane(state);
      fmt::print("event at +{} ms applied\n", at / 1'000'000);
      std::fflush(stdout);
    });
    timers.push_back(std::move(timer));
  }
  return timers;
}

}  // namespace

namespace {

// Writes releaser.toml on a thread of its own, the latest counters each time:
// on the releaser's loop a file system call holds every verdict as long as it
// takes, and a rename under /run/wanlab took 60 ms while a run's containers
// were up (perf trace of the daemon; the run's verdicts then left in blocks of
// hundreds, 10-50 ms late). A write that fails is said on stderr (daemon.log)
// and tried again with the next counters.
class StatsWriter {
 public:
  StatsWriter(std::string path, std::uint16_t queue_num)
      : path_(std::move(path)), queue_num_(queue_num), thread_([this] { write_latest(); }) {}
  StatsWriter(const StatsWriter&) = delete;
  StatsWriter& operator=(const StatsWriter&) = delete;
  ~StatsWriter() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  void publish(const ReleaserStats& stats) {
    {
      std::lock_guard lock(mutex_);
      latest_ = stats;
    }
    wake_.notify_one();
  }

 private:
  void write_latest() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || latest_.has_value(); });
      if (stopping_) return;
      ReleaserStats stats = *std::exchange(latest_, std::nullopt);
      lock.unlock();
      add_queue_drops(stats);
      try {
        write_releaser_stats(path_, stats);
      } catch (const std::exception& error) {
        fmt::print(stderr, "wanlab daemon: {}\n", error.what());
      }
      lock.lock();
    }
  }

  // The kernel's drops of our queue, as /proc/net (this process's namespace,
  // the testbed's) counts them; left at 0 if it cannot be read.
  void add_queue_drops(ReleaserStats& stats) const {
    std::ifstream file("/proc/net/netfilter/nfnetlink_queue");
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (const auto drops = nfqueue_drops(text, queue_num_)) std::tie(stats.queue_dropped, stats.user_dropped) = *drops;
  }

  std::string path_;
  std::uint16_t queue_num_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<ReleaserStats> latest_;  // guarded by mutex_
  bool stopping_ = false;                // guarded by mutex_
  std::thread thread_;                   // last: started once the rest is ready
};

}  // namespace

int run_daemon(const DaemonOptions& options) {
  int ready_fd = options.ready_fd;
  try {
    const TestbedState state = load_state(options.testbed);
    const Scenario scenario = load_scenario(state.scenario_path, ScheduleFiles::skip);
    NetnsScope in_namespace(state.netns);

    asio::io_context io;
    std::optional<NfqueueReleaser> releaser;
    if (state.release == ReleasePath::nfqueue) {
      ask_for_real_time_priority();
      releaser.emplace(io, state.queue_num, releaser_pairs(state));
      releaser->start();
    }
    const auto event_timers = schedule_events(io, state, scenario);

    std::optional<StatsWriter> stats_writer;
    if (releaser) stats_writer.emplace(releaser_stats_path(state.name), state.queue_num);
    asio::steady_timer stats_timer(io);
    std::function<void()> publish_stats = [&] {
      if (releaser) stats_writer->publish(releaser->stats());
      stats_timer.expires_after(std::chrono::seconds(1));
      stats_timer.async_wait([&](const asio::error_code& ec) {
        if (!ec) publish_stats();
      });
    };
    publish_stats();

    asio::signal_set stop(io, SIGTERM, SIGINT);
    stop.async_wait([&](const asio::error_code&, int) { io.stop(); });

    tell(ready_fd, "ok\n");
    io.run();
    return 0;
  } catch (const std::exception& error) {
    tell(ready_fd, error.what());
    fmt::print(stderr, "wanlab daemon: {}\n", error.what());
    return 1;
  }
}

bool daemon_alive(const TestbedState& state) { return detail::pid_is_our_daemon(state.daemon_pid, state.name); }

}  // namespace wanlab::emulator
