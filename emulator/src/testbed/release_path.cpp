// The release path: which one a testbed gets (fq when the kernel has sch_fq,
// else nfqueue) and the nfqueue path's iptables rule.
#include <unistd.h>

#include <fmt/format.h>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "testbed/testbed_internal.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/process.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace wanlab::emulator {
namespace detail {
namespace {

// The kernel's answer to "is there an fq qdisc?", asked on the core's loopback.
std::optional<std::string> fq_missing_reason(Rtnl& core) {
  const int lo = core.link_index("lo");
  try {
    core.add_fq_root(lo, FqOptions{});
  } catch (const std::system_error& error) {
    return fmt::format("the kernel has no sch_fq ({})", error.what());
  }
  core.delete_root_qdisc(lo);
  return std::nullopt;
}

std::optional<std::string> nfqueue_missing_reason() {
  if (::access("/proc/net/netfilter/nfnetlink_queue", F_OK) != 0)
    return "the kernel has no nfnetlink_queue (/proc/net/netfilter/nfnetlink_queue is missing)";
  if (::access("/usr/sbin/iptables-legacy", X_OK) != 0 && ::access("/usr/sbin/iptables", X_OK) != 0)
    return "iptables is not installed (apt-get install iptables)";
  return std::nullopt;
}

// The nftables backend lacks the queue statement on some kernels; the legacy
// backend's NFQUEUE target works wherever nfnetlink_queue does.
std::string iptables_binary() {
  return ::access("/usr/sbin/iptables-legacy", X_OK) == 0 ? "/usr/sbin/iptables-legacy" : "/usr/sbin/iptables";
}

std::string ip6tables_binary() {
  return ::access("/usr/sbin/ip6tables-legacy", X_OK) == 0 ? "/usr/sbin/ip6tables-legacy" : "/usr/sbin/ip6tables";
}

}  // namespace

std::pair<ReleasePath, std::string> choose_release(ReleaseChoice choice, Rtnl& core) {
  const auto fq_missing = fq_missing_reason(core);
  const auto nfqueue_missing = nfqueue_missing_reason();
  switch (choice) {
    case ReleaseChoice::fq:
      if (fq_missing) throw std::runtime_error("--release fq: " + *fq_missing);
      return {ReleasePath::fq, "asked for with --release fq"};
    case ReleaseChoice::nfqueue:
      if (nfqueue_missing) throw std::runtime_error("--release nfqueue: " + *nfqueue_missing);
      return {ReleasePath::nfqueue, "asked for with --release nfqueue"};
    case ReleaseChoice::automatic: break;
  }
  if (!fq_missing)
    return {ReleasePath::fq, "auto: the kernel has sch_fq, which enforces departure times in the kernel"};
  if (!nfqueue_missing)
    return {ReleasePath::nfqueue,
            "auto: " + *fq_missing + ", so a userspace NFQUEUE releaser enforces departure times"};
  throw std::runtime_error("no release path: " + *fq_missing + "; " + *nfqueue_missing);
}

std::vector<std::string> nfqueue_rule(const TestbedState& state, const std::string& action, bool ipv6) {
  std::vector<std::string> argv = {ipv6 ? ip6tables_binary() : iptables_binary(), "-w"};
  if (state.kind == TestbedKind::attached) {
    // Before routing, so packets for this namespace and forwarded ones both wait.
    argv.insert(argv.end(), {"-t", "mangle", action, "PREROUTING", "-i", state.dev});
  } else {
    argv.insert(argv.end(), {action, "FORWARD"});
  }
  argv.insert(argv.end(),
              {"-m", "mark", "--mark", fmt::format("{:#x}/{:#x}", WANLAB_MARK_HOLD, WANLAB_MARK_HOLD), "-m", "comment",
               "--comment", "wanlab-" + state.name, "-j", "NFQUEUE", "--queue-num", std::to_string(state.queue_num)});
  return argv;
}

std::vector<bool> nfqueue_rule_families(const TestbedState& state) {
  // An attached testbed knows only the scenario's IPv4 pool.
  if (state.kind == TestbedKind::attached) return {false};
  return {false, true};
}

void install_nfqueue_rule(const TestbedState& state) {
  for (bool ipv6 : nfqueue_rule_families(state)) {
    const auto argv = nfqueue_rule(state, "-A", ipv6);
    const int status = run_argv(argv, state.netns, true);
    if (status != 0)
      throw std::runtime_error(
          fmt::format("{}: installing the NFQUEUE rule: {} exited with {}", state.netns, argv[0], status));
  }
}

}  // namespace detail

std::string to_string(ReleasePath path) { return path == ReleasePath::fq ? "fq" : "nfqueue"; }

ReleaseChoice parse_release_choice(const std::string& text) {
  if (text == "auto") return ReleaseChoice::automatic;
  if (text == "fq") return ReleaseChoice::fq;
  if (text == "nfqueue") return ReleaseChoice::nfqueue;
  throw std::invalid_argument("--release: expected auto, fq or nfqueue, got " + base::quoted(text));
}

}  // namespace wanlab::emulator
