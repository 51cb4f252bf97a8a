#include "wanlab/base/process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
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

// Our environment with `overrides` set, as execve takes it (pointers into
// `storage`), made before fork: the child may not allocate.
std::vector<char*> environment_with(const std::vector<std::pair<std::string, std::string>>& overrides,
                                    std::vector<std::string>& storage) {
  for (char** entry = environ; *entry; ++entry) {
    const std::string_view text(*entry);
    const bool replaced = std::any_of(overrides.begin(), overrides.end(), [&](const auto& variable) {
      return text.size() > variable.first.size() && text.starts_with(variable.first) &&
             text[variable.first.size()] == '=';
    });
    if (!replaced) storage.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) storage.push_back(name + "=" + value);
  return c_argv(storage);
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

// System calls only, so that a forked child may call it: nullptr when done,
// else the step that failed (errno says why).
const char* enter_identity(const HostIdentity& identity) {
  if (::unshare(CLONE_NEWNS | CLONE_NEWUTS) < 0) return "new mount and UTS namespaces";
  // Private first, or the bind mount would reach the machine's own namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) return "making mounts private";
  for (const auto& file : identity.files)
    if (::mount(file.source.c_str(), file.target.c_str(), nullptr, MS_BIND, nullptr) < 0) return file.target.c_str();
  if (::sethostname(identity.hostname.c_str(), identity.hostname.size()) < 0) return "setting the host name";
  return nullptr;
}

[[noreturn]] void child_fail(const char* what, int code = 126) { fail_in_child("wanlab", what, code); }

// In the child, between fork and exec: system calls only (no allocation).
void give_stream(int fd, int target, int devnull) {
  if (fd == kInherit) return;
  if (fd == kDevNull) fd = devnull;
  if (fd == target)
    ::fcntl(fd, F_SETFD, 0);
  else
    ::dup2(fd, target);
}

[[noreturn]] void become(char* const* argv, char* const* envp, const SpawnOptions& options, const DevNull& devnull,
                         pid_t parent) {
  for (int sig : kForwarded) ::signal(sig, SIG_DFL);
  if (options.new_session) ::setsid();
  if (options.own_group) ::setpgid(0, 0);
  // Streams first, so that what fails below is told where the program's errors go.
  give_stream(options.stdin_fd, STDIN_FILENO, devnull.in.get());
  give_stream(options.stdout_fd, STDOUT_FILENO, devnull.out.get());
  give_stream(options.stderr_fd, STDERR_FILENO, devnull.out.get());
  if (options.die_with_parent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) child_fail("PR_SET_PDEATHSIG");
    if (::getppid() != parent) ::_exit(126);  // we ended before it was set
  }
  if (options.netns_fd >= 0 && ::setns(options.netns_fd, CLONE_NEWNET) < 0) child_fail("joining the network namespace");
  if (options.identity)
    if (const char* failed = enter_identity(*options.identity)) child_fail(failed);
  for (int fd : options.keep_fds) ::fcntl(fd, F_SETFD, 0);
  if (options.search_path)
    ::execvpe(argv[0], argv, envp);
  else
    ::execve(argv[0], argv, envp);
  child_fail(argv[0], 127);
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
  std::vector<std::string> environment_storage;
  auto envp = environment_with(options.environment, environment_storage);
  const DevNull devnull = open_devnull(options);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("starting " + argv[0]);
  if (pid == 0) become(args.data(), envp.data(), options, devnull, parent);
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

void fail_in_child(const char* who, const char* what, int code) {
  const int err = errno;
  const char* reason = ::strerror(err);
  for (const char* part : {who, ": ", what, ": ", reason, "\n"}) (void)!::write(STDERR_FILENO, part, ::strlen(part));
  ::_exit(code);
}

void take_identity(const HostIdentity& identity) {
  if (const char* failed = enter_identity(identity)) throw_errno(identity.hostname + ": " + failed);
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
