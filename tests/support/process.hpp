// Test support for running programs: the real `wanlab` binary (path from
// $WANLAB_BIN, set by CTest) or any argv, on base/process.hpp (argv only, no
// shell; a child dropped before it is waited for is killed and reaped).
#pragma once

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"

namespace wanlab::test {

// What a program run to its end printed (stdout and stderr together) and its
// exit code, 128 + signal if a signal ended it, 127 if it could not be run.
using CliResult = base::Captured;

inline std::string wanlab_bin() {
  const char* bin = std::getenv("WANLAB_BIN");
  if (!bin) throw std::runtime_error("WANLAB_BIN is not set (run through ctest)");
  if (::access(bin, X_OK) != 0) throw std::runtime_error(std::string(bin) + " is missing: build the wanlab target");
  return bin;
}

inline std::string source_dir() {
  const char* dir = std::getenv("WANLAB_SOURCE_DIR");
  return dir ? dir : ".";
}

inline std::vector<std::string> wanlab_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv{wanlab_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Runs argv (PATH lookup) to its end.
inline CliResult run(const std::vector<std::string>& argv) { return base::run_captured(argv); }

inline CliResult wanlab(const std::vector<std::string>& args) { return run(wanlab_argv(args)); }

// Everything left to read on `fd`, to its end of file (the caller owns fd).
inline std::string read_to_eof(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

// A started program and the read end of the one pipe its stdout and stderr
// go to. The caller signals it (child.pid()) and reaps it (child.wait()).
struct Started {
  base::Child child;
  base::UniqueFd output;
};

inline Started start(const std::vector<std::string>& argv) {
  base::Pipe pipe = base::make_pipe("a pipe for the output of " + argv.at(0));
  base::SpawnOptions options;
  options.stdout_fd = options.stderr_fd = pipe.write.get();
  return Started{base::spawn(argv, options), std::move(pipe.read)};  // our write end closes here
}

inline Started start_wanlab(const std::vector<std::string>& args) { return start(wanlab_argv(args)); }

// A program the test reads as it runs: read_until() waits for a piece of
// output, finish() for the end. Dropped while it runs: SIGTERM, up to
// `grace` to go, then SIGKILL; reaped either way.
class Running {
 public:
  explicit Running(const std::vector<std::string>& argv, std::chrono::milliseconds grace = std::chrono::seconds(60))
      : started_(start(argv)), grace_(grace) {}
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
  ~Running() {
    if (status_) return;
    ::kill(pid(), SIGTERM);
    finish(grace_);
  }

  pid_t pid() const { return started_.child.pid(); }
  const std::string& output() const { return output_; }

  // Reads until `piece` appears: false at end of output or after `timeout`.
  bool read_until(const std::string& piece, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output_.find(piece) == std::string::npos) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return false;
    }
    return true;
  }

  // Reads to the end of output and reaps it: its exit code, 128 + signal, or
  // -1 when it was still running after `timeout` (then it is killed).
  int finish(std::chrono::milliseconds timeout) {
    if (status_) return *status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        ::kill(pid(), SIGKILL);
        started_.child.wait();
        return *(status_ = -1);
      }
      if (!read_some(static_cast<int>(left.count())) && eof_) break;
    }
    // Output ended; the process may still be exiting.
    while (!(status_ = started_.child.try_wait())) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid(), SIGKILL);
        started_.child.wait();
        return *(status_ = -1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return *status_;
  }

 private:
  // Waits up to timeout_ms for output: true if some came.
  bool read_some(int timeout_ms) {
    if (eof_) return false;
    pollfd entry{started_.output.get(), POLLIN, 0};
    if (::poll(&entry, 1, timeout_ms) <= 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(started_.output.get(), buffer, sizeof(buffer));
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    output_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  Started started_;
  std::chrono::milliseconds grace_;
  std::string output_;
  bool eof_ = false;
  std::optional<int> status_;
};

}  // namespace wanlab::test
