// What `wanlab launch` gives each rank, which hosts a --hosts list names, and
// the hosts file an emulated host sees: from a testbed's state, no kernel.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <map>
#include <string>

#include "wanlab/emulator/launch.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace em = wanlab::emulator;

namespace {

em::TestbedState three_dcs() {
  em::TestbedState state;
  state.name = "unit";
  state.dcs = {"east", "west", "europe"};
  std::uint32_t address = 0x0a4d0001;  // 10.77.0.1
  for (const auto& [dc, count] : std::map<std::string, int>{{"east", 2}, {"west", 1}, {"europe", 2}})
    for (int i = 0; i < count; ++i) {
      em::Host host;
      host.name = dc + "-" + std::to_string(i);
      host.dc = dc;
      host.ipv4 = address++;
      state.hosts.push_back(host);
    }
  return state;
}

std::map<std::string, std::string> as_map(const em::Environment& environment) {
  std::map<std::string, std::string> map;
  for (const auto& [name, value] : environment) {
    BOOST_TEST(!map.contains(name), name << " set twice");
    map[name] = value;
  }
  return map;
}

std::vector<std::string> names(const std::vector<em::Host>& hosts) {
  std::vector<std::string> out;
  for (const auto& host : hosts) out.push_back(host.name);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(hosts_are_named_as_hosts_dcs_or_all_each_once) {
  const auto state = three_dcs();
  BOOST_TEST(names(em::select_hosts(state, "all")) == names(state.hosts));
  BOOST_TEST(names(em::select_hosts(state, "west,east")) == (std::vector<std::string>{"west-0", "east-0", "east-1"}));
  BOOST_TEST(names(em::select_hosts(state, "europe-1,east-0")) == (std::vector<std::string>{"europe-1", "east-0"}));
  BOOST_CHECK_EXCEPTION(em::select_hosts(state, "east,mars"), std::invalid_argument, [](const auto& error) {
    return std::string(error.what()) == "\"mars\" is neither a host nor a DC of testbed unit (wanlab hosts lists them)";
  });
  BOOST_CHECK_THROW(em::select_hosts(state, "east,east-1"), std::invalid_argument);
  BOOST_CHECK_THROW(em::select_hosts(state, "east,,west"), std::invalid_argument);
  BOOST_CHECK_THROW(em::select_hosts(state, ""), std::invalid_argument);
  // A name is quoted as what it is: a control character does not reach the terminal.
  BOOST_CHECK_EXCEPTION(em::select_hosts(state, "e\x1b[2J"), std::invalid_argument, [](const auto& error) {
    return std::string(error.what()).starts_with("\"e\\x1b[2J\" is neither");
  });
  // With a DC named "all", "all" would mean two things: refused, the DC still named by its hosts.
  em::TestbedState with_all = state;
  with_all.dcs.push_back("all");
  em::Host host;
  host.name = "all-0";
  host.dc = "all";
  with_all.hosts.push_back(host);
  BOOST_CHECK_EXCEPTION(em::select_hosts(with_all, "all"), std::invalid_argument, [](const auto& error) {
    return std::string(error.what()).find("also a DC of testbed unit") != std::string::npos;
  });
  BOOST_TEST(names(em::select_hosts(with_all, "all-0,west")) == (std::vector<std::string>{"all-0", "west-0"}));
}

BOOST_AUTO_TEST_CASE(each_rank_gets_torchruns_variables) {
  ::unsetenv("OMP_NUM_THREADS");
  const auto state = three_dcs();
  em::LaunchPlan plan;
  plan.argv = {"true"};
  for (const char* name : {"west-0", "west-0", "east-1"})
    for (const auto& host : state.hosts)
      if (host.name == name) plan.ranks.push_back({host, {}});
  plan.ranks[2].extra = {{"WANLAB_STAGE", "1"}};
  plan.threads_per_rank = 3;
  const auto second = as_map(em::rank_environment(state, plan, 1));
  BOOST_TEST(second.at("RANK") == "1");
  BOOST_TEST(second.at("WORLD_SIZE") == "3");
  BOOST_TEST(second.at("LOCAL_RANK") == "1");
  BOOST_TEST(second.at("LOCAL_WORLD_SIZE") == "2");
  BOOST_TEST(second.at("GROUP_RANK") == "0");
  BOOST_TEST(second.at("GROUP_WORLD_SIZE") == "2");
  BOOST_TEST(second.at("MASTER_ADDR") == "west-0");
  BOOST_TEST(second.at("MASTER_PORT") == "29500");
  BOOST_TEST(second.at("OMP_NUM_THREADS") == "3");
  BOOST_TEST(second.at("WANLAB_DC") == "west");
  BOOST_TEST(second.at("WANLAB_TESTBED") == "unit");
  BOOST_TEST(!second.contains("WANLAB_STAGE"));
  const auto third = as_map(em::rank_environment(state, plan, 2));
  BOOST_TEST(third.at("LOCAL_RANK") == "0");
  BOOST_TEST(third.at("LOCAL_WORLD_SIZE") == "1");
  BOOST_TEST(third.at("GROUP_RANK") == "1");
  BOOST_TEST(third.at("WANLAB_HOST") == "east-1");
  BOOST_TEST(third.at("WANLAB_STAGE") == "1");
  // A user's own OMP_NUM_THREADS is kept: it is not set for the rank.
  ::setenv("OMP_NUM_THREADS", "7", 1);
  BOOST_TEST(!as_map(em::rank_environment(state, plan, 0)).contains("OMP_NUM_THREADS"));
  ::unsetenv("OMP_NUM_THREADS");
  plan.master_addr = "east-1";
  BOOST_TEST(as_map(em::rank_environment(state, plan, 0)).at("MASTER_ADDR") == "east-1");
  BOOST_CHECK_THROW(em::rank_environment(state, plan, 3), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(the_hosts_file_names_every_host_at_its_ipv4_address) {
  const auto text = em::hosts_file_text(three_dcs().hosts);
  BOOST_TEST(text.find("127.0.0.1\tlocalhost\n") != std::string::npos);
  BOOST_TEST(text.find("10.77.0.1\teast-0\n10.77.0.2\teast-1\n10.77.0.3\teurope-0\n") != std::string::npos, text);
  BOOST_TEST(text.find("10.77.0.5\twest-0\n") != std::string::npos, text);
}

// --image reaches podman as one argv word: it must not read as an option or
// as nothing podman resolves.
BOOST_AUTO_TEST_CASE(an_image_is_a_reference_never_an_option) {
  for (const char* good : {"localhost/wanlab-worker:0a1b", "docker.io/library/debian:12", "debian", "registry:5000/x/y",
                           "debian@sha256:0123456789abcdef", "Debian_12.x"})
    BOOST_CHECK_NO_THROW(em::check_image_reference(good));
  for (const char* bad :
       {"--privileged", "-v/:/host", "", "debian 12", "debian;true", "/abs", ".hidden", "a\nb", "debi\xc3\xa4n"}) {
    BOOST_TEST_CONTEXT(bad) {
      try {
        em::check_image_reference(bad);
        BOOST_ERROR("accepted");
      } catch (const std::invalid_argument& error) {
        BOOST_TEST(std::string(error.what()).starts_with("expected an image reference"), error.what());
      }
    }
  }
  BOOST_CHECK_THROW(em::check_image_reference(std::string(256, 'a')), std::invalid_argument);
}

// A working directory with ':' would split podman's --volume SRC:DST.
BOOST_AUTO_TEST_CASE(a_container_rank_refuses_a_working_directory_podman_cannot_mount) {
  const em::TestbedState state = three_dcs();
  em::LaunchPlan plan;
  plan.argv = {"true"};
  plan.ranks = {em::LaunchRank{state.hosts.front(), {}}};
  plan.container = em::LaunchContainer{""};
  // (Refused before anything is written: an accepted one writes the testbed's identity files.)
  try {
    em::container_argv(state, plan, 0, "c", "/tmp/a:b");
    BOOST_ERROR("accepted");
  } catch (const std::invalid_argument& error) {
    BOOST_TEST(std::string(error.what()).find("holds a ':'") != std::string::npos, error.what());
  }
}

BOOST_AUTO_TEST_CASE(a_slurm_task_gets_the_same_variables_from_slurms_placement) {
  BOOST_TEST(em::first_slurm_host("m[1-3],n5") == "m1");
  BOOST_TEST(em::first_slurm_host("gpu[007-009]") == "gpu007");
  BOOST_TEST(em::first_slurm_host("a,b") == "a");
  BOOST_TEST(em::first_slurm_host("node1") == "node1");
  for (const char* bad : {"m[", "m[]", "m[x-2]"}) BOOST_CHECK_THROW(em::first_slurm_host(bad), std::invalid_argument);
  BOOST_TEST(em::slurm_tasks_on_node("2(x3),1", 0) == 2u);
  BOOST_TEST(em::slurm_tasks_on_node("2(x3),1", 2) == 2u);
  BOOST_TEST(em::slurm_tasks_on_node("2(x3),1", 3) == 1u);
  BOOST_CHECK_THROW(em::slurm_tasks_on_node("2(x3),1", 4), std::out_of_range);
  for (const char* bad : {"x", "2(x", "2(3)", ""}) BOOST_CHECK_THROW(em::slurm_tasks_on_node(bad, 0), std::exception);

  // Rank 3 of 6: the second task on node 1 of gpu[01-03], two per node.
  std::map<std::string, std::string> slurm{{"SLURM_PROCID", "3"},
                                           {"SLURM_STEP_NUM_TASKS", "6"},
                                           {"SLURM_LOCALID", "1"},
                                           {"SLURM_NODEID", "1"},
                                           {"SLURM_STEP_NUM_NODES", "3"},
                                           {"SLURM_STEP_NODELIST", "gpu[01-03]"},
                                           {"SLURM_STEP_TASKS_PER_NODE", "2(x3)"},
                                           {"SLURMD_NODENAME", "gpu02"}};
  const auto variable = [&](const char* name) -> const char* {
    const auto found = slurm.find(name);
    return found == slurm.end() ? nullptr : found->second.c_str();
  };
  const em::SlurmTask task = em::slurm_task(variable);
  em::TestbedState state;
  state.name = "j42";
  state.machine = em::MachinePart{false, "west", 0x0a000002, 0x0a000001, {}};
  const em::Environment environment = em::slurm_rank_environment(state, task, 29500, 4);
  const std::map<std::string, std::string> got(environment.begin(), environment.end());
  const std::map<std::string, std::string> expected{{"RANK", "3"},
                                                    {"WORLD_SIZE", "6"},
                                                    {"LOCAL_RANK", "1"},
                                                    {"LOCAL_WORLD_SIZE", "2"},
                                                    {"GROUP_RANK", "1"},
                                                    {"GROUP_WORLD_SIZE", "3"},
                                                    {"ROLE_RANK", "3"},
                                                    {"ROLE_WORLD_SIZE", "6"},
                                                    {"MASTER_ADDR", "gpu01"},
                                                    {"MASTER_PORT", "29500"},
                                                    {"WANLAB_TESTBED", "j42"},
                                                    {"WANLAB_HOST", "gpu02"},
                                                    {"WANLAB_DC", "west"}};
  for (const auto& [name, value] : expected) BOOST_TEST(got.at(name) == value, name);
  // Outside a step, or with Slurm's variables broken, one line naming the variable.
  slurm.erase("SLURM_PROCID");
  try {
    em::slurm_task(variable);
    BOOST_FAIL("no error without SLURM_PROCID");
  } catch (const std::runtime_error& error) {
    BOOST_TEST(std::string(error.what()).find("$SLURM_PROCID is not set") != std::string::npos, error.what());
  }
  slurm["SLURM_PROCID"] = "three";
  BOOST_CHECK_THROW(em::slurm_task(variable), std::runtime_error);
  // Not a testbed of `wanlab join`: no machine, no DC to give.
  slurm["SLURM_PROCID"] = "3";
  BOOST_CHECK_THROW(em::slurm_rank_environment(em::TestbedState{}, em::slurm_task(variable), 29500, 1),
                    std::runtime_error);
}
