// DiLoCo and Streaming DiLoCo: [diloco] and its errors, the plan's outer
// round (in-DC all-reduces, fragments started and waited for), and the
// simulator's times against arithmetic on steady links.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "harness_support.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/record/results.hpp"

namespace hs = wanlab::harness;
using harness_test::error_of;
using harness_test::experiment;
using harness_test::three_dcs;

namespace {

// pp stages, dp replicas on DCs a and b ([gpus]), 1 ms forward, 2 ms
// backward, `microbatches` a step; `diloco` is the [diloco] section's body.
hs::Experiment diloco_experiment(const std::string& schedule, int pp, int dp, int microbatches,
                                 const std::string& diloco, double forward_ms = 1, double backward_ms = 2) {
  return experiment("schedule = \"" + schedule + "\"", pp, dp, microbatches, forward_ms, backward_ms,
                    "[gpus]\na = 64\nb = 64\n[diloco]\n" + diloco + "\n");
}

std::vector<const hs::Op*> ops_of(const hs::WorkerPlan& worker, hs::OpKind kind) {
  std::vector<const hs::Op*> found;
  for (const hs::Op& op : worker.ops)
    if (op.kind == kind) found.push_back(&op);
  return found;
}

// The index of the first op of `kind` numbered `number` (Op::microbatch), or -1.
int index_of(const hs::WorkerPlan& worker, hs::OpKind kind, int number) {
  for (std::size_t i = 0; i < worker.ops.size(); ++i)
    if (worker.ops[i].kind == kind && worker.ops[i].microbatch == number) return static_cast<int>(i);
  return -1;
}

// The index of inner step `step`'s last compute op (backward of its last microbatch).
int end_of_step(const hs::WorkerPlan& worker, int step, int microbatches) {
  int last = -1;
  for (std::size_t i = 0; i < worker.ops.size(); ++i) {
    const hs::Op& op = worker.ops[i];
    if (op.kind == hs::OpKind::backward && op.microbatch / microbatches == step) last = static_cast<int>(i);
  }
  return last;
}

hs::RunRecord simulate_steady(const hs::Experiment& e, int iterations) {
  const auto scenario = three_dcs();
  return hs::simulate(hs::make_plan(e, scenario), scenario, harness_test::steady_links(scenario), iterations);
}

double iteration_s(const hs::RunRecord& record, int iteration) {
  return static_cast<double>(record.iteration_end_ns.at(static_cast<std::size_t>(iteration)) -
                             record.iteration_start_ns.at(static_cast<std::size_t>(iteration))) /
         1e9;
}

}  // namespace

BOOST_AUTO_TEST_CASE(schedules_imply_their_settings) {
  const hs::Experiment streaming = diloco_experiment("streaming-diloco", 2, 2, 2, "inner_steps = 8");
  BOOST_TEST(hs::to_string(streaming.placement) == "dp-across-dc");
  BOOST_TEST(streaming.streams == 8);
  BOOST_TEST(!streaming.temporal_sharing);
  BOOST_TEST(streaming.diloco.fragments == 4);
  BOOST_TEST(streaming.diloco.outer_bits == 4);
  BOOST_TEST(streaming.diloco.overlap_steps == 1);
  BOOST_TEST(hs::steps_per_iteration(streaming) == 8);

  const hs::Experiment plain = diloco_experiment("diloco", 2, 2, 2, "inner_steps = 8");
  BOOST_TEST(plain.diloco.fragments == 1);
  BOOST_TEST(plain.diloco.outer_bits == 16);  // the model's 2 bytes a value
  BOOST_TEST(plain.diloco.overlap_steps == 0);

  // Fewer inner steps than the default fragments: one fragment per step.
  BOOST_TEST(diloco_experiment("streaming-diloco", 2, 2, 2, "inner_steps = 2").diloco.fragments == 2);

  // --pipeline re-derives them; [diloco] under another schedule is kept for sweeps.
  hs::Experiment switched = plain;
  hs::apply_override(switched, "--pipeline", "streaming-diloco");
  BOOST_TEST(switched.diloco.fragments == 4);
  hs::apply_override(switched, "--pipeline", "atlas");
  BOOST_TEST(hs::to_string(switched.placement) == "atlas");
  BOOST_TEST(hs::steps_per_iteration(switched) == 1);
  hs::apply_override(switched, "--pipeline", "diloco");
  hs::apply_override(switched, "--inner-steps", "3");
  BOOST_TEST(switched.diloco.inner_steps == 3);
}

