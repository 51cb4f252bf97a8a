// PLACEHOLDER written by the lead so the CLI links; the transport work replaces this file.
#include <stdexcept>

#include "commands.hpp"

namespace wanlab::cli {
int cmd_perf(Args) { throw std::runtime_error("perf: not built yet"); }
}  // namespace wanlab::cli
