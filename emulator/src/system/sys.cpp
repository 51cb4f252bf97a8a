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

}  // namespace wanlab::emulator
