// Hostile input's reproductions, each a regression test: hostile or careless names,
// broken state files, planted links, wrapping event times, input files that
// are not files, bad numbers on the command line, pools that cannot emulate.
//
// wanlab runs as root and some of these once deleted directories, so the
// whole module runs in a private mount namespace with tmpfs over /run and
// /tmp: a regression can only harm the sandbox. The real `wanlab` binary, real
// testbeds (namespaces, tc program, daemon) run inside it.
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "support/wanlab_cli.hpp"
#include "wanlab/emulator/testbed.hpp"

using namespace wanlab;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct PrivateMounts {
  PrivateMounts() {
    // One thread here (fixtures run first), as unshare(CLONE_NEWNS) requires.
    if (::unshare(CLONE_NEWNS) != 0) throw std::runtime_error("unshare(CLONE_NEWNS) failed");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      throw std::runtime_error("making / private failed");
    // The binary may live under /tmp (a checkout there): keep a copy in the new /run.
    const std::string binary = test::wanlab_bin();
    mount_tmpfs("/run");
    fs::create_directories("/run/wanlab-test-bin");
    fs::copy_file(binary, "/run/wanlab-test-bin/wanlab");
    fs::permissions("/run/wanlab-test-bin/wanlab", fs::perms::owner_all);
    ::setenv("WANLAB_BIN", "/run/wanlab-test-bin/wanlab", 1);
    mount_tmpfs("/tmp");
  }
  static void mount_tmpfs(const char* dir) {
    if (::mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
      throw std::runtime_error(std::string("mounting tmpfs on ") + dir + " failed");
  }
};
BOOST_TEST_GLOBAL_FIXTURE(PrivateMounts);

const char* kScenario = R"(name = "hostile"
[defaults]
delay = "5ms"
rate = "100mbit"
[[dc]]
name = "east"
[[dc]]
name = "west"
)";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// One error line that contains `part`, followed at most by the command's
// usage line (which bad command lines get).
bool one_line_with(const test::CliResult& result, const std::string& part) {
  std::string out = result.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const auto newline = out.find('\n');
  const std::string first = out.substr(0, newline);
  const bool rest_is_usage = newline == std::string::npos || (out.compare(newline + 1, 13, "usage: wanlab") == 0 &&
                                                              out.find('\n', newline + 1) == std::string::npos);
  return rest_is_usage && first.find(part) != std::string::npos;
}

// A testbed brought up through the CLI and always taken down.
struct Testbed {
  explicit Testbed(const std::string& name, const std::string& text = kScenario) : file(name, text), name(name) {
    const auto up = test::wanlab({"up", file.path(), "--name", name, "--quiet"});
    BOOST_TEST_REQUIRE(up.status == 0, up.output);
  }
  ~Testbed() { test::wanlab({"down", name}); }
  std::string dir() const { return "/run/wanlab/" + name; }
  test::ScenarioFile file;
  std::string name;
};

std::size_t entries(const std::string& dir) {
  std::size_t count = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) ++count;
  return count;
}

}  // namespace

