// Temporal sharing's gate: one slot at a time per directed link, in slot
// order, whatever order the senders ask in; links are independent; misuse
// is an error naming the worker.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "wanlab/harness/run/link_gate.hpp"

using wanlab::harness::GateError;
using wanlab::harness::LinkGate;
using wanlab::harness::Op;
using wanlab::harness::OpKind;
using wanlab::harness::Plan;
using wanlab::harness::WorkerPlan;

namespace {

Op send_to(int peer, int slot, bool cross_dc = true) {
  Op op;
  op.kind = OpKind::send;
  op.microbatch = 0;
  op.peer = peer;
  op.bytes = 1000;
  op.cross_dc = cross_dc;
  op.link_slot = slot;
  return op;
}

Op compute() {
  Op op;
  op.kind = OpKind::forward;
  op.microbatch = 0;
  op.duration_ns = 1;
  return op;
}

// Workers 0 and 1 in DC 0 ("east"), 2 and 3 in DC 1 ("west").
// Worker 0 op 1 -> 2 slot 0, op 2 -> 2 slot 2; worker 1 op 0 -> 3 slot 1;
// worker 2 op 0 -> 0 slot 0 (the other direction); worker 1 op 1: intra-DC.
Plan two_dc_plan() {
  Plan plan;
  plan.dc_names = {"east", "west"};
  const char* dc_names[] = {"east", "east", "west", "west"};
  for (int id = 0; id < 4; ++id) {
    WorkerPlan worker;
    worker.worker.id = id;
    worker.worker.dc = id / 2;
    worker.worker.dc_name = dc_names[id];
    plan.workers.push_back(worker);
  }
  plan.workers[0].ops = {compute(), send_to(2, 0), send_to(2, 2)};
  plan.workers[1].ops = {send_to(3, 1), send_to(0, -1, false)};
  plan.workers[2].ops = {send_to(0, 0)};
  return plan;
}

using Grants = std::vector<LinkGate::Grant>;

}  // namespace

BOOST_AUTO_TEST_CASE(knows_which_ops_are_gated) {
  LinkGate gate(two_dc_plan());
  BOOST_TEST(gate.link_count() == 2u);
  BOOST_TEST(gate.gated(0, 1));
  BOOST_TEST(gate.gated(0, 2));
  BOOST_TEST(gate.gated(1, 0));
  BOOST_TEST(!gate.gated(0, 0));  // compute
  BOOST_TEST(!gate.gated(1, 1));  // intra-DC
}

