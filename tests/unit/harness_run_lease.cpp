// One emulated GPU timeline across processes (GpuLease): a forked child maps
// the same file, and the two never hold the GPU at once; a prefill lease
// fails while training holds the GPU; training that waits for prefill says
// how long.
#include <sys/wait.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "worker/gpu_lease.hpp"
#include "wanlab/harness/run/gpu.hpp"

namespace fs = std::filesystem;
namespace rd = wanlab::harness::run_detail;
using wanlab::harness::monotonic_ns;

namespace {

struct LeaseFile {
  LeaseFile() : path(fs::temp_directory_path() / ("wanlab-test-lease-" + std::to_string(::getpid()))) {}
  ~LeaseFile() {
    fs::remove(path);
    fs::remove(path.string() + ".child");
  }
  fs::path path;
};

// Runs `body` in a forked child; returns its exit code (the child never returns).
template <typename Body>
pid_t fork_child(Body body) {
  const pid_t pid = ::fork();
  BOOST_TEST_REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  return pid;
}

int exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

using Intervals = std::vector<std::pair<std::int64_t, std::int64_t>>;

void spin_until(std::int64_t ns) {
  while (monotonic_ns() < ns) {
  }
}

// From `at_ns` on, `count` times: reserves a short interval (training) or
// tries to (prefill), holds it to its end and, training, leaves a short gap
// as a worker between two ops does.
Intervals hammer(rd::GpuLease& lease, std::int64_t at_ns, int count, bool prefill) {
  spin_until(at_ns);
  Intervals taken;
  for (int i = 0; i < count; ++i) {
    if (prefill) {
      if (const auto r = lease.try_lease(monotonic_ns(), 500)) {
        taken.emplace_back(r->start_ns, r->end_ns);
        spin_until(r->end_ns);
      }
    } else {
      const auto r = lease.reserve(monotonic_ns(), 700);
      taken.emplace_back(r.start_ns, r.end_ns);
      spin_until(r.end_ns + 1000);
    }
  }
  return taken;
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_processes_never_hold_the_gpu_at_once) {
  LeaseFile file;
  auto lease = rd::GpuLease::create(file.path.string());
  for (const bool child_prefills : {false, true}) {
    const std::int64_t at = monotonic_ns() + 100'000'000;
    const pid_t child = fork_child([&] {
      auto mine = rd::GpuLease::open(file.path.string());
      std::ofstream out(file.path.string() + ".child");
      for (const auto& [start, end] : hammer(mine, at, 20000, child_prefills)) out << start << ' ' << end << '\n';
      return out ? 0 : 1;
    });
    Intervals all = hammer(lease, at, 20000, false);
    BOOST_TEST_REQUIRE(exit_code(child) == 0);
    std::ifstream in(file.path.string() + ".child");
    std::size_t from_child = 0;
    for (std::int64_t start = 0, end = 0; in >> start >> end; ++from_child) all.emplace_back(start, end);
    BOOST_TEST(from_child > 0u);
    std::sort(all.begin(), all.end());
    std::size_t overlaps = 0;
    for (std::size_t i = 1; i < all.size(); ++i)
      if (all[i].first < all[i - 1].second) ++overlaps;
    BOOST_TEST(overlaps == 0u, overlaps << " overlapping reservations, child prefills: " << child_prefills);
  }
}

BOOST_AUTO_TEST_CASE(a_prefill_lease_fails_while_training_holds_the_gpu) {
  LeaseFile file;
  auto lease = rd::GpuLease::create(file.path.string());
  const auto held = lease.reserve(monotonic_ns(), 300'000'000);
  BOOST_TEST(held.delayed_ns == 0);
  BOOST_TEST((lease.last_owner() == rd::GpuOwner::training));
  const pid_t child = fork_child([&] {
    auto mine = rd::GpuLease::open(file.path.string());
    if (mine.try_lease(monotonic_ns(), 1'000'000)) return 1;  // training holds it
    while (monotonic_ns() < held.end_ns) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto got = mine.try_lease(monotonic_ns(), 1'000'000);
    return got && got->start_ns >= held.end_ns ? 0 : 2;
  });
  BOOST_TEST(exit_code(child) == 0);
  BOOST_TEST((lease.last_owner() == rd::GpuOwner::prefill));
}

BOOST_AUTO_TEST_CASE(training_that_waits_for_prefill_measures_the_delay) {
  LeaseFile file;
  auto lease = rd::GpuLease::create(file.path.string());
  int ready[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  const pid_t child = fork_child([&] {
    auto mine = rd::GpuLease::open(file.path.string());
    const auto got = mine.try_lease(monotonic_ns(), 200'000'000);
    const char byte = got ? 1 : 0;
    return ::write(ready[1], &byte, 1) == 1 && got ? 0 : 1;
  });
  char byte = 0;
  BOOST_TEST_REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::close(ready[0]);
  ::close(ready[1]);
  BOOST_TEST_REQUIRE(exit_code(child) == 0);
  const std::int64_t prefill_end = lease.busy_until_ns();

  // The emulated GPU's compute waits for the prefill's end, and says how long.
  wanlab::harness::EmulatedGpu gpu;
  gpu.share(&lease);
  asio::io_context io;
  wanlab::harness::EmulatedGpu::Interval interval;
  const std::int64_t asked = monotonic_ns();
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { interval = co_await gpu.compute(io.get_executor(), 5'000'000, "F0"); },
      asio::detached);
  io.run();
  BOOST_TEST(interval.start_ns == prefill_end);
  BOOST_TEST(interval.end_ns == prefill_end + 5'000'000);
  BOOST_TEST(monotonic_ns() >= interval.end_ns);
  BOOST_TEST(gpu.delayed_ns() > 0);
  BOOST_TEST(gpu.delayed_ns() <= prefill_end - asked);
  BOOST_TEST(gpu.delayed_ns() >= prefill_end - asked - 50'000'000);
  BOOST_TEST(lease.busy_until_ns() == interval.end_ns);
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_a_lease_is_refused_naming_it) {
  LeaseFile file;
  std::ofstream(file.path) << "not a lease";
  try {
    rd::GpuLease::open(file.path.string());
    BOOST_ERROR("a text file was taken for a lease");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()).find(file.path.string()) != std::string::npos);
    BOOST_TEST(std::string(error.what()).find("not a lease file") != std::string::npos);
  }
  try {
    rd::GpuLease::open(file.path.string() + ".missing");
    BOOST_ERROR("a missing file was opened");
  } catch (const std::system_error& error) {
    BOOST_TEST(std::string(error.what()).find("opening it") != std::string::npos);
  }
}

