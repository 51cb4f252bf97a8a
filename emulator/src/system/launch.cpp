#include "wanlab/emulator/launch.hpp"

#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "wanlab/base/interrupts.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/base/process.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/netns.hpp"

namespace wanlab::emulator {
namespace {

using Clock = std::chrono::steady_clock;

// One started rank: its process (the leader of its own group), the read end
// of its output, and what it printed since its last full line.
struct RunningRank {
  std::string prefix;  // "[2 west-0] "
  std::string label;   // "rank 2 (west-0)"
  base::Child child;   // the leader of the rank's process group; pid -1 once reaped
  base::UniqueFd output;
  std::string partial;
  std::optional<int> exit_code;
};

// Prints every full line of `text` (and, at the end, what is left) with the
// rank's prefix.
void print_lines(std::FILE* out, RunningRank& rank, std::string_view text, bool at_end) {
  rank.partial.append(text);
  std::size_t begin = 0;
  for (std::size_t newline; (newline = rank.partial.find('\n', begin)) != std::string::npos; begin = newline + 1)
    fmt::print(out, "{}{}\n", rank.prefix, std::string_view(rank.partial).substr(begin, newline - begin));
  rank.partial.erase(0, begin);
  if (at_end && !rank.partial.empty()) {
    fmt::print(out, "{}{}\n", rank.prefix, rank.partial);
    rank.partial.clear();
  }
  std::fflush(out);
}

// Reads what is there; closes the pipe at its end.
void drain(std::FILE* out, RunningRank& rank) {
  char buffer[8192];
  const ssize_t n = ::read(rank.output.get(), buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    print_lines(out, rank, {}, true);
    rank.output.reset();
    return;
  }
  print_lines(out, rank, std::string_view(buffer, static_cast<std::size_t>(n)), false);
}

void signal_groups(std::vector<RunningRank>& ranks, int signal) {
  for (auto& rank : ranks)
    if (rank.child.pid() > 0) ::kill(-rank.child.pid(), signal);
}

// How many of the plan's ranks are on `host`: all of them, or those before rank `before`.
int ranks_on_host(const LaunchPlan& plan, const std::string& host, std::size_t before) {
  const auto end = plan.ranks.begin() + static_cast<std::ptrdiff_t>(std::min(before, plan.ranks.size()));
  return static_cast<int>(
      std::count_if(plan.ranks.begin(), end, [&](const LaunchRank& rank) { return rank.host.name == host; }));
}

RunningRank start_rank(const TestbedState& state, const LaunchPlan& plan, std::size_t index,
                       const std::string& container_name) {
  const Host& host = plan.ranks[index].host;
  RunningRank rank;
  rank.prefix = fmt::format("[{} {}] ", index, host.name);
  rank.label = fmt::format("rank {} ({})", index, host.name);
  base::Pipe output = base::make_pipe(rank.label + ": a pipe for its output");
  base::SpawnOptions options;
  options.own_group = true;
  options.die_with_parent = true;
  options.stdin_fd = base::kDevNull;
  options.stdout_fd = options.stderr_fd = output.write.get();
  base::UniqueFd netns;
  if (plan.container) {
    // podman's client runs here; the container joins the host's namespace.
    rank.child =
        base::spawn(container_argv(state, plan, index, container_name, std::filesystem::current_path()), options);
  } else {
    netns = open_netns(host.netns);
    options.netns_fd = netns.get();
    options.identity = host_identity(state, host);
    options.environment = rank_environment(state, plan, index);
    rank.child = base::spawn(plan.argv, options);
  }
  rank.output = std::move(output.read);
  return rank;
}

// The containers of one launch: wanlab-<testbed>-launch-<our pid>-<rank>.
std::string container_name(const TestbedState& state, std::size_t rank) {
  return fmt::format("wanlab-{}-launch-{}-{}", state.name, ::getpid(), rank);
}

// Removes the launch's containers that are left (a rank killed before podman
// removed its own). Never throws.
void remove_containers(const TestbedState& state, const LaunchPlan& plan) noexcept {
  if (!plan.container) return;
  try {
    std::vector<std::string> argv{"podman", "rm", "--force", "--ignore", "--time", "0"};
    for (std::size_t i = 0; i < plan.ranks.size(); ++i) argv.push_back(container_name(state, i));
    base::SpawnOptions quiet;
    quiet.stdin_fd = base::kDevNull;
    quiet.stdout_fd = quiet.stderr_fd = base::kDevNull;
    base::spawn(argv, quiet).wait();
  } catch (...) {
  }
}

}  // namespace

std::vector<std::string> podman_limit_args() {
  rlimit files{}, processes{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  ::getrlimit(RLIMIT_NPROC, &processes);
  const auto limit = [](const rlimit& r, rlim_t most) {
    const auto value = std::min<rlim_t>(r.rlim_max, most);
    return fmt::format("{}:{}", value, value);
  };
  return {"--ulimit", "nofile=" + limit(files, 65536), "--ulimit", "nproc=" + limit(processes, 4096)};
}

void check_image_reference(std::string_view image) {
  constexpr std::size_t kMostChars = 255;
  const auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("._-/:@").find(c) != std::string_view::npos;
  };
  if (image.empty() || image.size() > kMostChars || std::isalnum(static_cast<unsigned char>(image.front())) == 0 ||
      !std::all_of(image.begin(), image.end(), allowed))
    throw std::invalid_argument(
        fmt::format("expected an image reference (a letter or digit, then letters, digits and "
                    ". _ - / : @; at most {}), got {}",
                    kMostChars, base::quoted(image)));
}

std::vector<std::string> container_argv(const TestbedState& state, const LaunchPlan& plan, std::size_t rank,
                                        const std::string& name, const std::string& workdir) {
  if (workdir.find(':') != std::string::npos)
    throw std::invalid_argument(
        fmt::format("the working directory {} holds a ':', which podman's --volume SRC:DST "
                    "cannot carry; launch from another directory",
                    base::quoted(workdir)));
  const Host& host = plan.ranks.at(rank).host;
  std::vector<std::string> argv{"podman",
                                "run",
                                "--rm",
                                "--name",
                                name,
                                "--network",
                                std::string("ns:") + kNetnsDir + "/" + host.netns,
                                "--hostname",
                                host.name,
                                "--log-driver",
                                "none",
                                "--pull",
                                "never",
                                "--workdir",
                                workdir};
  const auto limits = podman_limit_args();
  argv.insert(argv.end(), limits.begin(), limits.end());
  // The same files a plain rank sees over its own.
  for (const auto& file : host_identity(state, host).files)
    argv.insert(argv.end(), {"--volume", file.source + ":" + file.target + ":ro"});
  for (const auto& [name_, value] : rank_environment(state, plan, rank))
    argv.insert(argv.end(), {"--env", name_ + "=" + value});
  // What the rank writes in its working directory stays; elsewhere it goes
  // with the container.
  if (workdir != "/") argv.insert(argv.end(), {"--volume", workdir + ":" + workdir});
  // The machine's root as the container's, under an overlay (":O") so that
  // the OCI runtime can pivot_root into it and writes stay in the container.
  if (plan.container->image.empty())
    argv.insert(argv.end(), {"--rootfs", "/:O"});
  else
    argv.push_back(plan.container->image);
  argv.insert(argv.end(), plan.argv.begin(), plan.argv.end());
  return argv;
}

namespace {

// torchrun's variables, whoever placed the ranks (one box or Slurm).
struct RankPlace {
  std::size_t rank = 0, world = 1, local_rank = 0, local_world = 1, group = 0, groups = 1;
};

Environment torchrun_environment(const RankPlace& place, const std::string& master_addr, std::uint16_t master_port) {
  return {{"RANK", std::to_string(place.rank)},
          {"WORLD_SIZE", std::to_string(place.world)},
          {"LOCAL_RANK", std::to_string(place.local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(place.local_world)},
          {"GROUP_RANK", std::to_string(place.group)},
          {"GROUP_WORLD_SIZE", std::to_string(place.groups)},
          {"ROLE_RANK", std::to_string(place.rank)},
          {"ROLE_WORLD_SIZE", std::to_string(place.world)},
          {"MASTER_ADDR", master_addr},
          {"MASTER_PORT", std::to_string(master_port)}};
}

// A count in Slurm's variables: decimal digits only.
bool whole(std::string_view text, std::size_t& value) {
  try {
    value = base::parse_integer<std::size_t>(text, 0, 1u << 30);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// A user's own setting wins, as with torchrun.
void add_threads(Environment& environment, int threads) {
  if (!std::getenv("OMP_NUM_THREADS")) environment.emplace_back("OMP_NUM_THREADS", std::to_string(threads));
}

}  // namespace

Environment rank_environment(const TestbedState& state, const LaunchPlan& plan, std::size_t rank) {
  if (rank >= plan.ranks.size()) throw std::out_of_range(fmt::format("rank {} of {}", rank, plan.ranks.size()));
  const Host& host = plan.ranks[rank].host;
  // Hosts are numbered (GROUP_RANK) in order of their first rank.
  std::vector<std::string> hosts;
  for (const auto& each : plan.ranks)
    if (std::find(hosts.begin(), hosts.end(), each.host.name) == hosts.end()) hosts.push_back(each.host.name);
  const auto group = static_cast<std::size_t>(std::find(hosts.begin(), hosts.end(), host.name) - hosts.begin());
  const int threads =
      plan.threads_per_rank > 0
          ? plan.threads_per_rank
          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / static_cast<int>(plan.ranks.size()));
  Environment environment = torchrun_environment(
      {rank, plan.ranks.size(), static_cast<std::size_t>(ranks_on_host(plan, host.name, rank)),
       static_cast<std::size_t>(ranks_on_host(plan, host.name, plan.ranks.size())), group, hosts.size()},
      plan.master_addr.empty() ? plan.ranks.front().host.name : plan.master_addr, plan.master_port);
  environment.insert(environment.end(),
                     {{"WANLAB_TESTBED", state.name}, {"WANLAB_HOST", host.name}, {"WANLAB_DC", host.dc}});
  add_threads(environment, threads);
  for (const auto& variable : plan.ranks[rank].extra) environment.push_back(variable);
  return environment;
}

std::string first_slurm_host(std::string_view hostlist) {
  const std::string_view first = hostlist.substr(0, hostlist.find_first_of(",["));
  if (hostlist.size() == first.size() || hostlist[first.size()] == ',') return std::string(first);
  // "m[1-3,7]": the prefix and the range's first number, zero padding kept.
  const std::size_t open = first.size();
  const std::size_t end = hostlist.find_first_of("-,]", open + 1);
  if (end == std::string_view::npos || end == open + 1)
    throw std::invalid_argument(fmt::format("not a Slurm host list: {}", base::quoted(hostlist)));
  const std::string_view number = hostlist.substr(open + 1, end - open - 1);
  if (!std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw std::invalid_argument(fmt::format("not a Slurm host list: {}", base::quoted(hostlist)));
  return std::string(first) + std::string(number);
}

std::size_t slurm_tasks_on_node(std::string_view tasks_per_node, std::size_t node) {
  // "2(x3),1": two tasks on each of three nodes, then one.
  std::size_t index = 0;
  std::size_t at = 0;
  const auto fail = [&]() -> std::size_t {
    throw std::invalid_argument(fmt::format("not a Slurm tasks-per-node list: {}", base::quoted(tasks_per_node)));
  };
  while (at < tasks_per_node.size()) {
    const std::size_t comma = std::min(tasks_per_node.find(',', at), tasks_per_node.size());
    const std::string_view entry = tasks_per_node.substr(at, comma - at);
    std::size_t tasks = 0, repeat = 1;
    const auto paren = entry.find("(x");
    if (!whole(entry.substr(0, paren), tasks)) return fail();
    if (paren != std::string_view::npos &&
        (!entry.ends_with(")") || !whole(entry.substr(paren + 2, entry.size() - paren - 3), repeat)))
      return fail();
    if (node < index + repeat) return tasks;
    index += repeat;
    at = comma + 1;
  }
  throw std::out_of_range(fmt::format("node {} of tasks-per-node list {}", node, base::quoted(tasks_per_node)));
}

SlurmTask slurm_task(const std::function<const char*(const char*)>& variable) {
  const auto need = [&](std::initializer_list<const char*> names) -> std::string {
    for (const char* name : names)
      if (const char* value = variable(name); value && *value) return value;
    throw std::runtime_error(
        fmt::format("${} is not set: run this as a task of a Slurm job step (srun)", *names.begin()));
  };
  const auto number = [&](std::initializer_list<const char*> names) {
    const std::string text = need(names);
    std::size_t value = 0;
    if (!whole(text, value))
      throw std::runtime_error(fmt::format("${}: expected a whole number, got {}", *names.begin(), base::quoted(text)));
    return value;
  };
  SlurmTask task;
  task.rank = number({"SLURM_PROCID"});
  task.world = number({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  task.local_rank = number({"SLURM_LOCALID"});
  task.node = number({"SLURM_NODEID"});
  task.nodes = number({"SLURM_STEP_NUM_NODES", "SLURM_NNODES"});
  const std::string nodelist = need({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  try {
    task.first_node = first_slurm_host(nodelist);
    task.local_world = slurm_tasks_on_node(need({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}), task.node);
  } catch (const std::exception& error) {
    throw std::runtime_error(std::string("Slurm's environment: ") + error.what());
  }
  task.node_name = need({"SLURMD_NODENAME"});
  return task;
}

std::vector<std::string> slurm_job_nodes() {
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  if (list == nullptr || *list == '\0')
    throw std::runtime_error("not inside a Slurm job (SLURM_JOB_NODELIST is not set): run it from a batch script");
  const base::Captured shown = base::run_captured({"scontrol", "show", "hostnames", list});
  if (shown.status != 0)
    throw std::runtime_error(fmt::format("scontrol show hostnames {}: exit {}: {}", base::quoted(list), shown.status,
                                         base::quoted(shown.output, 200)));
  std::vector<std::string> nodes;
  std::istringstream lines(shown.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) nodes.push_back(line);
  if (nodes.empty()) throw std::runtime_error(fmt::format("scontrol show hostnames {}: no nodes", base::quoted(list)));
  return nodes;
}

std::vector<std::string> srun_on_node(const std::string& node) {
  return {"srun", "--overlap", "--nodes=1", "--ntasks=1", "--nodelist=" + node};
}

Environment slurm_rank_environment(const TestbedState& state, const SlurmTask& task, std::uint16_t master_port,
                                   int threads) {
  if (!state.machine)
    throw std::runtime_error(fmt::format("testbed {} is not a scenario over machines (wanlab join)", state.name));
  Environment environment = torchrun_environment(
      {task.rank, task.world, task.local_rank, task.local_world, task.node, task.nodes}, task.first_node, master_port);
  environment.insert(
      environment.end(),
      {{"WANLAB_TESTBED", state.name}, {"WANLAB_HOST", task.node_name}, {"WANLAB_DC", state.machine->dc}});
  add_threads(environment, threads > 0 ? threads
                                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                                         static_cast<int>(std::max<std::size_t>(1, task.local_world))));
  return environment;
}

std::vector<Host> select_hosts(const TestbedState& state, const std::string& list) {
  if (list == "all") {
    // A DC named "all" would make "all" mean two things: say so, never guess.
    if (std::find(state.dcs.begin(), state.dcs.end(), "all") != state.dcs.end())
      throw std::invalid_argument(
          fmt::format("\"all\" is every host, and also a DC of testbed {}: name that DC's "
                      "hosts (all-0, ...), or every DC, instead",
                      state.name));
    return state.hosts;
  }
  std::vector<Host> hosts;
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');) {
    std::vector<Host> named;
    for (const Host& host : state.hosts)
      if (host.name == name || host.dc == name) named.push_back(host);
    if (named.empty())
      throw std::invalid_argument(fmt::format("{} is neither a host nor a DC of testbed {} (wanlab hosts lists them)",
                                              base::quoted(name), state.name));
    for (const Host& host : named) {
      const bool twice =
          std::any_of(hosts.begin(), hosts.end(), [&](const Host& chosen) { return chosen.name == host.name; });
      if (twice) throw std::invalid_argument(fmt::format("host {} is named twice (as itself or in its DC)", host.name));
      hosts.push_back(host);
    }
  }
  if (hosts.empty()) throw std::invalid_argument("no hosts named");
  return hosts;
}

int launch(const TestbedState& state, const LaunchPlan& plan) {
  if (plan.argv.empty()) throw std::invalid_argument("launch: no command");
  if (plan.ranks.empty()) throw std::invalid_argument("launch: no ranks");
  if (plan.container && !plan.container->image.empty()) check_image_reference(plan.container->image);
  base::InterruptGuard guard;
  std::vector<RunningRank> ranks;
  try {
    for (std::size_t i = 0; i < plan.ranks.size(); ++i)
      ranks.push_back(start_rank(state, plan, i, container_name(state, i)));
  } catch (...) {
    signal_groups(ranks, SIGKILL);
    ranks.clear();  // each Child kills and reaps its process
    remove_containers(state, plan);
    throw;
  }

  int result = 0;
  std::optional<Clock::time_point> kill_at;      // set once the ranks are being stopped
  std::optional<Clock::time_point> outputs_end;  // set once every rank has ended
  const auto stop_all = [&](const std::string& why) {
    if (kill_at) return;
    fmt::print(stderr, "wanlab launch: {}\n", why);
    signal_groups(ranks, SIGTERM);
    kill_at = Clock::now() + std::chrono::milliseconds(plan.grace_ms);
  };
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<RunningRank*> readers;
    for (auto& rank : ranks)
      if (rank.output) {
        fds.push_back({rank.output.get(), POLLIN, 0});
        readers.push_back(&rank);
      }
    const bool running = std::any_of(ranks.begin(), ranks.end(), [](const auto& rank) { return !rank.exit_code; });
    if (!running && fds.empty()) break;
    if (::poll(fds.data(), fds.size(), 100) > 0)
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents) drain(plan.out, *readers[i]);
    for (RunningRank& rank : ranks) {
      if (rank.exit_code) continue;
      const pid_t group = rank.child.pid();
      rank.exit_code = rank.child.try_wait();
      if (!rank.exit_code) continue;
      // What it started in its group goes with it.
      ::kill(-group, SIGKILL);
      if (*rank.exit_code != 0 && result == 0 && !kill_at) {
        result = *rank.exit_code;
        stop_all(fmt::format("{} exited with {}; stopping the other ranks", rank.label, *rank.exit_code));
      }
    }
    if (const int signal = base::interrupted_by(); signal && !kill_at) {
      result = 128 + signal;
      stop_all(fmt::format("interrupted by signal {}; stopping the ranks", signal));
    }
    if (kill_at && Clock::now() >= *kill_at) signal_groups(ranks, SIGKILL);
    // A process that left its rank's group may hold the output open: once
    // every rank has ended, it gets a second, then is no longer read.
    if (!running && !outputs_end) outputs_end = Clock::now() + std::chrono::seconds(1);
    if (outputs_end && Clock::now() >= *outputs_end)
      for (auto& rank : ranks)
        if (rank.output) {
          print_lines(plan.out, rank, {}, true);
          rank.output.reset();
        }
  }
  remove_containers(state, plan);
  return result;
}

}  // namespace wanlab::emulator
