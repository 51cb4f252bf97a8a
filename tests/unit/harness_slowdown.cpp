// A real run's slowdown against its plan, attributed along the critical path
// (record/slowdown.hpp), on timelines made by hand: two workers, worker 0
// computes F0 (10 ms) and sends it to worker 1 (5 ms planned on the wire),
// which computes F0 (10 ms) after receiving it. The plan's iteration is 25 ms.
#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/record/slowdown.hpp"

using namespace wanlab::harness;

namespace {

constexpr std::int64_t kMs = 1'000'000;

Plan two_stage_plan() {
  Plan plan;
  Op forward;
  forward.kind = OpKind::forward;
  forward.microbatch = 0;
  forward.duration_ns = 10 * kMs;
  Op send{OpKind::send, 0, 1, 1000, 0, true, -1, false, false};
  Op recv{OpKind::recv, 0, 0, 1000, 0, true, -1, false, false};
  plan.workers.push_back({Worker{0, 0, 0, 0, "a", "a-0", {}, {}}, {forward, send}});
  plan.workers.push_back({Worker{1, 1, 0, 1, "b", "b-0", {}, {}}, {recv, forward}});
  return plan;
}

Event event(int worker, int op, OpKind kind, std::int64_t start_ms, std::int64_t end_ms, int peer = -1) {
  Event e;
  e.worker = worker;
  e.op_index = op;
  e.kind = kind;
  e.microbatch = 0;
  e.peer = peer;
  e.start_ns = start_ms * kMs;
  e.end_ns = end_ms * kMs;
  return e;
}

// One iteration from `at_ms`: F0 on worker 0 from `f0_start`, the message
// first on the wire at `first_byte` and arriving at `arrival`, F0 on worker 1
// from `f1_start`.
void add_iteration(RunRecord& record, int iteration, std::int64_t at_ms, std::int64_t f0_start, std::int64_t first_byte,
                   std::int64_t arrival, std::int64_t f1_start) {
  const std::size_t first = record.events.size();
  record.events.push_back(event(0, 0, OpKind::forward, at_ms + f0_start, at_ms + f0_start + 10));
  record.events.push_back(event(0, 1, OpKind::send, at_ms + f0_start + 10, at_ms + arrival, 1));
  record.events.push_back(event(1, 0, OpKind::recv, at_ms, at_ms + arrival, 0));
  record.events.push_back(event(1, 1, OpKind::forward, at_ms + f1_start, at_ms + f1_start + 10));
  for (std::size_t i = first; i < record.events.size(); ++i) record.events[i].iteration = iteration;
  TransferRecord t;
  t.worker = 0;
  t.iteration = iteration;
  t.op_index = 1;
  t.peer = 1;
  t.queued_ns = (at_ms + f0_start + 10) * kMs;
  t.first_sent_ns = (at_ms + first_byte) * kMs;
  t.last_received_ns = (at_ms + arrival) * kMs;
  record.transfers.push_back(t);
  record.iteration_start_ns.push_back(at_ms * kMs);
  record.iteration_end_ns.push_back((at_ms + f1_start + 10) * kMs);
}

// The plan: 25 ms an iteration, three iterations (the first is skipped, as summarize_run does).
RunRecord planned() {
  RunRecord record;
  record.plan = two_stage_plan();
  for (int i = 0; i < 3; ++i) add_iteration(record, i, 100 * i, 0, 10, 15, 15);
  return record;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_that_kept_its_plan_has_no_slowdown) {
  const TrainingSlowdown s = attribute_slowdown(planned(), planned());
  BOOST_TEST(s.iterations == 2);
  BOOST_TEST(s.iteration_s == 0.025, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.planned_s == 0.025, boost::test_tools::tolerance(1e-12));
  BOOST_TEST((s.causes == SlowdownCauses{}));
  BOOST_TEST((s.op_start_late == OpStartLateness{8, 0, 0, 0}));
  BOOST_TEST(describe(s) == "iteration 0.025 s against 0.025 s planned (+0.0%)");
}

// Each cause on its own: the slowdown is measured (end to end) and lands on
// the cause that made it, the causes adding up to it.
BOOST_AUTO_TEST_CASE(each_delay_lands_on_its_cause) {
  // Worker 1's F0 waits 4 ms for the GPU (prefill held it), after the message.
  RunRecord held = planned();
  held.events.clear(), held.transfers.clear(), held.iteration_start_ns.clear(), held.iteration_end_ns.clear();
  for (int i = 0; i < 3; ++i) add_iteration(held, i, 100 * i, 0, 10, 15, 19);
  for (Event& e : held.events)
    if (e.worker == 1 && e.kind == OpKind::forward) e.gpu_wait_ns = 4 * kMs;
  TrainingSlowdown s = attribute_slowdown(held, planned());
  BOOST_TEST(s.iteration_s == 0.029, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.gpu_held_s == 0.004, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.total_s() == s.iteration_s - s.planned_s, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(describe(s) ==
             "iteration 0.029 s against 0.025 s planned (+16.0%): prefill held the GPU +0.004 s; ops started p50 "
             "+0.0 ms, p99 +4.0 ms late");
  // Of the 8 ops of the two iterations measured, worker 1's F0 started 4 ms late in each.
  BOOST_TEST(s.op_start_late.ops == 8u);
  BOOST_TEST(s.op_start_late.p50_ms == 0.0);
  BOOST_TEST(s.op_start_late.max_ms == 4.0, boost::test_tools::tolerance(1e-12));

  // The message waits 3 ms for its link (the gate), then takes 2 ms longer on the wire.
  RunRecord slow = planned();
  slow.events.clear(), slow.transfers.clear(), slow.iteration_start_ns.clear(), slow.iteration_end_ns.clear();
  for (int i = 0; i < 3; ++i) add_iteration(slow, i, 100 * i, 0, 13, 20, 20);
  s = attribute_slowdown(slow, planned());
  BOOST_TEST(s.causes.link_gate_s == 0.003, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.transfers_s == 0.002, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.gpu_held_s == 0.0);
  BOOST_TEST(s.causes.other_s == 0.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.op_start_late.max_ms == 5.0, boost::test_tools::tolerance(1e-12));  // F0 on worker 1, after the message

  // Worker 1 starts F0 2 ms after the message arrived, for no recorded reason (dispatch: other).
  RunRecord late = planned();
  late.events.clear(), late.transfers.clear(), late.iteration_start_ns.clear(), late.iteration_end_ns.clear();
  for (int i = 0; i < 3; ++i) add_iteration(late, i, 100 * i, 0, 10, 15, 17);
  s = attribute_slowdown(late, planned());
  BOOST_TEST(s.causes.other_s == 0.002, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.wake_ups_s == 0.0);
}

// A wake-up after the compute op before: worker 1 runs F0 twice in a row in
// this plan's variant, and its timer woke 3 ms late after the first.
BOOST_AUTO_TEST_CASE(a_late_wake_up_delays_the_next_compute) {
  RunRecord plan_record;
  plan_record.plan = two_stage_plan();
  Op second = plan_record.plan.workers[1].ops[1];
  second.microbatch = 1;
  plan_record.plan.workers[1].ops.push_back(second);
  RunRecord real = plan_record;
  for (int i = 0; i < 2; ++i) {
    for (RunRecord* r : {&plan_record, &real}) {
      const std::int64_t at = 100 * i;
      const std::int64_t late = r == &real ? 3 : 0;
      add_iteration(*r, i, at, 0, 10, 15, 15);
      Event f1 = event(1, 2, OpKind::forward, at + 25 + late, at + 35 + late);
      f1.microbatch = 1;
      f1.iteration = i;
      r->events.push_back(f1);
      r->iteration_end_ns.back() = (at + 35 + late) * kMs;
      if (late > 0) r->events[r->events.size() - 2].wake_late_ns = late * kMs;
    }
  }
  const TrainingSlowdown s = attribute_slowdown(real, plan_record);
  BOOST_TEST(s.iteration_s - s.planned_s == 0.003, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.wake_ups_s == 0.003, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(s.causes.other_s == 0.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(records_of_two_plans_are_refused) {
  RunRecord other = planned();
  other.plan.workers[1].ops.pop_back();
  BOOST_CHECK_THROW(attribute_slowdown(planned(), other), std::invalid_argument);
  RunRecord shorter = planned();
  shorter.iteration_start_ns.pop_back();
  shorter.iteration_end_ns.pop_back();
  BOOST_CHECK_THROW(attribute_slowdown(planned(), shorter), std::invalid_argument);
}
