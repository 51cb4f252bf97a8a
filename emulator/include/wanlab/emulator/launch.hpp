// `wanlab launch`: a user's distributed program, one process per rank on
// emulated hosts, with the environment torchrun gives (so torch.distributed,
// and anything else that reads RANK and MASTER_ADDR, starts unchanged).
//
// Each rank runs as a plain process on its host: the host's network
// namespace, its host name and the testbed's hosts file (testbed.hpp's host
// identity). Its output is prefixed "[RANK HOST] ". The first rank to fail
// ends the others (SIGTERM, then SIGKILL after a grace period); so does a
// SIGINT, SIGTERM or SIGHUP to the launcher; and if the launcher itself is
// killed, every rank dies with it (PR_SET_PDEATHSIG).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wanlab/emulator/testbed.hpp"

namespace wanlab::emulator {

using Environment = std::vector<std::pair<std::string, std::string>>;

struct LaunchRank {
  Host host;
  Environment extra;  // more variables for this rank (an experiment's stage and replica)
};

// Ranks in containers instead of plain processes: `podman run` in the host's
// network namespace, with its host name, the testbed's /etc/hosts and
// resolv.conf, the rank's environment and the launcher's working directory.
struct LaunchContainer {
  // An image with the program's runtime (say Python and torch); "" runs the
  // machine's own root file system under an overlay (podman --rootfs /:O) in
  // the container's own PID, mount, UTS, IPC and cgroup namespaces. Either
  // way the working directory is bind-mounted at the same path.
  std::string image;
};

struct LaunchPlan {
  std::vector<std::string> argv;  // the program; the same for every rank
  std::vector<LaunchRank> ranks;  // rank i is ranks[i]; several on one host get LOCAL_RANK 0, 1, ...
  std::string master_addr;        // default: the first rank's host name
  std::uint16_t master_port = 29500;
  int threads_per_rank = 0;  // OMP_NUM_THREADS unless set by the user; 0: the machine's cores / ranks (at least 1)
  int grace_ms = 5000;       // between SIGTERM and SIGKILL when ranks are stopped
  std::FILE* out = stdout;   // where the prefixed output and the launcher's own lines go
  std::optional<LaunchContainer> container;  // none: plain processes
};

// `podman run`'s --ulimit options for descriptors and processes, within our
// own hard limits: podman's defaults exceed them on some machines, and the
// OCI runtime then fails to set them ("setrlimit RLIMIT_NOFILE: Operation
// not permitted"). A program gets up to 65536 descriptors and 4096
// processes. (Here crun refused process limits above about 32k even below
// our hard limit.) The harness's workers get the same.
std::vector<std::string> podman_limit_args();

// A container image as podman's argv may carry it ("localhost/x:tag",
// "docker.io/library/debian:12", "name@sha256:..."): a letter or digit first,
// then letters, digits and . _ - / : @, at most 255. Anything else throws
// std::invalid_argument: "--privileged" would reach podman as an option
// (and the program's first word as the image), a space or ';' as nothing
// podman resolves. `wanlab launch` and `wanlab train` check --image with it.
void check_image_reference(std::string_view image);

// The `podman run` argv of a rank in a container (its name is `name`).
// std::invalid_argument when `workdir`, bind-mounted as SRC:DST, holds a ':'.
std::vector<std::string> container_argv(const TestbedState& state, const LaunchPlan& plan, std::size_t rank,
                                        const std::string& name, const std::string& workdir);

// The variables rank `rank` gets: RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK (the host's number among the plan's hosts, in
// order of first appearance), GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, OMP_NUM_THREADS (unless ours has it), WANLAB_TESTBED,
// WANLAB_HOST, WANLAB_DC, then the rank's extra ones.
Environment rank_environment(const TestbedState& state, const LaunchPlan& plan, std::size_t rank);

// One task of a Slurm job step (srun), as its SLURM_* variables place it
// (`wanlab launch --slurm`, across the machines of a scenario over machines).
struct SlurmTask {
  std::size_t rank = 0, world = 1, local_rank = 0, local_world = 1, node = 0, nodes = 1;
  std::string first_node;  // the step's first node: MASTER_ADDR
  std::string node_name;   // SLURMD_NODENAME
};
// Read through `variable` (getenv); throws std::runtime_error naming a
// missing or malformed variable.
SlurmTask slurm_task(const std::function<const char*(const char*)>& variable);
// The first host of a Slurm host list: "m[1-3],n5" -> "m1", "gpu[007-009]"
// -> "gpu007", "a,b" -> "a". std::invalid_argument if it is none.
std::string first_slurm_host(std::string_view hostlist);
// The nodes of this Slurm job's allocation, in Slurm's order
// (`scontrol show hostnames $SLURM_JOB_NODELIST`). Throws std::runtime_error
// outside a Slurm job, or saying what scontrol said.
std::vector<std::string> slurm_job_nodes();
// The start of an argv that runs a program as a one-task step on `node` of
// this job, beside its other steps: srun --overlap --nodes=1 --ntasks=1 --nodelist=NODE.
std::vector<std::string> srun_on_node(const std::string& node);
// Tasks on node `node` of a tasks-per-node list ("2(x3),1").
std::size_t slurm_tasks_on_node(std::string_view tasks_per_node, std::size_t node);
// The variables rank_environment gives, for a Slurm task on a machine of
// `state` (a testbed of `wanlab join`): WANLAB_DC is the machine's DC,
// WANLAB_HOST its node name; OMP_NUM_THREADS `threads`, or the machine's
// cores / tasks on the node.
Environment slurm_rank_environment(const TestbedState& state, const SlurmTask& task, std::uint16_t master_port,
                                   int threads);

// The hosts a `launch` names: "all" (every host), or a comma-separated list
// of host names and DC names (a DC stands for its hosts, in order), each once.
// Throws std::invalid_argument naming the unknown name.
std::vector<Host> select_hosts(const TestbedState& state, const std::string& list);

// Runs the plan to its end and returns the launch's exit code: 0 if every
// rank exited 0; else the first failing rank's code (128 + signal if one was
// killed), or 128 + the signal that stopped the launch. Throws
// std::runtime_error if a rank cannot be started (the started ones are
// stopped first).
int launch(const TestbedState& state, const LaunchPlan& plan);

}  // namespace wanlab::emulator