// A training compute's hold keeps prefill out of the gap before the worker's
// next op, which starts inside it at once; a hold that prefill found expired
// is gone. Times are given, not read from the clock.
BOOST_AUTO_TEST_CASE(a_hold_keeps_the_gap_before_the_next_training_op) {
  LeaseFile file;
  auto training = rd::GpuLease::create(file.path.string());
  auto prefill = rd::GpuLease::open(file.path.string());  // another mapping, as the prefill worker's

  const auto first = training.reserve(1000, 500, rd::GpuOwner::training, 200);  // [1000, 1500), held to 1700
  BOOST_TEST(first.end_ns == 1500);
  BOOST_TEST(training.busy_until_ns() == 1700);
  BOOST_TEST(!prefill.try_lease(1600, 10).has_value());  // inside the hold

  const auto next = training.reserve(1600, 100, rd::GpuOwner::training, 200);  // at once, inside its own hold
  BOOST_TEST(next.start_ns == 1600);
  BOOST_TEST(next.delayed_ns == 0);
  BOOST_TEST(training.busy_until_ns() == 1900);

  const auto early = training.reserve(1650, 50, rd::GpuOwner::training);  // never before its own work's end
  BOOST_TEST(early.start_ns == 1700);
  BOOST_TEST(early.delayed_ns == 50);

  // Without a hold prefill takes the GPU at its end; the next compute then waits for it.
  BOOST_TEST(training.busy_until_ns() == 1900);  // still the earlier hold
  BOOST_TEST(prefill.try_lease(1950, 30).has_value());
  const auto after = training.reserve(1960, 100);
  BOOST_TEST(after.start_ns == 1980);
  BOOST_TEST(after.delayed_ns == 20);
}