BOOST_AUTO_TEST_CASE(names_never_become_paths_outside_the_run_root) {
  fs::create_directories("/tmp/v/sub");
  fs::create_directories("/run/wanlab/keep");
  write_text("/run/wanlab/keep/state.toml", "not ours\n");
  for (const std::string name : {"../../tmp/v", "", ".", "..", "a.x", "a UP;$(id)", "/tmp/v"}) {
    BOOST_TEST_CONTEXT("down \"" << name << "\"") {
      const auto down = test::wanlab({"down", name});
      BOOST_TEST(down.status == 2);
      BOOST_TEST(down.output.find("testbed name") != std::string::npos, down.output);
    }
  }
  BOOST_TEST(fs::exists("/tmp/v/sub"));
  BOOST_TEST(read_text("/run/wanlab/keep/state.toml") == "not ours\n");

  test::ScenarioFile file("names", kScenario);
  for (const std::string& name : std::vector<std::string>{"../../tmp/y", "a UP;$(id)", "a.x", std::string(5000, 'n')}) {
    BOOST_TEST_CONTEXT("up --name \"" << name.substr(0, 20) << "\"") {
      const auto up = test::wanlab({"up", file.path(), "--name", name, "--quiet"});
      BOOST_TEST(up.status == 2);
      BOOST_TEST(one_line_with(up, "--name: testbed name"), up.output);
      BOOST_TEST(up.output.size() < 300u);
    }
  }
  BOOST_TEST(!fs::exists("/tmp/y"));
  BOOST_TEST(entries("/run/wanlab") == 1u);  // only "keep"
  BOOST_TEST(entries("/run/netns") == 0u);

  const auto hosts = test::wanlab({"hosts", "--testbed", ".."});
  BOOST_TEST(hosts.status == 2);
  BOOST_TEST(one_line_with(hosts, "--testbed: testbed name \"..\""), hosts.output);
  ::setenv("WANLAB_TESTBED", "../../tmp/v", 1);
  const auto from_env = test::wanlab({"hosts"});
  ::unsetenv("WANLAB_TESTBED");
  BOOST_TEST(from_env.status == 1);
  BOOST_TEST(one_line_with(from_env, "$WANLAB_TESTBED: testbed name"), from_env.output);
}

// With "a" and "a-x" up, `down a` takes only a's namespaces and daemon; a
// foreign name under our prefix is never touched.
BOOST_AUTO_TEST_CASE(down_takes_only_its_own_testbed) {
  Testbed other("a-x");
  {
    Testbed mine("a");
    write_text("/run/netns/wanlab-a.x.core", "");  // not a name we make: must survive `down a`
    const auto down = test::wanlab({"down", "a"});
    BOOST_TEST(down.status == 0, down.output);
  }
  BOOST_TEST(fs::exists("/run/netns/wanlab-a.x.core"));
  fs::remove("/run/netns/wanlab-a.x.core");
  BOOST_TEST(test::leftovers("a").empty(), test::leftovers("a"));
  BOOST_TEST(fs::exists("/run/netns/wanlab-a-x.core"));
  BOOST_TEST(fs::exists("/run/netns/wanlab-a-x.east-0"));
  const auto status = test::wanlab({"status"});
  BOOST_TEST(status.output.find("a-x: 2 DCs, 2 hosts") != std::string::npos, status.output);
  BOOST_TEST(status.output.find("daemon running") != std::string::npos, status.output);
}

BOOST_AUTO_TEST_CASE(a_broken_state_file_is_a_message_and_down_still_cleans) {
  Testbed good("good");
  fs::create_directories("/run/wanlab/t");
  const std::string broken = "/run/wanlab/t/state.toml";
  write_text(broken, "name=\"t\"\nhosts=[1,2]\n");  // once a SIGSEGV in hosts, status and down
  const auto hosts = test::wanlab({"hosts", "--testbed", "t"});
  BOOST_TEST(hosts.status == 1);
  BOOST_TEST(one_line_with(hosts, broken + ":1:1: "), hosts.output);

  const auto status = test::wanlab({"status"});
  BOOST_TEST(status.status == 0, status.output);
  BOOST_TEST(status.output.find("good: 2 DCs, 2 hosts") != std::string::npos, status.output);
  BOOST_TEST(status.output.find("t: left over or half-built (" + broken) != std::string::npos, status.output);
  BOOST_TEST(test::wanlab({"status", "--json"}).status == 0);

  // A copy of another testbed's state must not lead `down t` to that testbed.
  fs::copy_file(good.dir() + "/state.toml", broken, fs::copy_options::overwrite_existing);
  const auto copied = test::wanlab({"hosts", "--testbed", "t"});
  BOOST_TEST(copied.status == 1);
  BOOST_TEST(one_line_with(copied, R"(name: expected "t", got "good")"), copied.output);

  const auto down = test::wanlab({"down", "t"});
  BOOST_TEST(down.status == 0, down.output);
  BOOST_TEST(!fs::exists("/run/wanlab/t"));
  BOOST_TEST(fs::exists("/run/netns/wanlab-good.core"));
  BOOST_TEST(test::wanlab({"hosts", "--testbed", "good"}).status == 0);

  // A state file that is a link is not read.
  fs::create_directories("/run/wanlab/u");
  fs::create_symlink(good.dir() + "/state.toml", "/run/wanlab/u/state.toml");
  const auto linked = test::wanlab({"hosts", "--testbed", "u"});
  BOOST_TEST(linked.status == 1);
  BOOST_TEST(one_line_with(linked, "is a symbolic link"), linked.output);
  BOOST_TEST(test::wanlab({"down", "u"}).status == 0);
  BOOST_TEST(fs::exists(good.dir() + "/state.toml"));
}

