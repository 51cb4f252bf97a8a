// Named network namespaces, made the way `ip netns add` makes them (a bind
// mount under /run/netns), so `ip netns exec NAME ...` works on ours too.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "wanlab/base/sys.hpp"

namespace wanlab::emulator {

inline constexpr const char* kNetnsDir = "/run/netns";

void create_netns(const std::string& name);  // throws if it exists
void delete_netns(const std::string& name);  // absent is fine
// Names the calling thread's current network namespace (a bind mount, like
// `ip netns attach`), so later processes can enter it; delete_netns drops the
// name only, never the namespace's contents.
void name_current_netns(const std::string& name);
bool netns_exists(const std::string& name);
std::vector<std::string> list_netns(const std::string& prefix);
base::UniqueFd open_netns(const std::string& name);
// Processes whose network namespace is `name` (as `ip netns pids`).
std::vector<pid_t> netns_pids(const std::string& name);

// Moves the calling thread into a network namespace until destroyed. Sockets
// opened meanwhile stay in that namespace for their whole life.
class NetnsScope {
 public:
  explicit NetnsScope(int netns_fd);
  explicit NetnsScope(const std::string& name);
  ~NetnsScope();
  NetnsScope(const NetnsScope&) = delete;
  NetnsScope& operator=(const NetnsScope&) = delete;

 private:
  void enter(int netns_fd, const std::string& what);
  base::UniqueFd previous_;
};

}  // namespace wanlab::emulator
