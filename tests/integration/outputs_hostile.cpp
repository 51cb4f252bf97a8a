// Outputs a user names (--out) as a careless or hostile user would name them:
// /dev/null, a FIFO, links planted in the output directory. The real `wanlab`
// binary runs as root; the cases aimed at /dev run in a private mount
// namespace whose /dev is a scratch tmpfs, so the real /dev/null is never
// at stake, whatever the binary does.
#include <boost/test/unit_test.hpp>

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/scratch.hpp"

namespace fs = std::filesystem;
namespace t = wanlab::test;

namespace {

std::string kind_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) < 0) return "absent";
  if (S_ISCHR(st.st_mode)) return "character device";
  if (S_ISFIFO(st.st_mode)) return "FIFO";
  if (S_ISLNK(st.st_mode)) return "link";
  if (S_ISDIR(st.st_mode)) return "directory";
  return S_ISREG(st.st_mode) ? "regular" : "other";
}

struct PrivateDevResult {
  t::CliResult cli;
  std::string null_kind;  // what /dev/null is after the run
  std::string fifo_kind;  // and /dev/fifo
};

// Runs `wanlab args` in a child that first moves into a private mount
// namespace and mounts a tmpfs on /dev holding a null device node (1, 3) and
// a FIFO; reports what the binary printed and what those two are afterwards.
PrivateDevResult wanlab_with_private_dev(const std::vector<std::string>& args) {
  int report[2];
  BOOST_REQUIRE(::pipe(report) == 0);
  const std::string bin = t::wanlab_bin();
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(report[0]);
    std::ostringstream out;
    if (::unshare(CLONE_NEWNS) < 0 || ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0 ||
        ::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") < 0 ||
        ::mknod("/dev/null", S_IFCHR | 0666, ::makedev(1, 3)) < 0 || ::mkfifo("/dev/fifo", 0600) < 0) {
      out << "setup failed: " << std::strerror(errno) << "\n";
    } else {
      std::vector<std::string> command{bin};
      command.insert(command.end(), args.begin(), args.end());
      const t::CliResult cli = t::run(command);
      out << cli.status << "\n" << kind_of("/dev/null") << "\n" << kind_of("/dev/fifo") << "\n" << cli.output;
    }
    const std::string text = out.str();
    [[maybe_unused]] const ssize_t written = ::write(report[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::istringstream in(t::read_to_eof(report[0]));
  ::close(report[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  PrivateDevResult result;
  std::string first;
  std::getline(in, first);
  BOOST_REQUIRE_MESSAGE(!first.starts_with("setup failed"), first);
  result.cli.status = std::stoi(first);
  std::getline(in, result.null_kind);
  std::getline(in, result.fifo_kind);
  result.cli.output.assign(std::istreambuf_iterator<char>(in), {});
  return result;
}

std::string experiment() { return t::source_dir() + "/scenarios/experiments/ci-2dc.toml"; }

std::size_t entries_in(const fs::path& dir) {
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++entries;
  return entries;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// `plot --out /dev/null` once renamed its SVG over /dev/null, leaving the
// host a regular file there. Now: exit 2, the option named, the node intact;
// the same for a FIFO, and for an output directory under a device.
BOOST_AUTO_TEST_CASE(outputs_aimed_at_devices_and_fifos_leave_them_as_they_were) {
  const t::Scratch scratch("outputs-dev");
  const std::string csv = scratch.file("points.csv", "x,y\n1,2\n2,3\n");
  for (const std::string target : {"/dev/null", "/dev/fifo"}) {
    const auto run = wanlab_with_private_dev({"plot", csv, "--x", "x", "--y", "y", "--out", target});
    BOOST_TEST(run.cli.status == 2, run.cli.output);
    const std::string kind = target == "/dev/null" ? "a character device" : "a FIFO";
    BOOST_TEST(run.cli.output.find("--out: " + target + ": " + kind + "; outputs are written only as regular files") !=
                   std::string::npos,
               run.cli.output);
    BOOST_TEST(run.null_kind == "character device");
    BOOST_TEST(run.fifo_kind == "FIFO");
  }
  // A directory under a device: refused before the simulation runs.
  const auto run = wanlab_with_private_dev({"train", experiment(), "--simulate", "--quiet", "--out", "/dev/null/run"});
  BOOST_TEST(run.cli.status == 2, run.cli.output);
  BOOST_TEST(run.cli.output.find("--out: /dev/null: not a directory (a character device)") != std::string::npos,
             run.cli.output);
  BOOST_TEST(run.cli.output.find("iterations on") == std::string::npos, run.cli.output);  // no run took place
  BOOST_TEST(run.null_kind == "character device");
}

// Links planted in `train --out DIR` (at a file or at ranks/) are found
// before the run, their targets untouched; a clean DIR gets every output as
// a regular file.
BOOST_AUTO_TEST_CASE(train_refuses_links_planted_in_its_output_directory) {
  const t::Scratch scratch("outputs-train");
  const std::string victim = scratch.file("victim", "keep me");
  fs::create_directory(scratch.dir / "victim-dir");
  for (const std::string planted : {"results.json", "trace.json", "timeline.svg", "card.yaml", "ranks"}) {
    const fs::path out = scratch.dir / ("out-" + planted);
    fs::create_directory(out);
    fs::create_symlink(planted == "ranks" ? scratch.dir / "victim-dir" : fs::path(victim), out / planted);
    const auto cli = t::wanlab({"train", experiment(), "--simulate", "--quiet", "--out", out.string()});
    BOOST_TEST(cli.status == 2, planted << ": " << cli.output);
    BOOST_TEST(cli.output.find("--out: " + (out / planted).string() + ": a symbolic link") != std::string::npos,
               cli.output);
    BOOST_TEST(cli.output.find("iterations on") == std::string::npos, cli.output);
    BOOST_TEST(entries_in(out) == 1u);
  }
  BOOST_TEST(read(victim) == "keep me");
  BOOST_TEST(entries_in(scratch.dir / "victim-dir") == 0u);

  const fs::path clean = scratch.dir / "clean" / "run";
  const auto cli = t::wanlab({"train", experiment(), "--simulate", "--quiet", "--out", clean.string()});
  BOOST_TEST(cli.status == 0, cli.output);
  for (const char* file : {"results.json", "trace.json", "timeline.svg", "card.yaml", "ranks/rank-0.json"})
    BOOST_TEST(kind_of((clean / file).string()) == "regular", file);
}

// `whatif --out DIR` followed a link at DIR/points (found before the sweep
// now) and at DIR/points/N (found when writing: never written through).
BOOST_AUTO_TEST_CASE(whatif_refuses_links_planted_at_its_points) {
  const t::Scratch scratch("outputs-whatif");
  fs::create_directory(scratch.dir / "victim-dir");
  const std::string sweep = scratch.file("sweep.toml", "experiment = \"" + experiment() +
                                                           "\"\n[set]\niterations = 2\n[axes]\n"
                                                           "\"schedule\" = [\"gpipe\", \"1f1b\"]\n");
  const fs::path out = scratch.dir / "out";
  fs::create_directory(out);
  fs::create_symlink(scratch.dir / "victim-dir", out / "points");
  auto cli = t::wanlab({"whatif", sweep, "--quiet", "--out", out.string()});
  BOOST_TEST(cli.status == 2, cli.output);
  BOOST_TEST(cli.output.find("--out: " + (out / "points").string() + ": a symbolic link") != std::string::npos,
             cli.output);

  fs::remove(out / "points");
  fs::create_directory(out / "points");
  fs::create_symlink(scratch.dir / "victim-dir", out / "points" / "2");
  cli = t::wanlab({"whatif", sweep, "--quiet", "--out", out.string()});
  BOOST_TEST(cli.status != 0, cli.output);
  BOOST_TEST(cli.output.find((out / "points" / "2").string() + ": a symbolic link; refusing to write through it") !=
                 std::string::npos,
             cli.output);
  BOOST_TEST(entries_in(scratch.dir / "victim-dir") == 0u);
}

// `plan --out DIR` checks its two files before the search.
BOOST_AUTO_TEST_CASE(plan_refuses_a_link_at_its_table) {
  const t::Scratch scratch("outputs-plan");
  const std::string victim = scratch.file("victim", "keep me");
  const fs::path out = scratch.dir / "out";
  fs::create_directory(out);
  fs::create_symlink(victim, out / "plans.csv");
  const auto cli = t::wanlab({"plan", experiment(), "--quiet", "--out", out.string()});
  BOOST_TEST(cli.status == 2, cli.output);
  BOOST_TEST(cli.output.find("--out: " + (out / "plans.csv").string() + ": a symbolic link") != std::string::npos,
             cli.output);
  BOOST_TEST(read(victim) == "keep me");
}
