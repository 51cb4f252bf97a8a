#include "soak/sampler.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "wanlab/base/files.hpp"
#include "wanlab/emulator/netns.hpp"

namespace wanlab::bench::soak {
namespace em = wanlab::emulator;

DaemonSample daemon_sample(pid_t pid) {
  DaemonSample sample;
  std::istringstream status(base::read_kernel_file(fmt::format("/proc/{}/status", pid)));
  for (std::string line; std::getline(status, line);) {
    std::istringstream fields(line);
    std::string key;
    double value = 0;
    fields >> key >> value;
    if (key == "VmRSS:") sample.rss_mib = value / 1024.0;
    if (key == "Threads:") sample.threads = static_cast<int>(value);
  }
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid)))
    ++sample.fds;
  return sample;
}

KernelQueueDrops kernel_queue_drops(pid_t daemon, std::uint16_t queue_num) {
  KernelQueueDrops drops;
  std::ifstream in(fmt::format("/proc/{}/net/netfilter/nfnetlink_queue", daemon));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::uint64_t number = 0, portid = 0, total = 0, mode = 0, range = 0, dropped = 0, user_dropped = 0;
    if (fields >> number >> portid >> total >> mode >> range >> dropped >> user_dropped && number == queue_num) {
      drops.waiting = total;
      drops.queue_full = dropped;
      drops.undelivered = user_dropped;
    }
  }
  return drops;
}

std::uint64_t interface_drops(const std::vector<std::string>& namespaces) {
  std::uint64_t total = 0;
  for (const auto& ns : namespaces) {
    em::NetnsScope inside(ns);
    std::istringstream lines(base::read_kernel_file("/proc/thread-self/net/dev"));
    for (std::string line; std::getline(lines, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream fields(line.substr(colon + 1));
      std::uint64_t value = 0;
      for (int index = 0; index < 16 && fields >> value; ++index)
        if (index == 3 || index == 11) total += value;
    }
  }
  return total;
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

Sampler::Sampler(const em::TestbedState& state, const wanlab_pair_stats& wan_now) : state_(state), wan_(wan_now) {
  namespaces_ = {state.netns};
  for (const auto& host : state.hosts) namespaces_.push_back(host.netns);
  cpu_.emplace(state.daemon_pid);
  releaser_ = read_releaser_counters(state.name);
  kernel_ = kernel_queue_drops(state.daemon_pid, state.queue_num);
  iface_ = interface_drops(namespaces_);
}

void Sampler::add(const SetCall& call) {
  set_ms_.push_back(call.ms);
  set_cpu_ms_.push_back(call.cpu_ms);
  set_failures_ += call.failed;
}

Row Sampler::sample(double t, const wanlab_pair_stats& wan_now, int host_processes) {
  Row row;
  row.t = t;
  row.cpu = cpu_->read();
  cpu_.emplace(state_.daemon_pid);
  row.daemon = daemon_sample(state_.daemon_pid);
  take_counters(row, wan_now);
  take_sets(row);
  row.host_processes = host_processes;
  const std::string load = load_average();
  row.load1 = load.substr(0, load.find(' '));
  return row;
}

// The counters' growth since the last row, and where they stand now.
void Sampler::take_counters(Row& row, const wanlab_pair_stats& wan_now) {
  const auto releaser = read_releaser_counters(state_.name);
  row.held = releaser.held;
  row.verdicts = releaser.packets - releaser_.packets;
  releaser_ = releaser;
  row.wan_packets = wan_now.packets - wan_.packets;
  row.wan_mbit = static_cast<double>(wan_now.bytes - wan_.bytes) * 8 / row.cpu.seconds / 1e6;
  wan_ = wan_now;
  row.drops = std::exchange(drops_, DropCounts{});
  const auto kernel = kernel_queue_drops(state_.daemon_pid, state_.queue_num);
  row.kernel_queue_full = kernel.queue_full - kernel_.queue_full;
  row.kernel_undelivered = kernel.undelivered - kernel_.undelivered;
  row.waiting_in_kernel = kernel.waiting;
  kernel_ = kernel;
  const auto iface = interface_drops(namespaces_);
  row.iface_drops = iface - iface_;
  iface_ = iface;
}

void Sampler::take_sets(Row& row) {
  if (!set_ms_.empty()) {
    row.set_ms_mean = mean(set_ms_);
    row.set_cpu_ms_mean = mean(set_cpu_ms_);
    row.set_ms_max = *std::max_element(set_ms_.begin(), set_ms_.end());
  }
  set_ms_.clear();
  set_cpu_ms_.clear();
  row.set_failures = std::exchange(set_failures_, 0);
}

}  // namespace wanlab::bench::soak
