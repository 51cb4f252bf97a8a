#include "wanlab/emulator/sys.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "wanlab/base/sys.hpp"

namespace wanlab::emulator {

void write_sysctl(const std::string& path, const std::string& value) {
  base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) base::throw_errno("opening " + path);
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    base::throw_errno("writing \"" + value + "\" to " + path);
}

std::string read_sysctl(const std::string& path) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) base::throw_errno("opening " + path);
  char buffer[256];
  const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
  if (got < 0) base::throw_errno("reading " + path);
  std::string value(buffer, static_cast<std::size_t>(got));
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return value;
}

}  // namespace wanlab::emulator
