#include "process/exit_status.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/posix/stream_descriptor.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <cstring>

namespace wanlab::harness::run_detail {

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  const int code = WEXITSTATUS(status);
  // A container runtime's client reports a signal that ended the worker as 128 + its number.
  if (code > 128 && code < 128 + 65)
    return fmt::format("exited with status {} (its worker was killed by signal {}, {})", code, code - 128,
                       ::strsignal(code - 128));
  return fmt::format("exited with status {}", code);
}

asio::awaitable<std::optional<int>> wait_exit(asio::io_context& io, pid_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) co_return std::nullopt;
  asio::posix::stream_descriptor process(io, fd);
  std::error_code ec;
  co_await process.async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) co_return std::nullopt;
  co_return status;
}

}  // namespace wanlab::harness::run_detail
