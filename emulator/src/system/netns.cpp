#include "wanlab/emulator/netns.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <exception>
#include <filesystem>
#include <thread>

namespace wanlab::emulator {
namespace {

std::string netns_path(const std::string& name) { return std::string(kNetnsDir) + "/" + name; }

// /run/netns must be a shared mount so namespaces mounted later show up in
// every mount namespace; ip(8) does the same.
void prepare_netns_dir() {
  if (::mkdir(kNetnsDir, 0755) < 0 && errno != EEXIST) base::throw_errno(std::string("creating ") + kNetnsDir);
  if (::mount("", kNetnsDir, "none", MS_SHARED | MS_REC, nullptr) == 0) return;
  if (errno != EINVAL) base::throw_errno(std::string("making ") + kNetnsDir + " shared");
  base::check(::mount(kNetnsDir, kNetnsDir, "none", MS_BIND | MS_REC, nullptr),
              std::string("bind-mounting ") + kNetnsDir);
  base::check(::mount("", kNetnsDir, "none", MS_SHARED | MS_REC, nullptr),
              std::string("making ") + kNetnsDir + " shared");
}

ino_t netns_inode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) < 0) return 0;
  return st.st_ino;
}

}  // namespace

void create_netns(const std::string& name) {
  prepare_netns_dir();
  const std::string path = netns_path(name);
  base::UniqueFd file(::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0));
  if (!file) base::throw_errno(name + ": creating " + path);
  file.reset();

  // unshare() moves only the calling thread, so a short-lived thread makes the
  // namespace and the bind mount keeps it alive after the thread exits.
  std::exception_ptr failure;
  std::thread maker([&] {
    try {
      base::check(::unshare(CLONE_NEWNET), name + ": unshare(CLONE_NEWNET)");
      const std::string self = "/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/ns/net";
      base::check(::mount(self.c_str(), path.c_str(), "none", MS_BIND, nullptr), name + ": mounting " + path);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  maker.join();
  if (failure) {
    ::unlink(path.c_str());
    std::rethrow_exception(failure);
  }
}

void name_current_netns(const std::string& name) {
  prepare_netns_dir();
  const std::string path = netns_path(name);
  base::UniqueFd file(::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0));
  if (!file) base::throw_errno(name + ": creating " + path);
  file.reset();
  const std::string self = "/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/ns/net";
  if (::mount(self.c_str(), path.c_str(), "none", MS_BIND, nullptr) < 0) {
    const int err = errno;
    ::unlink(path.c_str());
    base::throw_errno(name + ": mounting " + path, err);
  }
}

void delete_netns(const std::string& name) {
  const std::string path = netns_path(name);
  if (::umount2(path.c_str(), MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
    base::throw_errno(name + ": unmounting " + path);
  if (::unlink(path.c_str()) < 0 && errno != ENOENT) base::throw_errno(name + ": removing " + path);
}

bool netns_exists(const std::string& name) { return ::access(netns_path(name).c_str(), F_OK) == 0; }

std::vector<std::string> list_netns(const std::string& prefix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsDir, ec)) {
    std::string name = entry.path().filename();
    if (name.starts_with(prefix)) names.push_back(std::move(name));
  }
  return names;
}

base::UniqueFd open_netns(const std::string& name) {
  base::UniqueFd fd(::open(netns_path(name).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) base::throw_errno(name + ": opening network namespace " + netns_path(name));
  return fd;
}

std::vector<pid_t> netns_pids(const std::string& name) {
  std::vector<pid_t> pids;
  const ino_t target = netns_inode(netns_path(name));
  if (target == 0) return pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid_text = entry.path().filename();
    if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    if (netns_inode(entry.path() / "ns/net") == target) pids.push_back(std::stoi(pid_text));
  }
  return pids;
}

NetnsScope::NetnsScope(int netns_fd) { enter(netns_fd, "entering network namespace"); }

NetnsScope::NetnsScope(const std::string& name) {
  base::UniqueFd target = open_netns(name);
  enter(target.get(), name + ": entering network namespace");
}

void NetnsScope::enter(int netns_fd, const std::string& what) {
  previous_ = base::UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!previous_) base::throw_errno("opening the current network namespace");
  base::check(::setns(netns_fd, CLONE_NEWNET), what);
}

NetnsScope::~NetnsScope() {
  if (previous_) ::setns(previous_.get(), CLONE_NEWNET);
}

}  // namespace wanlab::emulator
