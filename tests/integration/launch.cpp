// Users' own distributed programs across the emulated DCs, as a user runs
// them: hosts that look like machines (`wanlab exec`), `wanlab launch`, and a
// real torch.distributed (gloo) job from examples/pytorch over the real WAN.
#include <signal.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "support/wanlab_cli.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/rtnl.hpp"
#include "wanlab/emulator/testbed.hpp"

using namespace wanlab;
using namespace std::chrono_literals;
namespace em = wanlab::emulator;

namespace {

// Three DCs, one host each; 10 ms one way and 200 Mbit/s between them, so a
// transfer of some MB takes a time no faster machine could beat.
const char* kThreeDc = R"(
name = "ltest"
[defaults]
delay = "10ms"
rate = "200mbit"
queue = "1bdp"
[host]
tcp_wmem_max = "4mb"
tcp_rmem_max = "6mb"
[[dc]]
name = "east"
hosts = 1
[[dc]]
name = "west"
hosts = 1
[[dc]]
name = "europe"
hosts = 1
)";

// Debian's python3-torch lives under /usr/bin/python3 (scripts/setup.sh
// installs it); a python3 earlier on PATH (pyenv, a venv) may lack it.
const char* kPython = "/usr/bin/python3";

struct Testbed {
  Testbed() : file("ltest", kThreeDc) {
    const auto up = test::wanlab({"up", file.path(), "--quiet", "--release", test::release_choice()});
    BOOST_TEST_REQUIRE(up.status == 0, up.output);
    state = em::load_state("ltest");
  }
  ~Testbed() { test::wanlab({"down", "ltest"}); }

  // Processes in any host's namespace.
  std::size_t processes_on_hosts() const {
    std::size_t count = 0;
    for (const auto& host : state.hosts) count += em::netns_pids(host.netns).size();
    return count;
  }

  test::ScenarioFile file;
  em::TestbedState state;
};

std::string machine_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::string launch_line(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("wanlab launch:")) return line;
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_program_on_a_host_sees_its_name_and_resolves_every_host) {
  const std::string hostname_before = machine_hostname();
  const std::string hosts_before = base::read_regular_file("/etc/hosts");
  Testbed bed;
  const auto seen = test::wanlab({"exec", "west-0", "--testbed", "ltest", "--", "sh", "-c",
                                  "hostname; getent hosts west-0 east-0 europe-0 | tr -s ' \\t' ' '"});
  BOOST_TEST_REQUIRE(seen.status == 0, seen.output);
  std::string expected = "west-0\n";
  for (const char* name : {"west-0", "east-0", "europe-0"})
    expected += em::ipv4_to_string(bed.state.host(name).ipv4) + " " + name + "\n";
  BOOST_TEST(seen.output == expected);
  // The machine's own name and hosts file are not touched.
  BOOST_TEST(machine_hostname() == hostname_before);
  BOOST_TEST(base::read_regular_file("/etc/hosts") == hosts_before);
}

BOOST_AUTO_TEST_CASE(gloo_across_three_dcs_through_launch) {
  BOOST_TEST_REQUIRE(test::run({kPython, "-c", "import torch.distributed"}).status == 0,
                     "python3-torch is not installed: scripts/setup.sh installs it");
  Testbed bed;
  const std::string json = "/tmp/wanlab-test-launch-gloo.json";
  std::filesystem::remove(json);
  const std::string script = test::source_dir() + "/examples/pytorch/p2p_allreduce.py";
  const auto run = test::wanlab({"launch", "--testbed", "ltest", "--hosts", "east-0,west,europe", "--", kPython, script,
                                 "--sizes", "0.25,4", "--repeats", "2", "--json", json});
  BOOST_TEST_REQUIRE(run.status == 0, run.output);
  BOOST_TEST(run.output.find("[0 east-0] gloo across 3 ranks: east-0 (east), west-0 (west), europe-0 (europe)") !=
                 std::string::npos,
             run.output);
  nlohmann::json measured;
  std::ifstream(json) >> measured;
  std::filesystem::remove(json);
  BOOST_TEST_REQUIRE(measured["rows"].size() == 2u);
  for (const auto& row : measured["rows"]) {
    const double bytes = row["mib"].get<double>() * 1024 * 1024;
    // No transfer beats the link: one-way delay plus serialization at 200
    // Mbit/s. Above, room for slow start, gloo, Python and a loaded machine.
    const double fastest = 0.010 + bytes * 8 / 200e6;
    for (const double seconds : row["p2p_s"].get<std::vector<double>>()) {
      BOOST_TEST(seconds >= fastest * 0.98, row["mib"] << " MiB point to point in " << seconds << " s");
      BOOST_TEST(seconds <= fastest * 10 + 1.0, row["mib"] << " MiB point to point in " << seconds << " s");
    }
    // An all-reduce crosses the WAN more than once (ring: 2 (n - 1) / n of the
    // data out of each rank, in steps of one RTT at least).
    for (const double seconds : row["allreduce_s"].get<std::vector<double>>())
      BOOST_TEST(seconds >= fastest, row["mib"] << " MiB all-reduce in " << seconds << " s");
  }
  BOOST_TEST(bed.processes_on_hosts() == 0u);
}