BOOST_AUTO_TEST_CASE(a_broken_changes_file_is_a_message_before_anything_changes) {
  Testbed bed("chg");
  write_text(bed.dir() + "/changes.toml", "change=[1]\n");  // once a SIGSEGV in set
  const auto set = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "chg"});
  BOOST_TEST(set.status == 1);
  BOOST_TEST(one_line_with(set, bed.dir() + "/changes.toml:1:9: change[0]: expected a table, got 1"), set.output);
  BOOST_TEST(read_text(bed.dir() + "/changes.toml") == "change=[1]\n");
  fs::remove(bed.dir() + "/changes.toml");
  const auto again = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "chg"});
  BOOST_TEST(again.status == 0, again.output);
}

// A live schedule's record (SCENARIO.md#schedules) names a copy in the run
// directory; anything else is one line naming changes.toml's line, and
// nothing changes. The copy itself is read only where its steps are needed
// (current_scenario with ScheduleFiles::read; the data plane holds them): a
// `set` of link keys leaves it unread, however large, and reading one that is
// gone or broken is one line naming changes.toml's line or the copy's.
BOOST_AUTO_TEST_CASE(a_live_schedules_record_is_read_strictly) {
  Testbed bed("sched");
  const std::string head = "[[change]]\nat_mono_ns = 1\nfrom = \"east\"\nto = \"west\"\nsymmetric = true\n";
  fs::create_directories(bed.dir() + "/schedules");
  write_text(bed.dir() + "/schedules/2.csv", "time,rate\n0s,fast\n");
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"(schedule = { file = "/etc/passwd" })",
       "changes.toml:6:21: change[0].schedule.file: expected a copy in the run directory like"},
      {R"(schedule = { file = "schedules/../state.toml" })", "change[0].schedule.file: expected a copy"},
      {R"(schedule = { file = "schedules/2.csv", resolution = "1ms" })",
       "change[0].schedule.resolution: only for a mahimahi trace"},
      {"no_schedule = false", "changes.toml:6:15: change[0].no_schedule: only true"},
      {"no_schedule = true\nschedule = { file = \"schedules/2.csv\" }", "give schedule or no_schedule, not both"},
      {"schedul = true", R"(unknown key "schedul" in change[0]; did you mean "schedule"?)"},
      {"", "changes.toml:1:1: change[0]: changes nothing: give fields, schedule or no_schedule"},
  };
  for (const auto& [line, message] : cases) {
    write_text(bed.dir() + "/changes.toml", head + line + "\n");
    const auto set = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "sched"});
    BOOST_TEST(set.status == 1, line);
    BOOST_TEST(one_line_with(set, message), line << ": " << set.output);
    BOOST_TEST(read_text(bed.dir() + "/changes.toml") == head + line + "\n");
  }
  const std::vector<std::pair<std::string, std::string>> copies{
      {R"(schedule = { file = "schedules/1.csv" })",
       ": change[0].schedule.file: " + bed.dir() + "/schedules/1.csv: cannot read trace"},
      {R"(schedule = { file = "schedules/2.csv" })", bed.dir() + "/schedules/2.csv:2: rate: expected a rate"},
  };
  for (const auto& [line, message] : copies) {  // (the set rewrote changes.toml: its lines moved)
    write_text(bed.dir() + "/changes.toml", head + line + "\n");
    const auto set = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "sched"});
    BOOST_TEST(set.status == 0, line << ": " << set.output);
    std::string error = "(no error)";
    try {
      emulator::current_scenario(emulator::load_state("sched"), emulator::ScheduleFiles::read);
    } catch (const std::exception& thrown) {
      error = thrown.what();
    }
    BOOST_TEST((error.find(message) != std::string::npos && error.find('\n') == std::string::npos),
               line << ": " << error);
  }
  fs::remove(bed.dir() + "/changes.toml");
  const auto again = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "sched"});
  BOOST_TEST(again.status == 0, again.output);
}

