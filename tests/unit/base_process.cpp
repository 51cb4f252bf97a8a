// Programs started by base/process.hpp: run to their end with their output
// and times captured, waited for without blocking, and read in /proc.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"

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

BOOST_AUTO_TEST_CASE(a_program_gets_its_environment_and_an_unknown_one_says_why) {
  ::setenv("WANLAB_TEST_KEPT", "kept", 1);
  ::setenv("WANLAB_TEST_REPLACED", "old", 1);
  b::SpawnOptions options;
  options.environment = {{"WANLAB_TEST_REPLACED", "new"}, {"WANLAB_TEST_ADDED", "a=b"}};
  const auto run = b::run_captured(
      {"sh", "-c",
       "echo $WANLAB_TEST_KEPT $WANLAB_TEST_REPLACED $WANLAB_TEST_ADDED; env | grep -c WANLAB_TEST_REPLACED"},
      options);
  BOOST_TEST(run.output == "kept new a=b\n1\n");
  const auto missing = b::run_captured({"/nonexistent/program"});
  BOOST_TEST(missing.output == "wanlab: /nonexistent/program: No such file or directory\n");
}

BOOST_AUTO_TEST_CASE(a_program_with_an_identity_sees_its_host_name_and_files_and_ours_stay) {
  char ours[256] = {};
  ::gethostname(ours, sizeof(ours) - 1);
  const std::string file = "/tmp/wanlab-test-identity-hosts";
  { std::ofstream(file) << "10.9.9.9 elsewhere-0\n"; }
  b::SpawnOptions options;
  options.identity = b::HostIdentity{"elsewhere-0", {{file, "/etc/hosts"}}};
  const auto run = b::run_captured({"sh", "-c", "hostname; getent hosts elsewhere-0"}, options);
  std::filesystem::remove(file);
  BOOST_TEST(run.status == 0, run.output);
  BOOST_TEST(run.output == "elsewhere-0\n10.9.9.9        elsewhere-0\n");
  char after[256] = {};
  ::gethostname(after, sizeof(after) - 1);
  BOOST_TEST(std::string(after) == ours);
  // A file that is not there is named, and the program does not start.
  options.identity->files = {{"/nonexistent/hosts", "/etc/hosts"}};
  const auto failed = b::run_captured({"true"}, options);
  BOOST_TEST(failed.status == 126);
  BOOST_TEST(failed.output == "wanlab: /etc/hosts: No such file or directory\n");
}

BOOST_AUTO_TEST_CASE(a_program_dies_with_its_parent_when_asked) {
  // A child of ours starts `sleep` (with and without die_with_parent), says
  // its pid, and exits: only the one that was asked goes with it.
  const auto orphan = [](bool die_with_parent) {
    b::Pipe said = b::make_pipe();
    const pid_t parent = ::fork();
    if (parent == 0) {
      b::SpawnOptions options;
      options.die_with_parent = die_with_parent;
      const pid_t pid = b::spawn({"sleep", "30"}, options).release();
      (void)!::write(said.write.get(), &pid, sizeof(pid));
      ::_exit(0);
    }
    pid_t pid = -1;
    BOOST_TEST_REQUIRE(::read(said.read.get(), &pid, sizeof(pid)) == static_cast<ssize_t>(sizeof(pid)));
    ::waitpid(parent, nullptr, 0);
    return pid;
  };
  const auto gone = [](pid_t pid) {
    const auto stat = b::process_stat(pid);
    return !stat || stat->state == 'Z' || stat->state == 'X';
  };
  const pid_t asked = orphan(true);
  const pid_t not_asked = orphan(false);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!gone(asked) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  BOOST_TEST(gone(asked));
  BOOST_TEST(!gone(not_asked));
  ::kill(not_asked, SIGKILL);
}