BOOST_AUTO_TEST_CASE(bad_settings_name_their_field) {
  auto bad = [](const std::string& schedule, const std::string& diloco, int dp = 2) {
    return error_of([&] { diloco_experiment(schedule, 2, dp, 2, diloco); });
  };
  BOOST_TEST(bad("diloco", "inner_steps = 8\nfragments = 2").find("diloco.fragments: 2 fragments") !=
             std::string::npos);
  BOOST_TEST(bad("diloco", "inner_steps = 8\noverlap_steps = 1").find("diloco.overlap_steps: an overlap") !=
             std::string::npos);
  BOOST_TEST(bad("streaming-diloco", "inner_steps = 8\nfragments = 9").find("at most one fragment per inner step") !=
             std::string::npos);
  // Blocks of 8 / 4 = 2 steps: a sync can start at most 1 step before its block's end.
  BOOST_TEST(bad("streaming-diloco", "inner_steps = 8\noverlap_steps = 2").find("so at most 1") != std::string::npos);
  BOOST_TEST(bad("diloco", "inner_steps = 8", 1).find("parallel.dp: diloco syncs") != std::string::npos);
  BOOST_TEST(bad("diloco", "inner_steps = 0").find("diloco.inner_steps: expected an integer from 1") !=
             std::string::npos);
  BOOST_TEST(bad("diloco", "inner_step = 8").find("inner_steps") != std::string::npos);  // did you mean
  BOOST_TEST(error_of([] {
               experiment("schedule = \"diloco\"\nplacement = \"atlas\"", 2, 2, 2, 1, 2, "[diloco]\ninner_steps = 2\n");
             }).find("placement must be dp-across-dc") != std::string::npos);
  hs::Experiment e = diloco_experiment("diloco", 2, 2, 2, "inner_steps = 8");
  BOOST_TEST(error_of([&] { hs::apply_override(e, "--inner-steps", "x"); }).starts_with("--inner-steps: "));
  BOOST_TEST(error_of([&] { hs::apply_override(e, "--fragments", "2"); }).starts_with("--fragments: "));
  // A round too big to simulate names the inner steps among what makes it big.
  BOOST_TEST(error_of([&] {
               hs::apply_override(e, "--inner-steps", "100000");
             }).find("model.microbatches 2, diloco.inner_steps 100000) = ") != std::string::npos);
}

// Two stages, four replicas: two in DC a, two in DC b. Eight inner steps,
// two fragments of 8 / 2 = 4 steps, each synced beside one step.
BOOST_AUTO_TEST_CASE(plan_holds_the_outer_round) {
  const int microbatches = 3;
  const hs::Experiment e =
      diloco_experiment("streaming-diloco", 2, 4, microbatches, "inner_steps = 8\nfragments = 2\noverlap_steps = 1");
  const hs::Plan plan = hs::make_plan(e, three_dcs());
  // 12 x 64 x 1024^2 parameters, half a stage, 4 bits of 16, half of it a fragment.
  const double stage_params = 12.0 * 64 * 1024 * 1024 / 2;
  BOOST_TEST(plan.fragment_bytes == static_cast<std::uint64_t>(stage_params * 4 / 8 / 2));
  for (const hs::WorkerPlan& worker : plan.workers) {
    BOOST_TEST(worker.worker.dc_group.size() == 2u);
    BOOST_TEST(worker.worker.allreduce_group.size() == 4u);
    // Every inner step: the pipeline's compute (microbatch numbers step x m + k) and the in-DC all-reduce.
    BOOST_TEST(ops_of(worker, hs::OpKind::forward).size() == 8u * microbatches);
    const auto allreduces = ops_of(worker, hs::OpKind::allreduce);
    BOOST_TEST(allreduces.size() == 8u + 2u);
    for (int step = 0; step < 8; ++step) {
      const int inner = index_of(worker, hs::OpKind::allreduce, step);
      BOOST_TEST_REQUIRE(inner >= 0);
      BOOST_TEST(worker.ops[static_cast<std::size_t>(inner)].within_dc);
      BOOST_TEST(!worker.ops[static_cast<std::size_t>(inner)].cross_dc);
      BOOST_TEST(worker.ops[static_cast<std::size_t>(inner)].bytes == plan.stage_param_bytes);  // 2(2-1)/2
      BOOST_TEST(inner > end_of_step(worker, step, microbatches));
    }
    // Fragment f (number 8 + f): started after step 4f + 2, waited for after step 4f + 3.
    for (int fragment = 0; fragment < 2; ++fragment) {
      const int start = index_of(worker, hs::OpKind::allreduce, 8 + fragment);
      const int wait = index_of(worker, hs::OpKind::allreduce_wait, 8 + fragment);
      BOOST_TEST_REQUIRE(start >= 0);
      BOOST_TEST_REQUIRE(wait >= 0);
      const hs::Op& outer = worker.ops[static_cast<std::size_t>(start)];
      BOOST_TEST(outer.overlapped);
      BOOST_TEST(outer.cross_dc);
      BOOST_TEST(!outer.within_dc);
      BOOST_TEST(outer.bytes ==
                 static_cast<std::uint64_t>(std::llround(1.5 * static_cast<double>(plan.fragment_bytes))));
      BOOST_TEST(start > end_of_step(worker, 4 * fragment + 2, microbatches));
      BOOST_TEST(start < end_of_step(worker, 4 * fragment + 3, microbatches));
      BOOST_TEST(wait > end_of_step(worker, 4 * fragment + 3, microbatches));
      if (fragment == 0) BOOST_TEST(wait < end_of_step(worker, 4, microbatches));
    }
  }
  // Plain DiLoCo: one blocking sync at the round's end, nothing to wait for.
  const hs::Plan plain = hs::make_plan(diloco_experiment("diloco", 2, 4, microbatches, "inner_steps = 8"), three_dcs());
  for (const hs::WorkerPlan& worker : plain.workers) {
    BOOST_TEST(ops_of(worker, hs::OpKind::allreduce_wait).empty());
    const hs::Op& last = worker.ops.back();
    BOOST_TEST((last.kind == hs::OpKind::allreduce && last.microbatch == 8 && !last.overlapped));
  }
  // Two replicas in each DC: the count from the experiment alone is the plan's.
  BOOST_TEST(hs::plan_size(plain.experiment).ops_per_iteration == hs::plan_size(plain).ops_per_iteration);
  BOOST_TEST(hs::plan_size(plan.experiment).ops_per_iteration == hs::plan_size(plan).ops_per_iteration);
}