// Links planted where the daemon and `set` write; the targets stay untouched.
BOOST_AUTO_TEST_CASE(root_writes_never_follow_planted_links) {
  Testbed bed("links");
  for (const char* victim :
       {"/tmp/victim-stats-tmp", "/tmp/victim-stats", "/tmp/victim-changes-tmp", "/tmp/victim-changes"})
    write_text(victim, "keep\n");
  fs::create_symlink("/tmp/victim-stats-tmp", bed.dir() + "/releaser.toml.tmp");
  fs::remove(bed.dir() + "/releaser.toml");
  fs::create_symlink("/tmp/victim-stats", bed.dir() + "/releaser.toml");
  fs::create_symlink("/tmp/victim-changes-tmp", bed.dir() + "/changes.toml.tmp");
  fs::create_symlink("/tmp/victim-changes", bed.dir() + "/changes.toml");
  const auto set_through_link = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "links"});
  BOOST_TEST(set_through_link.status == 1);  // changes.toml is a link: not read, not replaced
  BOOST_TEST(one_line_with(set_through_link, "is a symbolic link"), set_through_link.output);
  fs::remove(bed.dir() + "/changes.toml");
  const auto set = test::wanlab({"set", "east", "west", "--rate", "50mbit", "--testbed", "links"});
  BOOST_TEST(set.status == 0, set.output);
  std::this_thread::sleep_for(2500ms);  // the daemon publishes its statistics every second
  for (const char* victim :
       {"/tmp/victim-stats-tmp", "/tmp/victim-stats", "/tmp/victim-changes-tmp", "/tmp/victim-changes"})
    BOOST_TEST(read_text(victim) == "keep\n", victim);
  BOOST_TEST(!fs::is_symlink(bed.dir() + "/changes.toml"));
  if (test::wanlab({"status"}).output.find("release path nfqueue") != std::string::npos) {
    BOOST_TEST(!fs::is_symlink(bed.dir() + "/releaser.toml"));  // replaced, not followed
  } else {
    BOOST_TEST_MESSAGE("release path fq: no releaser statistics to check");
  }
}

BOOST_AUTO_TEST_CASE(event_times_never_wrap_to_the_past) {
  const std::string wrapping =
      std::string(kScenario) + "[[event]]\nat = \"18446744073s\"\nbetween = [\"east\", \"west\"]\nrate = \"1mbit\"\n";
  test::ScenarioFile file("wrap", wrapping);
  const auto up = test::wanlab({"up", file.path(), "--quiet"});
  BOOST_TEST(up.status == 1);
  BOOST_TEST(one_line_with(
                 up, file.path() + ":10:6: event.at: expected a time like \"35ms\", got \"18446744073s\" (too large"),
             up.output);
  BOOST_TEST(entries("/run/wanlab") <= 1u);  // nothing of "hostile"
  BOOST_TEST(!fs::exists("/run/wanlab/hostile"));

  // The largest time is accepted and is simply never due.
  Testbed far("far", std::string(kScenario) +
                         "[[event]]\nat = \"9223372036s\"\nbetween = [\"east\", \"west\"]\nrate = \"1mbit\"\n");
  std::this_thread::sleep_for(1500ms);
  BOOST_TEST(read_text(far.dir() + "/daemon.log").find("applied") == std::string::npos,
             read_text(far.dir() + "/daemon.log"));
}

