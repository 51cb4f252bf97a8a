// Starting programs: always an argv, never a shell; optionally inside a
// network namespace (given as an open fd: base knows no namespace names).
// Every child is owned by a Child until it is waited for or handed over.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace wanlab::base {

/// For SpawnOptions' streams: keep ours, or /dev/null.
inline constexpr int kInherit = -1;
inline constexpr int kDevNull = -2;

struct SpawnOptions {
  int netns_fd = -1;         // setns(CLONE_NEWNET) into it before exec; -1: ours
  bool new_session = false;  // setsid(): its own session and group, no terminal
  bool own_group = false;    // setpgid(0, 0): kill(-pid) reaches what it starts
  int stdin_fd = kInherit;   // an fd of ours, kInherit or kDevNull
  int stdout_fd = kInherit;
  int stderr_fd = kInherit;
  std::vector<int> keep_fds;  // fds of ours the program keeps (close-on-exec cleared)
  bool search_path = true;    // argv[0] looked up on PATH; false: argv[0] is a path
};

/// A started process. Dropped before wait() or release(), it is killed
/// (SIGKILL) and reaped, so a failure between start and wait leaves nothing.
class Child {
 public:
  Child() = default;
  Child(pid_t pid, std::string name) : pid_(pid), name_(std::move(name)) {}
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  /// Waits for it (through EINTR) and returns its exit code, or 128 + the
  /// signal that ended it. With `forward_signals`, SIGINT, SIGTERM and SIGHUP
  /// sent to us meanwhile go to the child instead of ending us, so the caller
  /// can still clean up after it. Throws if waiting fails.
  int wait(bool forward_signals = false);
  /// Hands it over: the caller signals and reaps it by its id from now on.
  pid_t release();

 private:
  pid_t pid_ = -1;
  std::string name_;
};

/// Starts argv with `options`. Throws std::system_error if it cannot fork;
/// a child that cannot join the namespace exits 126, one whose program cannot
/// be run 127.
Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

/// Replaces this process with argv (looked up on PATH). Throws
/// std::system_error("WHAT: ...") if it cannot.
[[noreturn]] void exec_argv(const std::vector<std::string>& argv, const std::string& what);

/// An exit code, or 128 + signal, from a waitpid status.
int exit_code(int wait_status);

/// Sends SIGTERM, waits up to grace_ms for the processes to go, then SIGKILL.
/// A zombie counts as gone (its parent's wait is all that is missing).
void terminate_pids(const std::vector<pid_t>& pids, int grace_ms = 1000);

/// The path of the running executable.
std::string self_exe();

}  // namespace wanlab::base
