#include "wanlab/harness/run/runtime.hpp"

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "wanlab/emulator/launch.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "protocol/control_auth.hpp"

namespace wanlab::harness {
namespace em = wanlab::emulator;
namespace fs = std::filesystem;
namespace {

struct Captured {
  int status = -1;  // exit code, 128 + signal, or -1 if it timed out
  std::string output;
};

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& arg : argv) out.push_back(const_cast<char*>(arg.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs argv with stdout and stderr captured; kills it after `timeout`.
Captured capture(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  base::Pipe output = base::make_pipe();
  base::SpawnOptions options;
  options.own_group = true;
  options.stdin_fd = base::kDevNull;
  options.stdout_fd = options.stderr_fd = output.write.get();
  base::Child child = base::spawn(argv, options);
  output.write.reset();
  Captured result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(-child.pid(), SIGKILL);
      child.wait();
      result.output += fmt::format("\n(killed after {} s)", timeout.count());
      return result;
    }
    pollfd p{output.read.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(output.read.get(), buffer, sizeof(buffer));
    if (n <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  result.status = child.wait();
  return result;
}

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const auto newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// Reads `path`'s program headers, calling `segment(header, file)` for each
// until it returns true.
template <typename Segment>
void for_each_segment(const std::string& path, Segment segment) {
  std::ifstream elf(path, std::ios::binary);
  Elf64_Ehdr header{};
  if (!elf.read(reinterpret_cast<char*>(&header), sizeof(header)) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64)
    throw std::runtime_error(path + ": not a 64-bit ELF file");
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr program{};
    elf.seekg(static_cast<std::streamoff>(header.e_phoff + static_cast<std::uint64_t>(i) * header.e_phentsize));
    if (!elf.read(reinterpret_cast<char*>(&program), sizeof(program))) break;
    if (segment(program, elf)) return;
  }
}

// The bytes of `program`'s segment, if it is of `type` and at most 64 KiB.
std::optional<std::string> segment_bytes(const Elf64_Phdr& program, std::ifstream& elf, std::uint32_t type) {
  if (program.p_type != type || program.p_filesz == 0 || program.p_filesz > 65536) return std::nullopt;
  std::string bytes(program.p_filesz, '\0');
  elf.seekg(static_cast<std::streamoff>(program.p_offset));
  if (!elf.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) return std::nullopt;
  return bytes;
}

// The program interpreter (PT_INTERP) an ELF executable names, "" if none.
std::string elf_interpreter(const std::string& path) {
  std::string interpreter;
  for_each_segment(path, [&](const Elf64_Phdr& program, std::ifstream& elf) {
    const auto bytes = segment_bytes(program, elf, PT_INTERP);
    if (bytes) interpreter = bytes->c_str();
    return bytes.has_value();
  });
  return interpreter;
}

// The GNU build ID of an ELF file in hex, as `readelf -n` shows it, "" if none.
std::string gnu_build_id(const std::string& path) {
  std::string id;
  for_each_segment(path, [&](const Elf64_Phdr& program, std::ifstream& elf) {
    const auto notes = segment_bytes(program, elf, PT_NOTE);
    // Note fields are padded to the segment's alignment: 4 bytes, or 8 in segments aligned so.
    const std::size_t pad = program.p_align == 8 ? 8 : 4;
    const auto align = [pad](std::size_t n) { return (n + pad - 1) / pad * pad; };
    for (std::size_t at = 0; notes && at + sizeof(Elf64_Nhdr) <= notes->size();) {
      Elf64_Nhdr note{};
      std::memcpy(&note, notes->data() + at, sizeof(note));
      const std::size_t name_at = at + sizeof(note), desc_at = name_at + align(note.n_namesz);
      if (desc_at + note.n_descsz > notes->size()) break;
      if (note.n_type == NT_GNU_BUILD_ID && notes->compare(name_at, note.n_namesz, "GNU\0", 4) == 0) {
        for (std::size_t i = 0; i < note.n_descsz; ++i)
          id += fmt::format("{:02x}", static_cast<unsigned char>((*notes)[desc_at + i]));
        return true;
      }
      at = desc_at + align(note.n_descsz);
    }
    return false;
  });
  return id;
}

// The shared objects `exe` loads, as its own loader resolves them
// (`ld.so --list`, what ldd runs): the worker binary's, which need not be the
// same as the process that builds the root file system (a test, say).
std::set<std::string> needed_libraries(const std::string& exe, const std::string& interpreter) {
  const auto listed = capture({interpreter, "--list", exe}, std::chrono::seconds(30));
  if (listed.status != 0)
    throw std::runtime_error(fmt::format("{} --list {}: {}", interpreter, exe, last_line(listed.output)));
  std::set<std::string> libraries;
  std::istringstream lines(listed.output);
  for (std::string line; std::getline(lines, line);) {
    // "\tlibfmt.so.9 => /lib/x86_64-linux-gnu/libfmt.so.9 (0x...)" or "\t/lib64/ld-linux-x86-64.so.2 (0x...)"
    const auto slash = line.find('/');
    const auto address = line.rfind(" (0x");
    if (slash == std::string::npos || address == std::string::npos || address < slash) continue;
    libraries.insert(line.substr(slash, address - slash));
  }
  return libraries;
}

// The names the loader looks a library up by (its soname, e.g. libfmt.so.9)
// are symbolic links next to the file (libfmt.so.9.1.0): copy those too.
void copy_links_to(const fs::path& library, const fs::path& root) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(library.parent_path(), ec)) {
    if (!entry.is_symlink(ec)) continue;
    const fs::path target = fs::canonical(entry.path(), ec);
    if (ec || target != library) continue;
    const fs::path link = root / entry.path().relative_path();
    fs::remove(link, ec);
    fs::create_symlink(library.filename(), link, ec);
  }
}

void copy_into(const fs::path& source, const fs::path& root, const fs::path& at) {
  const fs::path target = root / at.relative_path();
  fs::create_directories(target.parent_path());
  fs::copy_file(source, target, fs::copy_options::overwrite_existing);
}

pid_t spawn_in_own_group(const std::vector<std::string>& argv) {
  base::SpawnOptions options;
  options.own_group = true;
  options.stdin_fd = base::kDevNull;
  return base::spawn(argv, options).release();
}

// ---- podman ---------------------------------------------------------------

class Podman final : public WorkerRuntime {
 public:
  explicit Podman(const RuntimeSetup& setup) : setup_(setup) {}