BOOST_AUTO_TEST_CASE(input_files_must_be_small_regular_files) {
  BOOST_REQUIRE(::mkfifo("/tmp/fifo.toml", 0600) == 0);
  write_text("/tmp/huge.toml", std::string(17u << 20, '#'));
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"up", "/dev/zero"}, "/dev/zero: cannot read scenario: not a regular file (a character device)"},
      {{"up", "/tmp/fifo.toml"}, "/tmp/fifo.toml: cannot read scenario: not a regular file (a FIFO)"},
      {{"up", "/tmp/huge.toml"}, "/tmp/huge.toml: cannot read scenario: 17.0 MiB is over the limit of 16.0 MiB"},
      {{"train", "/dev/zero"}, "/dev/zero: cannot read experiment: not a regular file (a character device)"},
      {{"train", "/tmp/fifo.toml", "--simulate"},
       "/tmp/fifo.toml: cannot read experiment: not a regular file (a FIFO)"},
      {{"compare", "/dev/zero"}, "/dev/zero: cannot read results: not a regular file (a character device)"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.args[0] << " " << c.args[1]) {
      const auto start = std::chrono::steady_clock::now();
      const auto result = test::wanlab(c.args);
      BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
      BOOST_TEST(result.status == 1);
      BOOST_TEST(one_line_with(result, c.message), result.output);
    }
  }
  BOOST_TEST(entries("/run/wanlab") <= 1u);
}

BOOST_AUTO_TEST_CASE(numbers_on_the_command_line_are_checked_before_anything_runs) {
  test::ScenarioFile file("numbers", kScenario);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"stats", "--interval", "x"}, "--interval: expected a number from 0.01 to 86400, got \"x\""},
      {{"stats", "--interval", "1abc"}, "--interval: expected a number"},
      {{"stats", "--interval", "inf", "--watch"}, "--interval: expected a number"},
      {{"stats", "--interval", "0"}, "--interval: expected a number"},
      {{"attach", "veth0", file.path(), "--queue-num", "x"},
       "--queue-num: expected a whole number from 0 to 65535, got \"x\""},
      {{"attach", "veth0", file.path(), "--queue-num", "70000"}, "--queue-num: expected a whole number"},
      {{"attach", "veth0", file.path(), "--pid", "1x"}, "--pid: expected a whole number"},
      {{"attach", "veth0", file.path(), "--netns", "../../proc/1/ns/net"},
       "--netns: expected a network namespace name"},
      {{"demo", file.path(), "--seconds", "x"}, "--seconds: expected a number from 0.1 to 3600, got \"x\""},
      {{"up", file.path(), "--release", "fast"}, "--release: expected auto, fq or nfqueue, got \"fast\""},
      {{"down", "-x"}, "unknown option \"-x\""},
      {{"down", "--all", "hostile"}, "give testbed names or --all, not both"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.args[0] << " " << c.args[1] << " " << c.args.back()) {
      const auto result = test::wanlab(c.args);
      BOOST_TEST(result.status == 2);
      BOOST_TEST(result.output.find(c.message) != std::string::npos, result.output);
    }
  }
  BOOST_TEST(!fs::exists("/run/wanlab/hostile"));  // demo checked --seconds before building

  Testbed bed("help");
  const auto help = test::wanlab({"down", "-h"});
  BOOST_TEST(help.status == 0);
  BOOST_TEST(help.output.starts_with("usage: wanlab down"), help.output);
  BOOST_TEST(fs::exists(bed.dir()));  // "-h" is not a testbed
}

BOOST_AUTO_TEST_CASE(a_pool_that_cannot_emulate_is_refused) {
  test::ScenarioFile file("loopback", std::string(kScenario) + "[network]\npool = \"127.0.0.0/16\"\n");
  const auto up = test::wanlab({"up", file.path(), "--quiet"});
  BOOST_TEST(up.status == 1);
  BOOST_TEST(one_line_with(up, "network.pool: 127.0.0.0/16 overlaps 127.0.0.0/8 (loopback"), up.output);
  BOOST_TEST(!fs::exists("/run/wanlab/hostile"));
}

BOOST_AUTO_TEST_CASE(nothing_is_left_behind) {
  const auto down = test::wanlab({"down", "--all"});
  BOOST_TEST(down.status == 0, down.output);
  BOOST_TEST(entries("/run/netns") == 0u);
  // The run root is ours: --all also clears what the first case planted there.
  BOOST_TEST(entries("/run/wanlab") == 0u);
}