BOOST_AUTO_TEST_CASE(grants_in_slot_order_one_at_a_time) {
  LinkGate gate(two_dc_plan());
  gate.start_iteration(0);
  // Slot 2 and slot 1 ask first: both wait for slot 0.
  BOOST_TEST(gate.request(0, 0, 2).empty());
  BOOST_TEST(gate.request(1, 0, 0).empty());
  // Slot 0 is granted at once.
  BOOST_TEST((gate.request(0, 0, 1) == Grants{{0, 1}}));
  // The other direction is its own link: its slot 0 goes at the same time.
  BOOST_TEST((gate.request(2, 0, 0) == Grants{{2, 0}}));
  // Releasing slot 0 grants slot 1 only; releasing 1 grants 2.
  BOOST_TEST((gate.release(0, 0, 1) == Grants{{1, 0}}));
  BOOST_TEST(gate.describe().find("east->west at slot 1") != std::string::npos);
  BOOST_TEST((gate.release(1, 0, 0) == Grants{{0, 2}}));
  BOOST_TEST(gate.release(0, 0, 2).empty());
  BOOST_TEST(gate.describe().find("east->west done") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_slot_released_before_the_next_asks_grants_on_request) {
  LinkGate gate(two_dc_plan());
  gate.start_iteration(3);
  BOOST_TEST((gate.request(0, 3, 1) == Grants{{0, 1}}));
  BOOST_TEST(gate.release(0, 3, 1).empty());  // nobody waits for slot 1 yet
  BOOST_TEST((gate.request(1, 3, 0) == Grants{{1, 0}}));
}

BOOST_AUTO_TEST_CASE(each_iteration_starts_over) {
  LinkGate gate(two_dc_plan());
  gate.start_iteration(0);
  BOOST_TEST((gate.request(0, 0, 1) == Grants{{0, 1}}));
  gate.start_iteration(1);
  BOOST_TEST(gate.request(1, 1, 0).empty());  // slot 1 waits for this iteration's slot 0
  BOOST_TEST((gate.request(0, 1, 1) == Grants{{0, 1}}));
}

BOOST_AUTO_TEST_CASE(sends_sharing_a_slot_go_together) {
  Plan plan = two_dc_plan();
  plan.workers[1].ops[0].link_slot = 0;  // worker 1's send now shares slot 0 with worker 0's
  LinkGate gate(plan);
  gate.start_iteration(0);
  BOOST_TEST((gate.request(0, 0, 1) == Grants{{0, 1}}));
  BOOST_TEST((gate.request(1, 0, 0) == Grants{{1, 0}}));
  BOOST_TEST(gate.request(0, 0, 2).empty());
  BOOST_TEST(gate.release(0, 0, 1).empty());  // slot 0 is not done until both release
  BOOST_TEST((gate.release(1, 0, 0) == Grants{{0, 2}}));
}

BOOST_AUTO_TEST_CASE(misuse_is_an_error_naming_the_worker) {
  LinkGate gate(two_dc_plan());
  gate.start_iteration(0);
  auto error_of = [&](auto call) -> std::string {
    try {
      call();
    } catch (const GateError& error) {
      return error.what();
    }
    return "(no error)";
  };
  BOOST_TEST(error_of([&] {
               gate.request(1, 0, 1);
             }).find("worker 1 asked for the link for op 1, which is neither a gated nor an announced send") !=
             std::string::npos);
  BOOST_TEST(error_of([&] { gate.request(0, 5, 1); }).find("in iteration 5, but iteration 0 is running") !=
             std::string::npos);
  BOOST_TEST(error_of([&] { gate.release(0, 0, 1); }).find("without holding it") != std::string::npos);
  gate.request(0, 0, 1);
  BOOST_TEST(error_of([&] { gate.request(0, 0, 1); }).find("asked twice") != std::string::npos);
}

// BubbleTea's KV pieces ask whether training uses a link: it does while one of
// its gated sends waits for the link or holds it, per directed link.
BOOST_AUTO_TEST_CASE(a_link_is_in_use_while_a_gated_send_waits_or_holds_it) {
  LinkGate gate(two_dc_plan());
  gate.start_iteration(0);
  BOOST_TEST(!gate.in_use("east->west"));
  BOOST_TEST(!gate.in_use("east->europe"));  // no gated sends at all
  BOOST_TEST(!gate.carries("east->europe"));
  BOOST_TEST(gate.carries("east->west"));
  BOOST_TEST(gate.carries("west->east"));
  BOOST_TEST(gate.request(1, 0, 0).empty());  // slot 1 waits
  BOOST_TEST(gate.in_use("east->west"));
  BOOST_TEST(!gate.in_use("west->east"));
  BOOST_TEST((gate.request(0, 0, 1) == Grants{{0, 1}}));
  BOOST_TEST((gate.release(0, 0, 1) == Grants{{1, 0}}));
  BOOST_TEST(gate.in_use("east->west"));  // slot 1 holds it
  BOOST_TEST(gate.release(1, 0, 0).empty());
  BOOST_TEST(!gate.in_use("east->west"));  // slot 2 has not asked yet
  BOOST_TEST((gate.request(2, 0, 0) == Grants{{2, 0}}));
  BOOST_TEST(gate.in_use("west->east"));
  gate.start_iteration(1);
  BOOST_TEST(!gate.in_use("west->east"));
}

// With BubbleTea, a send between two hosts of one DC is announced: it never
// waits, and while announced it holds its DC's own link from KV caches.
BOOST_AUTO_TEST_CASE(sends_between_hosts_of_a_dc_announce_their_link_with_bubbletea) {
  Plan plan = two_dc_plan();
  const char* hosts[] = {"east-0", "east-1", "west-0", "west-0"};
  for (int id = 0; id < 4; ++id) plan.workers[static_cast<std::size_t>(id)].worker.host = hosts[id];
  plan.workers[2].ops.push_back(send_to(3, -1, false));  // same host: loopback, never announced
  BOOST_TEST(LinkGate(plan).announced(1).empty());       // without prefill nothing is announced

  plan.experiment.prefill.enabled = true;
  LinkGate gate(plan);
  BOOST_TEST((gate.announced(1) == std::vector<int>{1}));
  BOOST_TEST(gate.announced(0).empty());
  BOOST_TEST(gate.announced(2).empty());
  BOOST_TEST(!gate.gated(1, 1));
  BOOST_TEST(gate.link_count() == 2u);  // an inside link has no slots
  BOOST_TEST(!gate.carries("east (inside)"));
  BOOST_TEST(gate.describe().find("inside") == std::string::npos);

  gate.start_iteration(0);
  BOOST_TEST(!gate.in_use("east (inside)"));
  BOOST_TEST(gate.request(1, 0, 1).empty());  // no grant to wait for
  BOOST_TEST(gate.in_use("east (inside)"));
  BOOST_TEST(!gate.in_use("west (inside)"));
  BOOST_TEST(!gate.in_use("east->west"));
  BOOST_CHECK_THROW(gate.request(1, 0, 1), GateError);
  BOOST_TEST(gate.release(1, 0, 1).empty());
  BOOST_TEST(!gate.in_use("east (inside)"));
  BOOST_CHECK_THROW(gate.request(2, 0, 1), GateError);  // the loopback send
  // The next iteration starts over.
  gate.start_iteration(1);
  BOOST_TEST(gate.request(1, 1, 1).empty());
  BOOST_TEST(gate.in_use("east (inside)"));
}
