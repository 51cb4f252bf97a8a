// The wake-up benchmark: how late an emulated GPU op ends on this machine,
// waited out four ways, each on one Asio thread as a worker waits:
//   timer          an Asio timer at the op's end: the anchor
//   compute        EmulatedGpu::compute itself: the timer aimed a learned
//                  wake-up latency early (base::WakeLead), the rest spun
//   ..., idle-polled  the same two while base::IdlePollers spin in every
//                  CPU's idle time, as during a real run: a CPU that does not
//                  halt wakes its timers sooner
// (A timer slack of 1 ns was measured too, on 2026-11-28: no change, since
// Asio's timers are timerfds, which have no slack.)
// For each op length: lateness p50 / p99 / mean, the late time as a share of
// the op (what the emulation-health verdict sums against 1%), its ratio to
// the anchor's, and the thread's CPU as a share of the wall time.
// Run by bench/run-wake-bench.sh; no root, no network.
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/idle_poll.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/harness/run/gpu.hpp"

namespace {

using wanlab::base::monotonic_ns;

std::int64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Result {
  std::vector<std::int64_t> late_ns;  // sorted
  double cpu_share = 0;
  double late_share(std::int64_t op_ns) const {
    const double sum = std::accumulate(late_ns.begin(), late_ns.end(), 0.0);
    return sum / (static_cast<double>(op_ns) * static_cast<double>(late_ns.size()));
  }
  double us_at(double p) const {
    const auto at = static_cast<std::size_t>(p * static_cast<double>(late_ns.size() - 1) + 0.5);
    return static_cast<double>(late_ns[at]) / 1e3;
  }
};

// `ops` waits of `op_ns` back to back, each one op starting when the last ended.
Result wait_ops(bool through_gpu, std::int64_t op_ns, int ops) {
  asio::io_context io(1);
  Result result;
  const std::int64_t wall0 = monotonic_ns(), cpu0 = thread_cpu_ns();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        wanlab::harness::EmulatedGpu gpu;
        for (int op = 0; op < ops; ++op) {
          if (through_gpu) {
            const auto interval = co_await gpu.compute(io.get_executor(), static_cast<std::uint64_t>(op_ns), "F");
            result.late_ns.push_back(monotonic_ns() - interval.end_ns);
          } else {
            const std::int64_t end = monotonic_ns() + op_ns;
            asio::steady_timer timer(io, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(end)));
            co_await timer.async_wait(asio::use_awaitable);
            result.late_ns.push_back(monotonic_ns() - end);
          }
        }
      },
      asio::detached);
  io.run();
  result.cpu_share = static_cast<double>(thread_cpu_ns() - cpu0) / static_cast<double>(monotonic_ns() - wall0);
  std::sort(result.late_ns.begin(), result.late_ns.end());
  return result;
}

const wanlab::bench::Program kProgram{
    "wanlab_wake_bench",
    "how late an emulated GPU op ends: a plain timer and EmulatedGpu::compute, with and without idle pollers (no "
    "root; about a minute)",
    {wanlab::bench::valued("op-ms", "MS,...",
                           "op lengths in ms (default 6.5,15,30: short forwards of the bench's space)"),
     wanlab::bench::valued("ops", "N", "ops per length and way (default 300)")},
    ""};

int run(const wanlab::base::Options& options) {
  const int ops = options.integer("ops", 10, 1'000'000).value_or(300);
  const auto op_ms = wanlab::bench::list_option(
      options, "op-ms", [](const std::string& text) { return wanlab::base::parse_decimal(text, 0.1, 10'000.0); });
  const std::vector<double> lengths = op_ms.value_or(std::vector<double>{6.5, 15, 30});
  fmt::print("| op | way | late p50 | late p99 | late mean | late, share of op | vs plain timer | CPU |\n");
  fmt::print("|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const double ms : lengths) {
    const auto op_ns = static_cast<std::int64_t>(ms * 1e6);
    const Result anchor = wait_ops(false, op_ns, ops);
    const Result gpu = wait_ops(true, op_ns, ops);
    std::optional<wanlab::base::IdlePollers> pollers(std::in_place);
    const Result anchor_polled = wait_ops(false, op_ns, ops);
    const Result gpu_polled = wait_ops(true, op_ns, ops);
    pollers.reset();
    const auto row = [&](const char* way, const Result& r) {
      const double mean_us = r.late_share(op_ns) * static_cast<double>(op_ns) / 1e3;
      fmt::print("| {} ms | {} | {:.1f} us | {:.1f} us | {:.1f} us | {:.2f}% | {:.2f} | {:.1f}% |\n", ms, way,
                 r.us_at(0.5), r.us_at(0.99), mean_us, 100 * r.late_share(op_ns),
                 r.late_share(op_ns) / anchor.late_share(op_ns), 100 * r.cpu_share);
    };
    row("timer (anchor)", anchor);
    row("compute: aimed early, spun", gpu);
    row("timer, idle-polled", anchor_polled);
    row("compute, idle-polled", gpu_polled);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of(kProgram, run, argc, argv); }
