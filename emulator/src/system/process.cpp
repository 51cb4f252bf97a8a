#include "wanlab/emulator/process.hpp"

#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/netns.hpp"

namespace wanlab::emulator {

int run_argv(const std::vector<std::string>& argv, const std::string& netns, bool quiet, bool forward_signals) {
  base::UniqueFd netns_fd;
  if (!netns.empty()) netns_fd = open_netns(netns);
  base::SpawnOptions options;
  options.netns_fd = netns_fd.get();
  if (quiet) options.stdout_fd = options.stderr_fd = base::kDevNull;
  return base::spawn(argv, options).wait(forward_signals);
}

}  // namespace wanlab::emulator
