#include "wanlab/emulator/process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/sys.hpp"

namespace wanlab::emulator {
namespace {

volatile sig_atomic_t forward_to = 0;

void forward_signal(int sig) {
  if (forward_to > 0) ::kill(forward_to, sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};

}  // namespace

int run_argv(const std::vector<std::string>& argv, const std::string& netns, bool quiet, bool forward_signals) {
  if (argv.empty()) throw std::invalid_argument("run_argv: empty command");
  UniqueFd netns_fd;
  if (!netns.empty()) netns_fd = open_netns(netns);
  std::vector<char*> c_argv;
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("starting " + argv[0]);
  if (pid == 0) {
    for (int sig : kForwarded) ::signal(sig, SIG_DFL);
    if (netns_fd && ::setns(netns_fd.get(), CLONE_NEWNET) < 0) ::_exit(126);
    if (quiet) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
    ::execvp(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  struct sigaction previous[std::size(kForwarded)]{};
  if (forward_signals) {
    forward_to = pid;
    struct sigaction action{};
    action.sa_handler = forward_signal;
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &action, &previous[i]);
  }
  int status = 0;
  int wait_errno = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      wait_errno = errno;
      break;
    }
  }
  if (forward_signals) {
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
    forward_to = 0;
  }
  if (wait_errno) throw_errno("waiting for " + argv[0], wait_errno);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

namespace {

// A zombie has exited; only its parent's wait is missing (and the parent may
// be an init that reaps late), so it counts as gone.
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  char state = '?';
  if (FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r")) {
    if (std::fscanf(stat, "%*d (%*[^)]) %c", &state) != 1) state = '?';
    std::fclose(stat);
  }
  return state != 'Z' && state != 'X';
}

}  // namespace

void terminate_pids(const std::vector<pid_t>& pids, int grace_ms) {
  for (pid_t pid : pids) ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (pid_t pid : pids) {
    while (running(pid) && std::chrono::steady_clock::now() < deadline) {
      ::waitpid(pid, nullptr, WNOHANG);  // reaps it if it is our child
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (running(pid)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, WNOHANG);
    }
  }
}

std::string self_exe() {
  char path[PATH_MAX] = {};
  const ssize_t len = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (len < 0) throw_errno("reading /proc/self/exe");
  return std::string(path, static_cast<size_t>(len));
}

}  // namespace wanlab::emulator
