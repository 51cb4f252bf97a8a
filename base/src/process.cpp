#include "wanlab/base/process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "wanlab/base/files.hpp"
#include "wanlab/base/sys.hpp"

namespace wanlab::base {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t forward_to = 0;

void forward_signal(int sig) {
  if (forward_to > 0) ::kill(forward_to, sig);
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& arg : argv) out.push_back(const_cast<char*>(arg.c_str()));
  out.push_back(nullptr);
  return out;
}

// /dev/null opened in the parent: read-only for stdin, write-only for the
// others. Programs look at how their stdin is open: with a read-write one,
// `podman run` did not exit within 3 s of its container's process being
// killed (integration.harness_bubbletea); with a read-only one it did.
struct DevNull {
  UniqueFd in;
  UniqueFd out;
};

DevNull open_devnull(const SpawnOptions& options) {
  DevNull devnull;
  if (options.stdin_fd == kDevNull)
    devnull.in = UniqueFd(check(::open("/dev/null", O_RDONLY | O_CLOEXEC), "opening /dev/null"));
  if (options.stdout_fd == kDevNull || options.stderr_fd == kDevNull)
    devnull.out = UniqueFd(check(::open("/dev/null", O_WRONLY | O_CLOEXEC), "opening /dev/null"));
  return devnull;
}

// In the child, between fork and exec: system calls only (no allocation).
void give_stream(int fd, int target, int devnull) {
  if (fd == kInherit) return;
  if (fd == kDevNull) fd = devnull;
  if (fd == target)
    ::fcntl(fd, F_SETFD, 0);
  else
    ::dup2(fd, target);
}

[[noreturn]] void become(char* const* argv, const SpawnOptions& options, const DevNull& devnull) {
  for (int sig : kForwarded) ::signal(sig, SIG_DFL);
  if (options.new_session) ::setsid();
  if (options.own_group) ::setpgid(0, 0);
  if (options.netns_fd >= 0 && ::setns(options.netns_fd, CLONE_NEWNET) < 0) ::_exit(126);
  give_stream(options.stdin_fd, STDIN_FILENO, devnull.in.get());
  give_stream(options.stdout_fd, STDOUT_FILENO, devnull.out.get());
  give_stream(options.stderr_fd, STDERR_FILENO, devnull.out.get());
  for (int fd : options.keep_fds) ::fcntl(fd, F_SETFD, 0);
  if (options.search_path)
    ::execvp(argv[0], argv);
  else
    ::execv(argv[0], argv);
  ::_exit(127);
}

// A zombie has exited; only its parent's wait is missing (and the parent may
// be an init that reaps late), so it counts as gone.
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  const auto stat = process_stat(pid);
  if (!stat) return true;  // kill() found it; if it went since, the next look says so
  return stat->state != 'Z' && stat->state != 'X';
}

double seconds_of(const timeval& time) {
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

}  // namespace

Child::Child(Child&& other) noexcept : pid_(std::exchange(other.pid_, -1)), name_(std::move(other.name_)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    Child dropped(std::move(*this));
    pid_ = std::exchange(other.pid_, -1);
    name_ = std::move(other.name_);
  }
  return *this;
}

Child::~Child() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

pid_t Child::release() { return std::exchange(pid_, -1); }

int Child::wait(bool forward_signals) {
  if (pid_ <= 0) throw std::logic_error("waiting for " + name_ + ": not running");
  struct sigaction previous[std::size(kForwarded)]{};
  if (forward_signals) {
    forward_to = pid_;
    struct sigaction action {};
    action.sa_handler = forward_signal;
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &action, &previous[i]);
  }
  int status = 0;
  int wait_errno = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      wait_errno = errno;
      break;
    }
  }
  if (forward_signals) {
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &previous[i], nullptr);
    forward_to = 0;
  }
  pid_ = -1;
  if (wait_errno) throw_errno("waiting for " + name_, wait_errno);
  return exit_code(status);
}

std::optional<int> Child::try_wait() {
  if (pid_ <= 0) throw std::logic_error("waiting for " + name_ + ": not running");
  int status = 0;
  const pid_t done = ::waitpid(pid_, &status, WNOHANG);
  if (done < 0) throw_errno("waiting for " + name_);
  if (done == 0) return std::nullopt;
  pid_ = -1;
  return exit_code(status);
}

int exit_code(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw std::invalid_argument("spawn: empty command");
  auto args = c_argv(argv);
  const DevNull devnull = open_devnull(options);
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("starting " + argv[0]);
  if (pid == 0) become(args.data(), options, devnull);
  return Child(pid, argv[0]);
}

Captured run_captured(const std::vector<std::string>& argv, SpawnOptions options) {
  Pipe output = make_pipe("capturing the output of " + (argv.empty() ? std::string("nothing") : argv[0]));
  options.stdout_fd = options.stderr_fd = output.write.get();
  const auto start = std::chrono::steady_clock::now();
  Child child = spawn(argv, options);
  output.write.reset();
  Captured result;
  char buffer[4096];
  for (ssize_t n; (n = ::read(output.read.get(), buffer, sizeof(buffer))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  // wait4 rather than Child::wait: its rusage is the child's CPU time.
  const pid_t pid = child.release();
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0)
    if (errno != EINTR) throw_errno("waiting for " + argv[0]);
  result.status = exit_code(status);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cpu_seconds = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
  return result;
}

void exec_argv(const std::vector<std::string>& argv, const std::string& what) {
  if (argv.empty()) throw std::invalid_argument(what + ": empty command");
  auto args = c_argv(argv);
  ::execvp(args[0], args.data());
  throw_errno(what);
}

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

std::optional<ProcessStat> process_stat(pid_t pid) {
  std::string stat;
  try {
    stat = read_kernel_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (const FileError&) {
    return std::nullopt;
  }
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so the
  // fields are counted from the last ')'; STATE is field 3.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  ProcessStat result;
  std::string field;
  std::uint64_t utime = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 3) result.state = field[0];
    if (index == 14) utime = std::stoull(field);
    if (index == 15) result.cpu_ticks = utime + std::stoull(field);
    if (index == 22) {
      result.start_ticks = std::stoull(field);
      break;
    }
  }
  return result;
}

std::string self_exe() {
  char path[PATH_MAX] = {};
  const ssize_t len = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (len < 0) throw_errno("reading /proc/self/exe");
  return std::string(path, static_cast<std::size_t>(len));
}

}  // namespace wanlab::base
