// Test support without any wanlab library: runs the real `wanlab` binary
// (path from $WANLAB_BIN, set by CTest) or any argv, and captures what it prints.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace wanlab::test {

struct CliResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

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

// Starts argv (PATH lookup); returns its pid and the read end of its output.
inline pid_t spawn(const std::vector<std::string>& command, int* output_fd) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) < 0) throw std::runtime_error("pipe");
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  *output_fd = pipe_fds[0];
  return pid;
}

inline std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// Starts `wanlab args...`.
inline pid_t spawn_wanlab(const std::vector<std::string>& args, int* output_fd) {
  std::vector<std::string> command{wanlab_bin()};
  command.insert(command.end(), args.begin(), args.end());
  return spawn(command, output_fd);
}

// Runs argv to its end and returns its status and output.
inline CliResult run(const std::vector<std::string>& command) {
  int fd = -1;
  const pid_t pid = spawn(command, &fd);
  CliResult result;
  result.output = read_all(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

inline CliResult wanlab(const std::vector<std::string>& args) {
  std::vector<std::string> command{wanlab_bin()};
  command.insert(command.end(), args.begin(), args.end());
  return run(command);
}

}  // namespace wanlab::test