  std::string name() const override { return "podman"; }
  std::string detail() const override { return detail_; }

  // Runs the worker binary in a throw-away container. Returns "" if it
  // worked, else why not.
  std::string probe() {
    if (!on_path("podman")) return "podman is not installed (scripts/setup.sh installs it)";
    const auto version = capture({"podman", "--version"}, std::chrono::seconds(30));
    if (version.status != 0) return "podman --version: " + last_line(version.output);
    if (!setup_.image.empty()) {
      const std::string why = image_problem();
      if (!why.empty()) return why;
    }
    std::vector<std::string> argv{"podman", "run", "--rm", "--network", "none"};
    add_common(argv);
    argv.insert(argv.end(), {kWorkerExe, "worker", "--probe"});
    const auto probe = capture(argv, std::chrono::seconds(120));
    if (probe.status != 0 || probe.output.find("wanlab worker: ok") == std::string::npos) {
      std::string why = fmt::format("podman run failed ({}): {}", probe.status, last_line(probe.output));
      if (probe.output.find("hybrid mode") != std::string::npos)
        why += " (containers/setup-podman.sh moves the controllers off cgroup v2)";
      return why;
    }
    detail_ = last_line(version.output) +
              (setup_.image.empty() ? ", root file system from the running binary" : ", image " + setup_.image);
    return "";
  }

