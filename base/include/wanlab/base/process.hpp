// Starting programs: always an argv, never a shell; optionally inside a
// network namespace (given as an open fd: base knows no namespace names).
// Every child is owned by a Child until it is waited for or handed over.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wanlab::base {

/// For SpawnOptions' streams: keep ours, or /dev/null.
inline constexpr int kInherit = -1;
inline constexpr int kDevNull = -2;

/// What a program sees of the machine it runs on, in its own UTS and mount
/// namespaces (nothing of ours changes): its host name, and files of its own
/// bind-mounted over ours (/etc/hosts, say).
struct HostIdentity {
  struct File {
    std::string source;  // an existing file
    std::string target;  // an existing file it hides, "/etc/hosts"
  };
  std::string hostname;
  std::vector<File> files;
};

struct SpawnOptions {
  int netns_fd = -1;                     // setns(CLONE_NEWNET) into it before exec; -1: ours
  std::optional<HostIdentity> identity;  // taken after joining netns_fd
  bool die_with_parent = false;          // SIGKILL when we end, however we end
  bool new_session = false;              // setsid(): its own session and group, no terminal
  bool own_group = false;                // setpgid(0, 0): kill(-pid) reaches what it starts
  int stdin_fd = kInherit;               // an fd of ours, kInherit or kDevNull
  int stdout_fd = kInherit;
  int stderr_fd = kInherit;
  std::vector<int> keep_fds;  // fds of ours the program keeps (close-on-exec cleared)
  bool search_path = true;    // argv[0] looked up on PATH; false: argv[0] is a path
  // Set in the program's environment (ours otherwise), replacing a variable
  // of the same name.
  std::vector<std::pair<std::string, std::string>> environment;
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
  /// Without blocking: its exit code (or 128 + signal) if it has ended, which
  /// reaps it as wait() does; nothing while it runs. Throws if waiting fails.
  std::optional<int> try_wait();
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

/// What run_captured saw of a program run to its end.
struct Captured {
  int status = 0;          // exit code, or 128 + the signal that ended it
  std::string output;      // stdout and stderr together
  double seconds = 0;      // wall time, from start to reaped
  double cpu_seconds = 0;  // its own user + system time (not its children's)
};

/// Runs argv (spawn with `options`, whose stdout and stderr are replaced by
/// one pipe) to its end and returns what it printed and how long it took.
/// Throws std::system_error if it cannot start or wait for it.
Captured run_captured(const std::vector<std::string>& argv, SpawnOptions options = {});

/// Gives the calling process (single-threaded: it is about to exec) `identity`:
/// new UTS and mount namespaces, its host name set, its files mounted. Throws std::system_error naming the step that
/// failed.
void take_identity(const HostIdentity& identity);

/// In a forked child that failed before its exec: "WHO: WHAT: <errno's
/// reason>" on stderr, then _exit(code). System calls only.
[[noreturn]] void fail_in_child(const char* who, const char* what, int code = 126);

/// Replaces this process with argv (looked up on PATH). Throws
/// std::system_error("WHAT: ...") if it cannot.
[[noreturn]] void exec_argv(const std::vector<std::string>& argv, const std::string& what);

/// An exit code, or 128 + signal, from a waitpid status.
int exit_code(int wait_status);

/// Sends SIGTERM, waits up to grace_ms for the processes to go, then SIGKILL.
/// A zombie counts as gone (its parent's wait is all that is missing).
void terminate_pids(const std::vector<pid_t>& pids, int grace_ms = 1000);

/// A process's line in /proc/PID/stat (proc(5)), the fields wanlab reads.
struct ProcessStat {
  char state = '?';               // R, S, D, Z (a zombie), X (dead), ...
  std::uint64_t cpu_ticks = 0;    // utime + stime, in clock ticks (sysconf(_SC_CLK_TCK))
  std::uint64_t start_ticks = 0;  // when it started, in clock ticks after boot: with the pid, names one process
};
/// Nothing if there is no such process (or it went while being read).
std::optional<ProcessStat> process_stat(pid_t pid);

/// The path of the running executable.
std::string self_exe();

}  // namespace wanlab::base