BOOST_AUTO_TEST_CASE(the_first_failing_rank_ends_the_others_and_nothing_is_left) {
  Testbed bed;
  const auto start = std::chrono::steady_clock::now();
  const auto run = test::wanlab({"launch", "--testbed", "ltest", "--grace", "2", "--", "sh", "-c",
                                 "if [ \"$RANK\" = 1 ]; then echo failing; exit 3; fi; exec sleep 600"});
  const auto took = std::chrono::steady_clock::now() - start;
  BOOST_TEST(run.status == 3, run.output);
  BOOST_TEST(run.output.find("[1 west-0] failing") != std::string::npos, run.output);
  BOOST_TEST(launch_line(run.output) == "wanlab launch: rank 1 (west-0) exited with 3; stopping the other ranks",
             run.output);
  BOOST_TEST(took < 30s);
  BOOST_TEST(test::eventually([&] { return bed.processes_on_hosts() == 0; }));
}

BOOST_AUTO_TEST_CASE(ranks_get_torchruns_environment) {
  Testbed bed;
  const auto run = test::wanlab({"launch", "--testbed", "ltest", "--hosts", "europe,east-0", "--per-host", "2",
                                 "--master-port", "29999", "--", "sh", "-c",
                                 "echo $RANK/$WORLD_SIZE $LOCAL_RANK/$LOCAL_WORLD_SIZE $GROUP_RANK "
                                 "$MASTER_ADDR:$MASTER_PORT $WANLAB_DC $(hostname)"});
  BOOST_TEST_REQUIRE(run.status == 0, run.output);
  for (const char* line :
       {"[0 europe-0] 0/4 0/2 0 europe-0:29999 europe europe-0\n",
        "[1 europe-0] 1/4 1/2 0 europe-0:29999 europe europe-0\n", "[2 east-0] 2/4 0/2 1 europe-0:29999 east east-0\n",
        "[3 east-0] 3/4 1/2 1 europe-0:29999 east east-0\n"})
    BOOST_TEST(run.output.find(line) != std::string::npos, line << " not in:\n" << run.output);
}

BOOST_AUTO_TEST_CASE(a_signal_or_a_killed_launcher_leaves_no_rank) {
  Testbed bed;
  {
    test::Running launch(test::wanlab_argv(
        {"launch", "--testbed", "ltest", "--grace", "1", "--", "sh", "-c", "trap '' TERM; echo up; sleep 600"}));
    BOOST_TEST_REQUIRE(launch.read_until("[2 europe-0] up", 10s), launch.output());
    ::kill(launch.pid(), SIGTERM);
    // Ranks that ignore SIGTERM are killed after the grace second.
    BOOST_TEST(launch.finish(15s) == 128 + SIGTERM, launch.output());
    BOOST_TEST(launch.output().find("wanlab launch: interrupted by signal 15") != std::string::npos);
    BOOST_TEST(test::eventually([&] { return bed.processes_on_hosts() == 0; }));
  }
  {
    test::Running launch(
        test::wanlab_argv({"launch", "--testbed", "ltest", "--", "sh", "-c", "echo up; exec sleep 600"}));
    BOOST_TEST_REQUIRE(launch.read_until("[2 europe-0] up", 10s), launch.output());
    ::kill(launch.pid(), SIGKILL);
    BOOST_TEST(launch.finish(15s) == 128 + SIGKILL);
    BOOST_TEST(test::eventually([&] { return bed.processes_on_hosts() == 0; }));
  }
}

