#include "wanlab/emulator/leftovers.hpp"

#include <bpf/bpf.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "wanlab/base/files.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/netns.hpp"

namespace wanlab::emulator {
namespace fs = std::filesystem;
namespace {

std::uint64_t inode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

std::uint64_t start_ticks(pid_t pid) {
  const auto stat = base::process_stat(pid);
  return stat ? stat->start_ticks : 0;
}

std::string comm_of(pid_t pid) {
  std::string comm;
  try {
    comm = base::read_kernel_file(fmt::format("/proc/{}/comm", pid));
  } catch (const base::FileError&) {
  }
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

bool in_any(const fs::path& process, const std::set<std::uint64_t>& inodes) {
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(process / "task", ec))
    if (inodes.count(inode_of((task.path() / "ns" / "net").string()))) return true;
  return false;
}

// Every process on the machine with a thread in one of the namespaces `inodes`.
std::vector<TestbedTraces::Process> processes_in(const std::set<std::uint64_t>& inodes) {
  std::vector<TestbedTraces::Process> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!in_any(entry.path(), inodes)) continue;
    const pid_t pid = std::stoi(name);
    found.push_back({pid, start_ticks(pid), comm_of(pid)});
  }
  return found;
}

// The objects pinned under the testbed's bpffs directory. Our descriptors
// are closed at once, so that they keep nothing alive themselves.
std::vector<TestbedTraces::BpfObject> pinned_objects(const std::string& testbed) {
  std::vector<TestbedTraces::BpfObject> objects;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(bpffs_dir(testbed), ec)) {
    TestbedTraces::BpfObject object;
    object.name = entry.path().filename();
    // The kernel's own iterators in every bpffs mount (bpf_preload), not ours.
    if (object.name == "maps.debug" || object.name == "progs.debug") continue;
    object.program = object.name == "wanlab_tc";
    base::UniqueFd fd(bpf_obj_get(entry.path().c_str()));
    if (!fd) base::throw_errno("opening " + entry.path().string());
    bpf_prog_info program{};
    bpf_map_info map{};
    __u32 len = object.program ? sizeof(program) : sizeof(map);
    base::check(bpf_obj_get_info_by_fd(fd.get(), object.program ? static_cast<void*>(&program) : &map, &len),
                "reading " + object.name);
    object.id = object.program ? program.id : map.id;
    objects.push_back(object);
  }
  return objects;
}

bool bpf_object_exists(const TestbedTraces::BpfObject& object) {
  const int fd = object.program ? bpf_prog_get_fd_by_id(object.id) : bpf_map_get_fd_by_id(object.id);
  if (fd >= 0) {
    ::close(fd);
    return true;
  }
  return errno != ENOENT;
}

bool mounted(const std::string& path) {
  std::istringstream lines(base::read_kernel_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, mount_point;
    fields >> id >> parent >> device >> root >> mount_point;
    if (mount_point == path) return true;
  }
  return false;
}

// The nsfs bind mounts of the machine that name one of `inodes` (a kept namespace).
std::vector<std::string> nsfs_mounts_of(const std::set<std::uint64_t>& inodes) {
  std::vector<std::string> found;
  std::istringstream lines(base::read_kernel_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(lines, line);)
    for (const auto inode : inodes)
      if (line.find(fmt::format("net:[{}]", inode)) != std::string::npos) found.push_back(line);
  return found;
}

bool iptables_mentions(const std::string& testbed) {
  const std::string comment = kPrefix + testbed;
  for (const char* binary :
       {"/usr/sbin/iptables-legacy", "/usr/sbin/ip6tables-legacy", "/usr/sbin/iptables", "/usr/sbin/ip6tables"}) {
    if (::access(binary, X_OK) != 0) continue;
    std::istringstream lines(base::run_captured({binary, "-w", "-S"}).output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      for (std::string word; words >> word;)
        if (word == comment || word == "\"" + comment + "\"") return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> leftovers_by_name(const std::string& name) {
  std::vector<std::string> found;
  for (const auto& ns : list_netns(kPrefix + name + ".")) found.push_back("netns " + ns);
  if (fs::exists(run_dir(name))) found.push_back("run directory " + run_dir(name));
  if (mounted(bpffs_dir(name))) found.push_back("bpffs mount " + bpffs_dir(name));
  if (iptables_mentions(name))
    found.push_back(fmt::format("an iptables rule with comment {}{} in the root namespace", kPrefix, name));
  return found;
}

std::set<std::string> link_names() {
  std::set<std::string> names;
  if (struct if_nameindex* list = ::if_nameindex()) {
    for (auto* entry = list; entry->if_index != 0; ++entry) names.insert(entry->if_name);
    ::if_freenameindex(list);
  }
  return names;
}

TestbedTraces::TestbedTraces(const TestbedState& state, std::set<std::string> links_before_up)
    : name_(state.name),
      daemon_{state.daemon_pid, state.daemon_pid > 0 ? start_ticks(state.daemon_pid) : 0, "daemon"},
      bpf_objects_(pinned_objects(state.name)),
      links_before_up_(std::move(links_before_up)) {
  if (state.kind == TestbedKind::namespaces) {
    netns_inodes_.insert(inode_of(std::string(kNetnsDir) + "/" + state.netns));
    for (const auto& host : state.hosts) netns_inodes_.insert(inode_of(std::string(kNetnsDir) + "/" + host.netns));
    netns_inodes_.erase(0);  // a namespace already gone
    processes_ = processes_in(netns_inodes_);
  }
}

std::vector<std::string> TestbedTraces::leftovers() const {
  std::vector<std::string> found = leftovers_by_name(name_);
  for (const auto& p : processes_in(netns_inodes_))
    found.push_back(fmt::format("process {} ({}) still in a testbed namespace", p.pid, p.comm));
  for (const auto& line : nsfs_mounts_of(netns_inodes_)) found.push_back("namespace kept by a mount: " + line);
  for (const auto& seen : processes_)
    if (seen.start_ticks != 0 && start_ticks(seen.pid) == seen.start_ticks)
      found.push_back(fmt::format("process {} ({}) still running", seen.pid, seen.comm));
  if (daemon_.start_ticks != 0 && start_ticks(daemon_.pid) == daemon_.start_ticks)
    found.push_back(fmt::format("daemon {} still running", daemon_.pid));
  for (const auto& object : bpf_objects_)
    if (bpf_object_exists(object))
      found.push_back(fmt::format("BPF {} {} (id {})", object.program ? "program" : "map", object.name, object.id));
  for (const auto& link : link_names())
    if (!links_before_up_.count(link) && link.starts_with("wanlab"))  // wanlab0, wanlabh0: our interface names
      found.push_back("link " + link + " in the root namespace");
  return found;
}

}  // namespace wanlab::emulator
