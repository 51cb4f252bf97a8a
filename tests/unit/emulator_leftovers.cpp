// What a testbed leaves behind (emulator/leftovers.hpp), without a testbed:
// a name nothing carries leaves nothing, and a process noted before `down` is
// a leftover while it runs and not once it has gone.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <string>

#include "wanlab/base/process.hpp"
#include "wanlab/emulator/leftovers.hpp"

namespace em = wanlab::emulator;

BOOST_AUTO_TEST_CASE(a_name_nothing_carries_leaves_nothing) {
  const auto found = em::leftovers_by_name("unit-nothing");
  BOOST_TEST(found.size() == 0u, (found.empty() ? "" : found.front()));
  BOOST_TEST(em::link_names().count("lo") == 1u);
}

BOOST_AUTO_TEST_CASE(a_daemon_noted_before_down_is_left_while_it_runs) {
  wanlab::base::Child daemon = wanlab::base::spawn({"sleep", "30"});
  em::TestbedState state;
  state.name = "unit-nothing";
  state.kind = em::TestbedKind::attached;  // no namespaces of its own to look into
  state.daemon_pid = daemon.pid();
  const em::TestbedTraces traces(state, em::link_names());
  BOOST_TEST(traces.processes() == 0u);
  const auto while_running = traces.leftovers();
  BOOST_TEST_REQUIRE(while_running.size() == 1u);
  BOOST_TEST(while_running[0] == "daemon " + std::to_string(state.daemon_pid) + " still running");
  ::kill(daemon.pid(), SIGKILL);
  daemon.wait();
  BOOST_TEST(traces.leftovers().empty());
}
