#include "wanlab/emulator/sys.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "wanlab/base/files.hpp"

namespace wanlab::emulator {

void throw_errno(const std::string& what, int err) {
  throw std::system_error(err, std::generic_category(), what);
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void write_sysctl(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw_errno("opening " + path);
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    throw_errno("writing \"" + value + "\" to " + path);
}

std::string read_file(const std::string& path) {
  // /proc and /sys files: regular, small, their size read as 0 until read.
  return base::read_regular_file(path, base::ReadRules{1u << 20, true});
}

}  // namespace wanlab::emulator