// One stage, one replica in each of a and b (10 ms one way, 1 Gbit/s), one
// microbatch of 10 + 20 ms a step: no in-DC ring, no pipeline. Plain DiLoCo's
// round is H steps and then the two ring steps of its sync, each a chunk of
// the fragment on the wire plus the one-way delay.
BOOST_AUTO_TEST_CASE(simulated_round_is_steps_plus_sync) {
  const int steps = 5;
  const hs::Experiment plain = diloco_experiment("diloco", 1, 2, 1, "inner_steps = 5\nouter_bits = 1", 10, 20);
  const hs::RunRecord record = simulate_steady(plain, 2);
  const double chunk_bits = static_cast<double>(record.plan.fragment_bytes) * 8 / 2;
  const double sync_s = 2 * (chunk_bits / 1e9 + 0.010);
  const double expected = steps * 0.030 + sync_s;
  for (int iteration = 0; iteration < 2; ++iteration)
    BOOST_TEST(iteration_s(record, iteration) == expected, boost::test_tools::tolerance(0.01));

  const auto iterations = hs::summarize(record);
  const auto run = hs::summarize_run(iterations);
  const hs::StepFigures figures = hs::step_figures(plain, iterations, run);
  BOOST_TEST(figures.steps_per_iteration == steps);
  BOOST_TEST(figures.mean_step_s == expected / steps, boost::test_tools::tolerance(0.01));
  // Each replica sends its ring's two chunks over the WAN: the fragment, both ways.
  BOOST_TEST(figures.wan_bytes_per_step == 2.0 * static_cast<double>(record.plan.fragment_bytes) / steps,
             boost::test_tools::tolerance(0.001));
  // Tokens of all H steps of both replicas over the round.
  BOOST_TEST(run.mean_tokens_per_s == 2.0 * steps * 1024 / expected, boost::test_tools::tolerance(0.01));
}

