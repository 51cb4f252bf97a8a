// Slurm launches the WAN: three QEMU guests (scripts/vm/run-machines.sh) as
// the nodes of a Slurm cluster (munge, slurmctld on m1, slurmd on each, from
// Debian), and scripts/slurm/wan-job.sh, the README's job script, submitted
// twice over tests/data/multihost/two-dc.toml: to its end, and cancelled with
// scancel while its program runs. Each guest runs multihost/slurm-guest.sh;
// here we check what the jobs' tasks saw and that each node's kernel is as
// before after each job.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "multihost/machines.hpp"

using namespace wanlab::test;

namespace {

// A cluster of the three guests, each with the one CPU the guests have. The
// Epilog is the repository's; KillWait short, so that a cancelled job's
// hold step has 10 s to take the WAN down before SIGKILL.
std::string slurm_conf() {
  const std::string source = source_dir();
  return "ClusterName=wanlab\n"
         "SlurmctldHost=m1(10.99.0.1)\n"
         "SlurmUser=root\n"
         "SlurmdUser=root\n"
         "AuthType=auth/munge\n"
         "CredType=cred/munge\n"
         "MpiDefault=none\n"
         "ProctrackType=proctrack/linuxproc\n"
         "TaskPlugin=task/none\n"
         "JobAcctGatherType=jobacct_gather/none\n"
         "SelectType=select/cons_tres\n"
         "SelectTypeParameters=CR_CPU\n"
         "ReturnToService=2\n"
         "StateSaveLocation=/var/spool/slurmctld\n"
         "SlurmdSpoolDir=/var/spool/slurmd\n"
         "SlurmctldPidFile=/run/slurmctld.pid\n"
         "SlurmdPidFile=/run/slurmd.pid\n"
         "SlurmctldLogFile=/tmp/slurmctld.log\n"
         "SlurmdLogFile=/tmp/slurmd.log\n"
         "Epilog=" +
         source +
         "/scripts/slurm/epilog.sh\n"
         "KillWait=10\n"
         "NodeName=m1 NodeAddr=10.99.0.1 CPUs=1 State=UNKNOWN\n"
         "NodeName=m2 NodeAddr=10.99.0.2 CPUs=1 State=UNKNOWN\n"
         "NodeName=m3 NodeAddr=10.99.0.3 CPUs=1 State=UNKNOWN\n"
         "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
}

// A fresh munge key for this run's cluster.
std::string munge_key() {
  std::string key(1024, '\0');
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  BOOST_TEST_REQUIRE(fd >= 0);
  BOOST_TEST_REQUIRE(::read(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()));
  ::close(fd);
  return key;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t found = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
  return found;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_slurm_job_brings_the_wan_up_on_every_node_and_every_ending_takes_it_down) {
  Machines machines("slurm-guest.sh", {{"slurm.conf", slurm_conf()}, {"munge.key", munge_key()}});
  BOOST_TEST_REQUIRE(machines.run.status == 0, "the guests failed:\n" << machines.run.output);

  // Job 1 ran to its end, its program on all three nodes, each in its part
  // of the WAN, and m2's pings to m3 crossed it (30 ms configured).
  const std::string sbatch = machines.read("sbatch1.out");
  BOOST_TEST(sbatch.ends_with("exit 0\n"), sbatch << machines.read("job1.out"));
  BOOST_TEST(machines.read("job1.task.m1").find("DC east's gateway on eth0") != std::string::npos);
  BOOST_TEST(machines.read("job1.task.m2").find("DC east's member on eth0") != std::string::npos);
  BOOST_TEST(machines.read("job1.task.m3").find("DC west's gateway on eth0") != std::string::npos);
  // `wanlab launch --slurm` gave each task torchrun's variables from Slurm's
  // placement (one task per node, in node order) and its machine's DC.
  const std::vector<std::pair<std::string, std::string>> ranks{{"m1", "0"}, {"m2", "1"}, {"m3", "2"}};
  for (const auto& [node, rank] : ranks) {
    const std::string dc = node == "m3" ? "west" : "east";
    const std::string expected = "env RANK=" + rank + " WORLD_SIZE=3 LOCAL_RANK=0 GROUP_RANK=" + rank +
                                 " MASTER_ADDR=m1 WANLAB_DC=" + dc + " WANLAB_TESTBED=j1";
    const std::string seen = machines.read("job1.task." + node);
    BOOST_TEST(seen.find(expected) != std::string::npos, node << " saw:\n" << seen);
  }
  const double rtt_ms = median_rtt_ms(machines.read("job1.task.m2"));
  BOOST_TEST_MESSAGE("job 1: m2 -> m3 median RTT " << rtt_ms << " ms (30 configured)");
  // Never below the configuration; above it, TCG guests running Slurm's
  // daemons on two host cores (one run: 34-238 ms, median 42).
  BOOST_TEST(rtt_ms >= 30.0);
  BOOST_TEST(rtt_ms <= 60.0);
  // Its hold step took each node's part down itself, on the script's SIGTERM.
  const std::string job1 = machines.read("job1.out");
  BOOST_TEST(count(job1, "is down (signal 15)") == 3u, job1);

  // Job 2 was cancelled while its program ran on every node: the hold step
  // took the WAN down on Slurm's SIGTERM.
  const std::string job2 = machines.read("job2.out");
  BOOST_TEST(machines.read("job2.task.m2").find("DC east's member") != std::string::npos);
  BOOST_TEST(count(job2, "is down (signal 15)") == 3u, job2);

  // After each job every node is as before: no qdisc, filter, route, sysctl,
  // run directory, namespace, program or wanlab process of ours.
  for (const std::string machine : {"m1", "m2", "m3"}) {
    const std::string before = machines.read("before." + machine);
    for (const std::string after : {"after-job1.", "after-job2."})
      BOOST_TEST(before == machines.read(after + machine), machine << " before:\n"
                                                                   << before << after << machine << ":\n"
                                                                   << machines.read(after + machine));
  }
}
