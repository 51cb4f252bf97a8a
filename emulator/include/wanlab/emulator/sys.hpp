// The kernel's settings a testbed changes (base/sys.hpp owns fds and errors).
#pragma once

#include <string>

namespace wanlab::emulator {

// Writes `value` to a /proc/sys file in the calling thread's network namespace.
void write_sysctl(const std::string& path, const std::string& value);
// Its value, without the trailing newline.
std::string read_sysctl(const std::string& path);

}  // namespace wanlab::emulator