  pid_t launch(const LaunchSpec& spec) override {
    std::vector<std::string> argv{"podman",
                                  "run",
                                  "--rm",
                                  "--name",
                                  spec.name,
                                  "--hostname",
                                  spec.hostname,
                                  "--network",
                                  "ns:" + std::string(em::kNetnsDir) + "/" + spec.netns,
                                  "--volume",
                                  setup_.control_dir + ":" + setup_.control_dir};
    for (const auto& file : setup_.etc_files)
      argv.insert(argv.end(), {"--volume", file.source + ":" + file.target + ":ro"});
    add_common(argv);
    argv.push_back(kWorkerExe);
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
    const pid_t pid = spawn_in_own_group(argv);
    names_.push_back(spec.name);
    return pid;
  }

  void cleanup() noexcept override {
    if (names_.empty()) return;
    try {
      std::vector<std::string> argv{"podman", "rm", "--force", "--ignore", "--time", "0"};
      argv.insert(argv.end(), names_.begin(), names_.end());
      capture(argv, std::chrono::seconds(60));
    } catch (...) {
    }
    names_.clear();
  }

 private:
  // Limits within our own hard limits (podman's defaults exceed them here and
  // the runtime then fails to set them), the root file system or image.
  void add_common(std::vector<std::string>& argv) const {
    const auto limits = em::podman_limit_args();
    argv.insert(argv.end(), limits.begin(), limits.end());
    argv.insert(argv.end(), {"--log-driver", "none", "--pull", "never"});
    if (setup_.image.empty()) {
      argv.insert(argv.end(), {"--rootfs", setup_.rootfs_dir});
    } else {
      argv.push_back(setup_.image);
    }
  }

  // What is wrong with the image, "" if nothing: it must exist and hold the
  // binary the coordinator runs, by the GNU build ID containers/build.sh
  // labels it with.
  std::string image_problem() const {
    const auto inspect =
        capture({"podman", "image", "inspect", "--format", "{{index .Labels \"wanlab.build-id\"}}", setup_.image},
                std::chrono::seconds(60));
    if (inspect.status != 0) return last_line(inspect.output) + " (containers/build.sh builds it)";
    std::string label = last_line(inspect.output);
    if (label == "<no value>") label = "";
    const std::string own = gnu_build_id(setup_.exe);
    if (label == own && !own.empty()) return "";
    return fmt::format("it holds {}, not {} (build ID {}): rebuild it with containers/build.sh {}",
                       label.empty() ? "no wanlab build ID" : "wanlab build ID " + label, setup_.exe,
                       own.empty() ? "none" : own, setup_.exe);
  }

