// Programs started by base/process.hpp: run to their end with their output
// and times captured, waited for without blocking, and read in /proc.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "wanlab/base/process.hpp"

namespace b = wanlab::base;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(a_captured_run_has_both_streams_and_the_exit_code) {
  const auto run = b::run_captured({"sh", "-c", "echo out; echo err >&2; exit 3"});
  BOOST_TEST(run.status == 3);
  BOOST_TEST(run.output == "out\nerr\n");
  BOOST_TEST(run.seconds > 0);
  BOOST_TEST(b::run_captured({"sh", "-c", "kill -TERM $$"}).status == 128 + 15);
  BOOST_TEST(b::run_captured({"/nonexistent/program"}).status == 127);
}

BOOST_AUTO_TEST_CASE(a_captured_run_counts_the_child_s_cpu_time) {
  const auto idle = b::run_captured({"sleep", "0.2"});
  BOOST_TEST(idle.seconds >= 0.2);
  BOOST_TEST(idle.cpu_seconds < 0.1);
  const auto busy = b::run_captured({"sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"});
  BOOST_TEST(busy.status == 0);
  BOOST_TEST(busy.cpu_seconds > 0.01, busy.cpu_seconds);
}

BOOST_AUTO_TEST_CASE(try_wait_reaps_only_what_has_ended) {
  b::Child child = b::spawn({"sleep", "0.3"});
  BOOST_TEST(!child.try_wait().has_value());
  std::optional<int> code;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!code && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    code = child.try_wait();
  }
  BOOST_TEST(code.value() == 0);
  BOOST_TEST(child.pid() == -1);
  BOOST_CHECK_THROW(child.try_wait(), std::logic_error);
}

BOOST_AUTO_TEST_CASE(process_stat_reads_state_cpu_and_start) {
  const auto self = b::process_stat(::getpid());
  BOOST_TEST_REQUIRE(self.has_value());
  BOOST_TEST(self->state == 'R');
  BOOST_TEST(self->start_ticks > 0u);

  // A child that has exited and is not yet waited for is a zombie.
  b::Child child = b::spawn({"true"});
  const pid_t pid = child.pid();
  char state = '?';
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (state != 'Z' && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    if (const auto stat = b::process_stat(pid)) state = stat->state;
  }
  BOOST_TEST(state == 'Z');
  BOOST_TEST(child.wait() == 0);
  BOOST_TEST(!b::process_stat(pid).has_value());
}
