#include "wanlab/base/idle_poll.hpp"

#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/base/wake_lead.hpp"  // cpu_relax

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace wanlab::base {

// Shared with the pollers (MAP_SHARED, so a plain futex, not a private one):
// `ready` counts those that hold none of our files, `started` lets them spin
// once they are in their cgroup, `active` pauses them.
struct IdlePollers::Shared {
  alignas(64) std::uint32_t ready = 0;
  alignas(64) std::uint32_t started = 0;
  alignas(64) std::uint32_t active = 1;
};

namespace {

namespace fs = std::filesystem;
constexpr std::string_view kCgroupPrefix = "wanlab-idle-";

void futex_wait(std::uint32_t* word, std::uint32_t expected) {
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::uint32_t* word) { ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

// Waits until *word >= at_least, at most `limit`; whether it got there.
bool wait_for_count(std::uint32_t* word, std::uint32_t at_least, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  for (std::uint32_t seen; (seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) < at_least;) {
    if (std::chrono::steady_clock::now() >= give_up) return false;
    const timespec slice{0, 10'000'000};
    ::syscall(SYS_futex, word, FUTEX_WAIT, seen, &slice, nullptr, 0);
  }
  return true;
}

// The top of the hierarchy that holds the cpu controller: a cgroup v1 mount
// with the cpu option, else a cgroup v2 mount that offers cpu.
struct CpuHierarchy {
  std::string top;
  bool v2 = false;
};

bool has_word(const std::string& text, std::string_view word, char separator) {
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, separator))
    if (item == word) return true;
  return false;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::optional<CpuHierarchy> cpu_hierarchy() {
  std::string mounts;
  try {
    mounts = read_kernel_file("/proc/self/mountinfo");
  } catch (const FileError&) {
    return std::nullopt;
  }
  std::optional<CpuHierarchy> v2;
  std::istringstream lines(mounts);
  std::string line;
  while (std::getline(lines, line)) {
    // id parent dev root MOUNT-POINT options [optional...] - TYPE source SUPER-OPTIONS
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream before(line.substr(0, dash));
    std::istringstream after(line.substr(dash + 3));
    std::string id, parent, dev, root, mount_point, type, source, super_options;
    before >> id >> parent >> dev >> root >> mount_point;
    after >> type >> source >> super_options;
    if (type == "cgroup" && has_word(super_options, "cpu", ',')) return CpuHierarchy{mount_point, false};
    if (type == "cgroup2" && !v2) {
      try {
        if (has_word(first_line(read_kernel_file(mount_point + "/cgroup.controllers")), "cpu", ' '))
          v2 = CpuHierarchy{mount_point, true};
      } catch (const FileError&) {
      }
    }
  }
  return v2;
}

// 0, or the errno of writing `text` to a cgroup's control file.
int write_control(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t written = ::write(fd, text.data(), text.size());
  const int err = written < 0 ? errno : 0;
  ::close(fd);
  return err;
}

// rmdir a cgroup, waiting out the moment after its last task was reaped
// while the kernel still counts it (EBUSY).
bool remove_cgroup(const std::string& dir) {
  for (int tries = 0; tries < 100; ++tries) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The pid in a pollers' cgroup's name (wanlab-idle-<pid>-<n>), if it is one.
std::optional<pid_t> owner_of(std::string_view name) {
  if (!name.starts_with(kCgroupPrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kCgroupPrefix.size());
  const auto dash = rest.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  try {
    const auto pid = parse_integer<pid_t>(rest.substr(0, dash), 1, INT_MAX);
    parse_integer<int>(rest.substr(dash + 1), 0, INT_MAX);  // the count of pollers' cgroups it made
    return pid;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// In the forked poller (system calls only: the process we forked from has
// other threads, whose locks we may hold copies of): dies with the thread
// that forked it, holds none of its files (a testbed's namespaces, sockets,
// BPF objects) and says so, waits until it is in its cgroup, then spins
// while active.
[[noreturn]] void poll_in_child(std::uint32_t* ready, std::uint32_t* started, std::uint32_t* active, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);  // the parent went before the line above
  ::syscall(SYS_close_range, 0u, ~0u, 0u);
  ::prctl(PR_SET_NAME, "wanlab-idlepoll");
  __atomic_add_fetch(ready, 1u, __ATOMIC_RELEASE);
  futex_wake_all(ready);
  while (__atomic_load_n(started, __ATOMIC_ACQUIRE) == 0) futex_wait(started, 0);
  for (;;) {
    if (__atomic_load_n(active, __ATOMIC_RELAXED) == 0)
      futex_wait(active, 0);
    else
      cpu_relax();
  }
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

IdlePollers::IdlePollers() {
  remove_stale_idle_cgroups();
  const auto hierarchy = cpu_hierarchy();
  if (!hierarchy) {
    why_none_ = "no cgroup hierarchy with the cpu controller is mounted (/proc/self/mountinfo)";
    return;
  }
  static std::atomic<int> made{0};
  const std::string dir = fmt::format("{}/{}{}-{}", hierarchy->top, kCgroupPrefix, ::getpid(), made++);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    why_none_ = fmt::format("making cgroup {}: {}", dir, std::strerror(errno));
    return;
  }
  cgroup_ = dir;
  if (const int err = write_control(dir + "/cpu.idle", "1"); err != 0) {
    why_none_ = err == ENOENT
                    ? (hierarchy->v2 ? fmt::format("{}/cgroup.subtree_control does not enable the cpu controller "
                                                   "for its cgroups, so none can be made idle",
                                                   hierarchy->top)
                                     : fmt::format("{} has no cpu.idle (Linux 5.15 or later has it)", dir))
                    : fmt::format("{}/cpu.idle: {}", dir, std::strerror(err));
    stop();
    return;
  }

  void* memory = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    why_none_ = fmt::format("mapping the pollers' shared page: {}", std::strerror(errno));
    stop();
    return;
  }
  shared_ = new (memory) Shared{};

  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) CPU_ZERO(&allowed);
  const pid_t self = ::getpid();
  std::string failed;
  std::uint32_t forked = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    const pid_t pid = ::fork();
    if (pid < 0) break;  // no more processes: polling is a help, not a need
    forked++;
    if (pid == 0) poll_in_child(&shared_->ready, &shared_->started, &shared_->active, self);
    // Pinned and SCHED_IDLE from here, once it holds none of our files (until
    // then it runs at its normal priority, so it gets there soon): a CPU where
    // any of that fails gets no poller.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_param none{};
    if (!wait_for_count(&shared_->ready, forked, std::chrono::seconds(5)) ||
        ::sched_setaffinity(pid, sizeof(one), &one) != 0 || ::sched_setscheduler(pid, SCHED_IDLE, &none) != 0) {
      kill_and_reap(pid);
      continue;
    }
    pids_.push_back(pid);
    if (const int err = write_control(dir + "/cgroup.procs", std::to_string(pid)); err != 0) {
      failed = fmt::format("moving a poller into {}: {}", dir, std::strerror(err));
      break;
    }
  }
  if (!failed.empty() || pids_.empty()) {
    why_none_ = !failed.empty() ? failed : "no poller could be pinned to a CPU at SCHED_IDLE";
    stop();
    return;
  }
  __atomic_store_n(&shared_->started, 1u, __ATOMIC_RELEASE);
  futex_wake_all(&shared_->started);
}

IdlePollers::~IdlePollers() { stop(); }

void IdlePollers::stop() {
  for (pid_t pid : pids_) kill_and_reap(pid);
  pids_.clear();
  if (!cgroup_.empty()) remove_cgroup(cgroup_);
  cgroup_.clear();
  if (shared_ != nullptr) ::munmap(shared_, sizeof(Shared));
  shared_ = nullptr;
}

void IdlePollers::set_active(bool active) {
  if (shared_ == nullptr) return;
  const std::uint32_t word = active ? 1 : 0;
  if (__atomic_exchange_n(&shared_->active, word, __ATOMIC_RELAXED) != word && active) futex_wake_all(&shared_->active);
}

bool IdlePollers::active() const {
  return shared_ != nullptr && __atomic_load_n(&shared_->active, __ATOMIC_RELAXED) != 0;
}

std::uint64_t IdlePollers::busy_ticks() const {
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  std::uint64_t ns = 0;
  for (pid_t pid : pids_) {
    clockid_t clock{};
    timespec used{};
    if (::clock_getcpuclockid(pid, &clock) == 0 && ::clock_gettime(clock, &used) == 0)
      ns += static_cast<std::uint64_t>(used.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(used.tv_nsec);
  }
  return ticks_per_second > 0 ? ns / (1'000'000'000u / static_cast<std::uint64_t>(ticks_per_second)) : 0;
}

std::vector<std::string> idle_cgroups_found() {
  std::vector<std::string> found;
  const auto hierarchy = cpu_hierarchy();
  if (!hierarchy) return found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(hierarchy->top, error))
    if (entry.is_directory(error) && owner_of(entry.path().filename().string())) found.push_back(entry.path());
  return found;
}

std::vector<std::string> remove_stale_idle_cgroups() {
  std::vector<std::string> removed;
  for (const std::string& dir : idle_cgroups_found()) {
    const pid_t owner = *owner_of(fs::path(dir).filename().string());
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // its wanlab still runs
    if (::rmdir(dir.c_str()) == 0) removed.push_back(dir);
  }
  return removed;
}

}  // namespace wanlab::base