  RuntimeSetup setup_;
  std::string detail_;
  std::vector<std::string> names_;
};

// ---- sandbox --------------------------------------------------------------

// Everything the cloned child needs, prepared before clone(): after it, the
// child only makes system calls.
struct SandboxChild {
  std::string rootfs;
  std::string control_in_rootfs;  // the mount point inside rootfs
  std::string control_dir;
  std::string proc_in_rootfs;
  std::vector<base::HostIdentity::File> files_in_rootfs;  // targets inside rootfs
  std::string hostname;
  std::vector<std::string> argv_storage;
  std::vector<char*> argv;
  int stdin_fd = -1;
};

[[noreturn]] void child_fail(const char* what) { base::fail_in_child("wanlab sandbox", what); }

int sandbox_main(void* arg) {
  auto* child = static_cast<SandboxChild*>(arg);
  ::setpgid(0, 0);
  if (child->stdin_fd >= 0) ::dup2(child->stdin_fd, STDIN_FILENO);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) child_fail("making mounts private");
  if (::mount(child->rootfs.c_str(), child->rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
    child_fail("bind-mounting the root file system");
  if (::mount(child->control_dir.c_str(), child->control_in_rootfs.c_str(), nullptr, MS_BIND, nullptr) < 0)
    child_fail("bind-mounting the control directory");
  if (::mount("proc", child->proc_in_rootfs.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
    child_fail("mounting /proc");
  for (const auto& file : child->files_in_rootfs)
    if (::mount(file.source.c_str(), file.target.c_str(), nullptr, MS_BIND, nullptr) < 0)
      child_fail(file.target.c_str());
  if (::chdir(child->rootfs.c_str()) < 0) child_fail("entering the root file system");
  if (::syscall(SYS_pivot_root, ".", ".") < 0) child_fail("pivot_root");
  if (::umount2(".", MNT_DETACH) < 0) child_fail("detaching the old root");
  if (::chdir("/") < 0) child_fail("chdir /");
  if (::sethostname(child->hostname.c_str(), child->hostname.size()) < 0) child_fail("sethostname");
  ::execv(child->argv[0], child->argv.data());
  child_fail("starting the worker");
}

class Sandbox final : public WorkerRuntime {
 public:
  Sandbox(const RuntimeSetup& setup, std::string detail) : setup_(setup), detail_(std::move(detail)) {}

  std::string name() const override { return "sandbox"; }
  std::string detail() const override { return detail_; }

  pid_t launch(const LaunchSpec& spec) override {
    SandboxChild child;
    child.rootfs = setup_.rootfs_dir;
    child.control_dir = setup_.control_dir;
    child.control_in_rootfs = (fs::path(setup_.rootfs_dir) / fs::path(setup_.control_dir).relative_path()).string();
    child.proc_in_rootfs = setup_.rootfs_dir + "/proc";
    for (const auto& file : setup_.etc_files) {
      const fs::path target = fs::path(setup_.rootfs_dir) / fs::path(file.target).relative_path();
      if (!fs::exists(target)) std::ofstream(target.string());  // a mount point
      child.files_in_rootfs.push_back({file.source, target.string()});
    }
    fs::create_directories(child.control_in_rootfs);
    fs::create_directories(child.proc_in_rootfs);
    child.hostname = spec.hostname;
    child.argv_storage.push_back(kWorkerExe);
    child.argv_storage.insert(child.argv_storage.end(), spec.args.begin(), spec.args.end());
    child.argv = c_argv(child.argv_storage);
    base::UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    child.stdin_fd = devnull.get();

    constexpr std::size_t kStackSize = 256 * 1024;
    std::vector<char> stack(kStackSize);
    pid_t pid = -1;
    {
      // The child is created in the calling thread's network namespace.
      em::NetnsScope in_host(spec.netns);
      pid = ::clone(sandbox_main, stack.data() + stack.size(), CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | SIGCHLD,
                    &child);
    }
    if (pid < 0) base::throw_errno(fmt::format("worker {}: starting its sandbox (clone)", spec.worker));
    return pid;
  }

  void cleanup() noexcept override {}  // the namespaces end with their processes

 private:
  RuntimeSetup setup_;
  std::string detail_;
};

// ---- external -------------------------------------------------------------

class External final : public WorkerRuntime {
 public:
  explicit External(const RuntimeSetup& setup) : setup_(setup) {}
  std::string name() const override { return "external"; }
  std::string detail() const override { return "workers started outside wanlab"; }
  pid_t launch(const LaunchSpec& spec) override {
    std::string command = fmt::format("ip netns exec {} {}", spec.netns, setup_.exe);
    for (const auto& arg : spec.args) command += " " + arg;
    if (setup_.progress) setup_.progress(fmt::format("start worker {}: {}", spec.worker, command));
    return -1;
  }
  void cleanup() noexcept override {}

 private:
  RuntimeSetup setup_;
};

// ---- slurm ----------------------------------------------------------------

// Each worker as a one-task step on its host's node. srun is our child: its
// exit is the worker's, and SIGTERM or SIGKILL to it ends the task (srun
// forwards the one, Slurm kills the step's tasks on the other). The secret
// goes in srun's environment, which Slurm passes on to the task.
class Slurm final : public WorkerRuntime {
 public:
  explicit Slurm(const RuntimeSetup& setup) : setup_(setup) {}
  std::string name() const override { return "slurm"; }
  std::string detail() const override {
    const char* job = std::getenv("SLURM_JOB_ID");
    return fmt::format("srun steps of job {} on {} nodes", job ? job : "?", nodes());
  }
  pid_t launch(const LaunchSpec& spec) override {
    const auto node = setup_.slurm_nodes.find(spec.host);
    if (node == setup_.slurm_nodes.end())
      throw std::runtime_error(fmt::format("worker {}: host {} has no node of the allocation", spec.worker, spec.host));
    std::vector<std::string> argv = em::srun_on_node(node->second);
    argv.insert(argv.end(), {"--kill-on-bad-exit=1", "--job-name=" + spec.name, setup_.exe});
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
    base::SpawnOptions options;
    options.own_group = true;
    options.stdin_fd = base::kDevNull;
    options.environment = {{run_detail::kRunSecretVariable, setup_.secret_hex}};
    return base::spawn(argv, options).release();
  }
  void cleanup() noexcept override {}

 private:
  std::size_t nodes() const {
    std::set<std::string> distinct;
    for (const auto& [host, node] : setup_.slurm_nodes) distinct.insert(node);
    return distinct.size();
  }
  RuntimeSetup setup_;
};

}  // namespace

RuntimeChoice parse_runtime_choice(std::string_view text) {
  if (text == "auto") return RuntimeChoice::automatic;
  if (text == "podman") return RuntimeChoice::podman;
  if (text == "sandbox") return RuntimeChoice::sandbox;
  if (text == "external") return RuntimeChoice::external;
  if (text == "slurm") return RuntimeChoice::slurm;
  throw std::invalid_argument(fmt::format("expected auto, podman, sandbox, external or slurm, got \"{}\"", text));
}

void make_rootfs(const std::string& exe, const std::string& dir) {
  const fs::path root(dir);
  fs::create_directories(root);
  copy_into(exe, root, kWorkerExe);
  fs::permissions(root / fs::path(kWorkerExe).relative_path(), fs::perms::owner_all | fs::perms::group_read |
                                                                   fs::perms::group_exec | fs::perms::others_read |
                                                                   fs::perms::others_exec);
  const fs::path interpreter = elf_interpreter(exe);
  if (interpreter.empty()) throw std::runtime_error(exe + ": not a dynamically linked executable");
  for (const auto& library : needed_libraries(exe, interpreter)) {
    const fs::path real = fs::canonical(library);
    copy_into(real, root, real);
    copy_links_to(real, root);
    std::error_code ec;
    if (!interpreter.empty() && fs::equivalent(real, interpreter, ec)) copy_into(real, root, interpreter);
  }
  for (const char* mount_point : {"proc", "dev", "sys", "etc", "run", "tmp"})
    fs::create_directories(root / mount_point);
}

std::unique_ptr<WorkerRuntime> make_runtime(const RuntimeSetup& setup) {
  if (setup.choice == RuntimeChoice::external) return std::make_unique<External>(setup);
  if (setup.choice == RuntimeChoice::slurm) {
    if (!setup.image.empty()) throw std::invalid_argument("--image needs the podman runtime");
    return std::make_unique<Slurm>(setup);
  }
  if (setup.image.empty()) make_rootfs(setup.exe, setup.rootfs_dir);
  if (setup.choice == RuntimeChoice::sandbox) {
    if (!setup.image.empty()) throw std::invalid_argument("--image needs the podman runtime");
    return std::make_unique<Sandbox>(setup,
                                     "own namespaces (mount, PID, UTS) in the host's network namespace, as asked");
  }
  auto podman = std::make_unique<Podman>(setup);
  const std::string why_not = podman->probe();
  if (why_not.empty()) return podman;
  if (!setup.image.empty()) throw std::runtime_error("--image " + setup.image + ": " + why_not);
  if (setup.choice == RuntimeChoice::podman)
    throw std::runtime_error("the podman runtime does not work here: " + why_not);
  if (setup.progress)
    setup.progress("podman does not work here (" + why_not +
                   "); workers run in wanlab's sandbox (--runtime sandbox picks it outright)");
  return std::make_unique<Sandbox>(
      setup, "own namespaces (mount, PID, UTS) in the host's network namespace; podman unusable: " + why_not);
}

}  // namespace wanlab::harness