BOOST_AUTO_TEST_CASE(bad_input_is_one_line_and_starts_nothing) {
  Testbed bed;
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--hosts", "east-0,mars", "--", "true"}, "wanlab launch: --hosts: \"mars\" is neither a host nor a DC"},
      {{"--hosts", "east,east-0", "--", "true"}, "wanlab launch: --hosts: host east-0 is named twice"},
      {{"--hosts", "east-0"}, "wanlab launch: expected a command after --"},
      {{"--per-host", "0", "--", "true"}, "wanlab launch: --per-host"},
      {{"east-0", "--", "true"}, "wanlab launch: hosts go in --hosts"},
  };
  for (const auto& bad : cases) {
    std::vector<std::string> args{"launch", "--testbed", "ltest"};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    const auto run = test::wanlab(args);
    BOOST_TEST(run.status == 2, run.output);
    BOOST_TEST(run.output.starts_with(bad.says), run.output);
  }
  // A program that is not there: the first rank to fail says so, the launch
  // stops the others (which may be stopped before they get as far) and fails.
  const auto missing = test::wanlab({"launch", "--testbed", "ltest", "--", "/nonexistent/program"});
  BOOST_TEST(missing.status == 127, missing.output);
  static const std::regex says_missing(
      R"(\[\d+ [a-z0-9-]+\] wanlab: /nonexistent/program: No such file or directory\n)");
  BOOST_TEST(std::regex_search(missing.output, says_missing), missing.output);
  static const std::regex stops_the_others(
      R"(wanlab launch: rank \d+ \([a-z0-9-]+\) exited with 127; stopping the other ranks\n)");
  BOOST_TEST(std::regex_search(missing.output, stops_the_others), missing.output);
  BOOST_TEST(bed.processes_on_hosts() == 0u);
}

// The examples' tiny GPT, trained across three DCs as a pipeline (a stage
// per DC) and with DDP: each learns exactly what one process learns (the
// examples' --check, to 1e-5), and no step beats the WAN.
BOOST_AUTO_TEST_CASE(pipeline_and_ddp_across_dcs_learn_what_one_process_learns) {
  BOOST_TEST_REQUIRE(test::run({kPython, "-c", "import torch.distributed"}).status == 0,
                     "python3-torch is not installed: scripts/setup.sh installs it");
  Testbed bed;
  for (const char* example : {"pipeline_gpt.py", "ddp_gpt.py"}) {
    const std::string json = std::string("/tmp/wanlab-test-launch-") + example + ".json";
    std::filesystem::remove(json);
    const auto run = test::wanlab({"launch",
                                   "--testbed",
                                   "ltest",
                                   "--",
                                   kPython,
                                   test::source_dir() + "/examples/pytorch/" + example,
                                   "--steps",
                                   "3",
                                   "--layers",
                                   "3",
                                   "--seq",
                                   "16",
                                   "--dim",
                                   "32",
                                   "--batch",
                                   "6",
                                   "--microbatches",
                                   "3",
                                   "--check",
                                   "--json",
                                   json});
    BOOST_TEST_REQUIRE(run.status == 0, example << ":\n" << run.output);
    BOOST_TEST(run.output.find(": the same (tolerance 1e-05)") != std::string::npos, run.output);
    nlohmann::json result;
    std::ifstream(json) >> result;
    std::filesystem::remove(json);
    BOOST_TEST_REQUIRE(result["losses"].size() == 3u);
    BOOST_TEST(result["largest_difference"].get<double>() <= 1e-5);
    // Pipeline: two hops forward and two back on the critical path; DDP: a
    // ring all-reduce over three ranks takes four steps of one hop. A hop
    // is 10 ms one way at least.
    for (const double seconds : result["step_s"].get<std::vector<double>>())
      BOOST_TEST(seconds >= 0.040, example << ": a step in " << seconds << " s");
  }
  // Streaming DiLoCo: two fragments synced in turn, each overlapped with a
  // step of compute, and every rank ends.
  const auto diloco = test::wanlab({"launch",        "--testbed",
                                    "ltest",         "--",
                                    kPython,         test::source_dir() + "/examples/pytorch/diloco_gpt.py",
                                    "--steps",       "6",
                                    "--layers",      "2",
                                    "--seq",         "16",
                                    "--dim",         "32",
                                    "--batch",       "6",
                                    "--inner-steps", "2",
                                    "--fragments",   "2"});
  BOOST_TEST(diloco.status == 0, diloco.output);
  BOOST_TEST(diloco.output.find("Streaming DiLoCo, H=2, 2 fragments, 3 ranks: median step") != std::string::npos,
             diloco.output);
  BOOST_TEST(bed.processes_on_hosts() == 0u);
}

