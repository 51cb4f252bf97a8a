// Waiting for a child process's exit on an io_context, and saying how it ended.
#pragma once

#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <optional>
#include <string>

namespace wanlab::harness::run_detail {

// "killed by signal 9 (Killed)", "exited with status 1", and a container
// runtime's 128 + signal read as the signal.
std::string describe_status(int status);

// Waits (pidfd) until child `pid` ends and reaps it. Returns its waitpid
// status; nullopt when it cannot be watched (errno says why) or was reaped
// elsewhere.
asio::awaitable<std::optional<int>> wait_exit(asio::io_context& io, pid_t pid);

}  // namespace wanlab::harness::run_detail
