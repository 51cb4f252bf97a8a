// `wanlab daemon`: started by `up`, one per testbed, in its core namespace.
// (or, for `attach`, in the attached interface's namespace).
// Runs the NFQUEUE releaser (nfqueue path) and applies [[event]]s on time.
// Not for users; `down` stops it.
#include <fmt/core.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/releaser.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace wanlab::cli {
namespace em = wanlab::emulator;
namespace {

// Answers `up`, once: "ok" or the error.
void tell(int& fd, const std::string& text) {
  if (fd < 0) return;
  [[maybe_unused]] auto written = ::write(fd, text.data(), text.size());
  ::close(fd);
  fd = -1;
}

using Clock = std::chrono::steady_clock;

// steady_clock counts signed nanoseconds: a later time is "never", not the past.
Clock::time_point at_mono(std::uint64_t ns) {
  if (ns > static_cast<std::uint64_t>(INT64_MAX)) return Clock::time_point::max();
  return Clock::time_point(std::chrono::nanoseconds(static_cast<std::int64_t>(ns)));
}

}  // namespace

int cmd_daemon(const Options& options) {
  int ready_fd = options.integer<int>("ready-fd", 0, INT_MAX).value_or(-1);
  try {
    const em::TestbedState state = em::load_state(options.get("testbed").value_or(""));
    const em::Scenario scenario = em::load_scenario(state.scenario_path, em::ScheduleFiles::skip);
    em::NetnsScope in_namespace(state.netns);

    asio::io_context io;
    std::optional<em::NfqueueReleaser> releaser;
    if (state.release == em::ReleasePath::nfqueue) {
      // The releaser is the emulated link: it must not wait behind the
      // programs whose packets it releases.
      sched_param priority{};
      priority.sched_priority = 10;
      if (::sched_setscheduler(0, SCHED_FIFO, &priority) < 0)
        fmt::print(stderr, "wanlab daemon: no real-time priority ({}); release times may suffer under load\n", std::strerror(errno));
      releaser.emplace(io, state.queue_num);
      releaser->start();
    }

    std::vector<std::unique_ptr<asio::steady_timer>> event_timers;
    for (const auto& event : scenario.events) {
      auto timer = std::make_unique<asio::steady_timer>(io, at_mono(em::event_due_mono_ns(state, event.at_ns)));
      timer->async_wait([&state, at = event.at_ns](const asio::error_code& ec) {
        if (ec) return;
        em::refresh_data_plane(state);
        fmt::print("event at +{} ms applied\n", at / 1'000'000);
        std::fflush(stdout);
      });
      event_timers.push_back(std::move(timer));
    }

    asio::steady_timer stats_timer(io);
    std::function<void()> publish_stats = [&] {
      if (releaser) em::write_releaser_stats(em::releaser_stats_path(state.name), releaser->stats());
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

}  // namespace wanlab::cli