// With an experiment file, a rank per worker of its plan, on the plan's host.
BOOST_AUTO_TEST_CASE(an_experiment_places_a_rank_per_stage_replica) {
  const std::string experiment = test::source_dir() + "/scenarios/experiments/ci-2dc.toml";
  const auto up = test::wanlab({"up", test::source_dir() + "/scenarios/ci.toml", "--quiet", "--release",
                                test::release_choice(), "--name", "lci"});
  BOOST_TEST_REQUIRE(up.status == 0, up.output);
  struct Down {
    ~Down() { test::wanlab({"down", "lci"}); }
  } down;
  const auto run = test::wanlab({"launch", "--testbed", "lci", "--experiment", experiment, "--", "sh", "-c",
                                 "echo $RANK/$WORLD_SIZE $WANLAB_STAGE/$WANLAB_STAGES "
                                 "$WANLAB_REPLICA/$WANLAB_REPLICAS $WANLAB_DC"});
  BOOST_TEST_REQUIRE(run.status == 0, run.output);
  // ci-2dc: two stages, two replicas (pp 2, dp 2) over east and west.
  std::set<std::string> stage_replicas;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line.substr(line.find("] ") + 2));
    std::string rank, stage, replica, dc;
    fields >> rank >> stage >> replica >> dc;
    BOOST_TEST(rank.ends_with("/4"), line);
    BOOST_TEST((dc == "east" || dc == "west"), line);
    stage_replicas.insert(stage + " " + replica);
  }
  BOOST_TEST(stage_replicas == (std::set<std::string>{"0/2 0/2", "0/2 1/2", "1/2 0/2", "1/2 1/2"}), run.output);
  const auto both =
      test::wanlab({"launch", "--testbed", "lci", "--experiment", experiment, "--hosts", "all", "--", "true"});
  BOOST_TEST(both.status == 2);
  BOOST_TEST(both.output.starts_with("wanlab launch: --experiment places the ranks"), both.output);
}

// Ranks in podman containers (the machine's own root file system): the same
// identity and environment, and no container left, also after a failure.
BOOST_AUTO_TEST_CASE(ranks_run_in_podman_containers_and_leave_none) {
  BOOST_TEST_REQUIRE(test::run({"podman", "--version"}).status == 0, "podman is not installed (scripts/setup.sh)");
  Testbed bed;
  const auto run = test::wanlab({"launch", "--testbed", "ltest", "--runtime", "podman", "--hosts", "west,europe", "--",
                                 "sh", "-c", "echo $(hostname) $RANK $(getent hosts east-0 | cut -d' ' -f1)"});
  BOOST_TEST_REQUIRE(run.status == 0, run.output);
  const std::string east = em::ipv4_to_string(bed.state.host("east-0").ipv4);
  BOOST_TEST(run.output.find("[0 west-0] west-0 0 " + east + "\n") != std::string::npos, run.output);
  BOOST_TEST(run.output.find("[1 europe-0] europe-0 1 " + east + "\n") != std::string::npos, run.output);
  const auto failed = test::wanlab({"launch", "--testbed", "ltest", "--runtime", "podman", "--grace", "1", "--", "sh",
                                    "-c", "if [ $RANK = 0 ]; then exit 4; fi; exec sleep 600"});
  BOOST_TEST(failed.status == 4, failed.output);
  BOOST_TEST(test::container_leftovers("ltest").empty(), test::container_leftovers("ltest"));
  BOOST_TEST(test::eventually([&] { return bed.processes_on_hosts() == 0; }));
  const auto bad = test::wanlab({"launch", "--testbed", "ltest", "--image", "x", "--", "true"});
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.output.starts_with("wanlab launch: --image needs --runtime podman"), bad.output);
}
