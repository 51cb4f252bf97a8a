#include "wanlab/base/sys.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace wanlab::base {

void throw_errno(const std::string& what, int err) { throw std::system_error(err, std::generic_category(), what); }

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Pipe make_pipe(const std::string& what) {
  int fds[2];
  check(::pipe2(fds, O_CLOEXEC), what);
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace wanlab::base