// Streaming with one fragment synced beside one step: a sync shorter than a
// step hides behind it; a longer one shows only its excess.
BOOST_AUTO_TEST_CASE(streamed_sync_hides_behind_compute) {
  const std::string diloco = "inner_steps = 4\nfragments = 1\noverlap_steps = 1\nouter_bits = ";
  // 1 bit: a fragment of 12 x 64 x 1024^2 / 8 = 100 MB; a chunk of 50 MB is 0.4 s at 1 Gbit/s.
  const hs::Experiment slow = diloco_experiment("streaming-diloco", 1, 2, 1, diloco + "1", 100, 200);
  const hs::RunRecord hidden_not = simulate_steady(slow, 1);
  const double sync_s = 2 * (static_cast<double>(hidden_not.plan.fragment_bytes) * 8 / 2 / 1e9 + 0.010);
  BOOST_TEST(sync_s > 0.3);
  // Started after step 2 (of 0..3), waited for after step 3: step 3 (0.3 s) overlaps it.
  BOOST_TEST(iteration_s(hidden_not, 0) == 3 * 0.3 + sync_s, boost::test_tools::tolerance(0.01));
  // Compute ten times longer: the sync hides wholly behind step 3.
  const hs::Experiment fast = diloco_experiment("streaming-diloco", 1, 2, 1, diloco + "1", 1000, 2000);
  BOOST_TEST(iteration_s(simulate_steady(fast, 1), 0) == 4 * 3.0, boost::test_tools::tolerance(0.001));
}

// The real run's workers get the same ops, and every op's event is recorded
// once: the simulator's events match the plan op for op.
BOOST_AUTO_TEST_CASE(every_op_has_one_event) {
  const hs::Experiment e =
      diloco_experiment("streaming-diloco", 2, 4, 2, "inner_steps = 6\nfragments = 3\noverlap_steps = 1");
  const hs::RunRecord record = simulate_steady(e, 2);
  std::vector<std::vector<int>> seen(record.plan.workers.size());
  for (std::size_t w = 0; w < seen.size(); ++w) seen[w].assign(record.plan.workers[w].ops.size() * 2, 0);
  for (const hs::Event& event : record.events) {
    const auto& ops = record.plan.workers[static_cast<std::size_t>(event.worker)].ops;
    BOOST_TEST_REQUIRE(static_cast<std::size_t>(event.op_index) < ops.size());
    BOOST_TEST((ops[static_cast<std::size_t>(event.op_index)].kind == event.kind));
    ++seen[static_cast<std::size_t>(event.worker)]
          [static_cast<std::size_t>(event.iteration) * ops.size() + static_cast<std::size_t>(event.op_index)];
  }
  for (const auto& counts : seen) BOOST_TEST(std::all_of(counts.begin(), counts.end(), [](int n) { return n == 1; }));
  // The results carry the figures per inner step and read back the same.
  const hs::Results results = hs::make_results(record, "");
  BOOST_TEST_REQUIRE(results.steps.has_value());
  BOOST_TEST(results.steps->steps_per_iteration == 6);
  BOOST_TEST((hs::results_from_json(hs::results_text(results), "r.json") == results));
}

// A ring of four over two DCs, a0 a1 b0 b1 (each DC's on one host, its hop
// free), over a 100 Gbit/s WAN of 50 ms one way where a piece's delay, not
// its bytes, sets the pace. Each member goes on as soon as its
// predecessor's piece is in, as the workers do, so a member's last piece
// comes down a chain of 6 hops of which 3 cross the WAN: the sync takes 3 WAN
// hops, not the 6 of a ring that waits at every step for its slowest hop.
// (The real run of the same ring: integration test
// a_streaming_diloco_run_syncs_across_dcs_beside_compute.)
BOOST_AUTO_TEST_CASE(ring_members_go_at_their_own_pace) {
  const auto scenario =
      wanlab::emulator::parse_scenario(harness_test::two_dcs_text("100gbit", "delay = \"50ms\"\n"), "fast.toml");
  const int steps = 2;
  const hs::Experiment plain = diloco_experiment("diloco", 1, 4, 1, "inner_steps = 2\nouter_bits = 1", 10, 20);
  hs::LinkModel model = harness_test::steady_links(scenario);
  model.stream_window_bytes = 0;  // no window ceiling: a piece goes at the link's rate
  model.per_stream_ceiling_bps = 0;
  const hs::RunRecord record = hs::simulate(hs::make_plan(plain, scenario), scenario, model, 1);
  for (const hs::WorkerPlan& worker : record.plan.workers) BOOST_TEST(worker.worker.dc_group.size() == 2u);
  const double chunk_bits = static_cast<double>(record.plan.fragment_bytes) * 8 / 4;  // fragment / R
  const double wan_hop_s = chunk_bits / 100e9 + 0.050;
  BOOST_TEST(wan_hop_s < 0.055);
  BOOST_TEST(iteration_s(record, 0) == steps * 0.030 + 3 * wan_hop_s, boost::test_tools::tolerance(0.02));
}
