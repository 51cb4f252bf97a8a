// The planner: compute orders, model arithmetic, placements (Atlas DC
// selection and the baselines), hosts, op lists and temporal-sharing slots.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "harness_support.hpp"
#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/record/record.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
using harness_test::error_of;
using harness_test::experiment;
using harness_test::three_dcs;

namespace {

std::string joined(const std::vector<std::string>& order) {
  std::ostringstream text;
  for (std::size_t i = 0; i < order.size(); ++i) text << (i ? " " : "") << order[i];
  return text.str();
}

std::vector<std::string> dc_names_of(const std::vector<int>& stage_dc, const wanlab::emulator::Scenario& scenario) {
  std::vector<std::string> names;
  for (int dc : stage_dc) names.push_back(scenario.dcs[static_cast<std::size_t>(dc)].name);
  return names;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(compute_orders)

BOOST_AUTO_TEST_CASE(one_f_one_b_matches_the_issue_for_p4_m8) {
  BOOST_TEST(joined(compute_order(Schedule::one_f_one_b, 4, 8, 0)) ==
             "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  BOOST_TEST(joined(compute_order(Schedule::one_f_one_b, 4, 8, 3)) ==
             "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  BOOST_TEST(joined(compute_order(Schedule::one_f_one_b, 4, 8, 1)) ==
             "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
}

BOOST_AUTO_TEST_CASE(atlas_runs_one_f_one_b) {
  for (int stage = 0; stage < 4; ++stage) {
    BOOST_TEST(compute_order(Schedule::atlas, 4, 8, stage) == compute_order(Schedule::one_f_one_b, 4, 8, stage));
  }
}

BOOST_AUTO_TEST_CASE(one_f_one_b_with_fewer_microbatches_than_stages) {
  BOOST_TEST(joined(compute_order(Schedule::one_f_one_b, 4, 2, 0)) == "F0 F1 B0 B1");
  BOOST_TEST(joined(compute_order(Schedule::one_f_one_b, 4, 2, 3)) == "F0 B0 F1 B1");
}

BOOST_AUTO_TEST_CASE(gpipe_is_all_forwards_then_all_backwards) {
  BOOST_TEST(joined(compute_order(Schedule::gpipe, 4, 4, 2)) == "F0 F1 F2 F3 B0 B1 B2 B3");
}

BOOST_AUTO_TEST_CASE(every_microbatch_once_each_way) {
  for (Schedule schedule : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (int stage = 0; stage < 5; ++stage) {
      std::vector<std::string> order = compute_order(schedule, 5, 7, stage);
      BOOST_TEST(order.size() == 14u);
      for (int k = 0; k < 7; ++k) {
        auto forward = std::find(order.begin(), order.end(), "F" + std::to_string(k));
        auto backward = std::find(order.begin(), order.end(), "B" + std::to_string(k));
        BOOST_TEST((forward != order.end() && backward != order.end() && forward < backward));
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(model_arithmetic)

BOOST_AUTO_TEST_CASE(message_sizes_and_flops_derived_compute) {
  auto scenario = three_dcs();
  Experiment spec = parse_experiment(R"(name = "m"
testbed = "t3.toml"
schedule = "1f1b"
scale = 0.5
[model]
layers = 32
hidden = 4096
seq_len = 2048
bytes_per_value = 2
microbatch = 2
microbatches = 8
[parallel]
pp = 4
dp = 2
[compute]
peak_tflops = 312
mfu = 0.5
)",
                                     "m.toml");
  Plan plan = make_plan(spec, scenario);
  double n = 12.0 * 32 * 4096.0 * 4096.0;
  BOOST_TEST(plan.parameters == n);
  // b x s x h x bytes x scale = 2 x 2048 x 4096 x 2 x 0.5
  BOOST_TEST(plan.activation_bytes == 16777216u);
  double stage_bytes = n / 4 * 2 * 0.5;
  BOOST_TEST(static_cast<double>(plan.stage_param_bytes) == std::round(stage_bytes));
  // Ring all-reduce with R = 2: 2(R-1)/R = 1 x the stage's bytes.
  BOOST_TEST(plan.allreduce_bytes == plan.stage_param_bytes);
  // forward = 2 x (N/pp) x tokens / (peak x mfu); backward twice that.
  double forward_s = 2 * (n / 4) * 4096 / (312e12 * 0.5);
  BOOST_TEST(std::abs(static_cast<double>(plan.forward_ns) - forward_s * 1e9) <= 0.5);
  BOOST_TEST(std::abs(static_cast<double>(plan.backward_ns) - 2 * forward_s * 1e9) <= 0.5);
  BOOST_TEST(plan.gpus_used == 8);
}

BOOST_AUTO_TEST_CASE(recompute_makes_backward_three_forwards_and_tp_divides_compute) {
  auto scenario = three_dcs();
  std::string base = "name = \"m\"\ntestbed = \"t3.toml\"\nschedule = \"1f1b\"\n[parallel]\npp = 4\n";
  Plan plain =
      make_plan(parse_experiment(base + "tp = 1\n[compute]\npeak_tflops = 100\nmfu = 0.5\n", "m.toml"), scenario);
  Plan recompute = make_plan(
      parse_experiment(base + "tp = 1\n[compute]\npeak_tflops = 100\nmfu = 0.5\nrecompute = true\n", "m.toml"),
      scenario);
  Plan tensor =
      make_plan(parse_experiment(base + "tp = 4\n[compute]\npeak_tflops = 100\nmfu = 0.5\n", "m.toml"), scenario);
  BOOST_TEST(recompute.forward_ns == plain.forward_ns);
  BOOST_TEST(std::llabs(static_cast<long long>(recompute.backward_ns) - 3 * static_cast<long long>(plain.forward_ns)) <=
             2);
  BOOST_TEST(std::llabs(static_cast<long long>(tensor.forward_ns) * 4 - static_cast<long long>(plain.forward_ns)) <= 4);
  BOOST_TEST(tensor.gpus_used == 16);
}

BOOST_AUTO_TEST_CASE(dp_four_ring_sends_one_and_a_half_stages) {
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 2, 4, 4), three_dcs());
  BOOST_TEST(static_cast<double>(plan.allreduce_bytes) ==
             std::round(1.5 * static_cast<double>(plan.stage_param_bytes)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dc_selection)

BOOST_AUTO_TEST_CASE(largest_dc_first_takes_as_many_stages_as_fit) {
  auto scenario = three_dcs();
  // dp 2 x tp 1: a (8 GPUs) takes 4 stages, b (4) the remaining 2.
  std::vector<int> stage_dc = select_dcs({{"b", 4}, {"a", 8}, {"c", 2}}, 6, 2, 1, scenario);
  BOOST_TEST(dc_names_of(stage_dc, scenario) == (std::vector<std::string>{"a", "a", "a", "a", "b", "b"}));
}

BOOST_AUTO_TEST_CASE(one_dc_when_it_has_room_for_everything) {
  auto scenario = three_dcs();
  std::vector<int> stage_dc = select_dcs({{"a", 4}, {"c", 16}}, 4, 2, 2, scenario);
  BOOST_TEST(dc_names_of(stage_dc, scenario) == (std::vector<std::string>{"c", "c", "c", "c"}));
}

BOOST_AUTO_TEST_CASE(floor_of_gpus_over_tp_times_dp) {
  auto scenario = three_dcs();
  // tp 2 x dp 2 = 4 GPUs a stage: 7 GPUs hold 1 stage, not 1.75.
  std::vector<int> stage_dc = select_dcs({{"a", 7}, {"b", 5}, {"c", 4}}, 3, 2, 2, scenario, false);
  BOOST_TEST(dc_names_of(stage_dc, scenario) == (std::vector<std::string>{"a", "b", "c"}));
}

BOOST_AUTO_TEST_CASE(infeasible_says_what_is_missing) {
  auto scenario = three_dcs();
  std::string message = error_of([&] { select_dcs({{"a", 4}, {"b", 2}}, 4, 2, 1, scenario); });
  BOOST_TEST(message ==
             "atlas placement needs 8 GPUs for 4 stages x dp 2 x tp 1; a=4 b=2 give 3 stages: "
             "1 stage (2 GPUs) missing");
  std::string none = error_of([&] { select_dcs({{"a", 1}}, 2, 2, 1, scenario); });
  BOOST_TEST(none.find("a=1 give 0 stages: 2 stages (4 GPUs) missing") != std::string::npos, none);
}

BOOST_AUTO_TEST_CASE(ordering_by_latency_shortens_the_chain) {
  auto scenario = three_dcs();
  // Algorithm 1 order: b (most GPUs), c, a -> hops b-c 60 ms + c-a 40 ms.
  std::vector<std::pair<std::string, int>> gpus{{"b", 6}, {"c", 4}, {"a", 2}};
  std::vector<int> algorithm1 = select_dcs(gpus, 6, 2, 1, scenario, false);
  BOOST_TEST(dc_names_of(algorithm1, scenario) == (std::vector<std::string>{"b", "b", "b", "c", "c", "a"}));
  // Ordered: b, a, c -> hops b-a 10 ms + a-c 40 ms (c, a, b ties; the first found wins).
  std::vector<int> ordered = select_dcs(gpus, 6, 2, 1, scenario, true);
  BOOST_TEST(dc_names_of(ordered, scenario) == (std::vector<std::string>{"b", "b", "b", "a", "c", "c"}));
}

BOOST_AUTO_TEST_CASE(ties_keep_the_gpus_order) {
  auto scenario = three_dcs();
  std::vector<int> stage_dc = select_dcs({{"b", 4}, {"a", 4}}, 4, 2, 1, scenario);
  BOOST_TEST(dc_names_of(stage_dc, scenario) == (std::vector<std::string>{"b", "b", "a", "a"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(placements)

const std::string kGpus = "[gpus]\na = 4\nb = 4\nc = 4\n";

BOOST_AUTO_TEST_CASE(atlas_keeps_every_stages_replicas_in_one_dc) {
  Plan plan =
      make_plan(experiment("schedule = \"atlas\"", 4, 2, 8, 1, 2, "[gpus]\na = 4\nb = 2\nc = 2\n"), three_dcs());
  for (const WorkerPlan& worker_plan : plan.workers) {
    const Worker& worker = worker_plan.worker;
    BOOST_TEST(worker.dc == plan.stage_dc[static_cast<std::size_t>(worker.stage)]);
    for (const Op& op : worker_plan.ops) {
      if (op.kind == OpKind::allreduce) BOOST_TEST(!op.cross_dc);
    }
  }
  std::set<int> dcs(plan.stage_dc.begin(), plan.stage_dc.end());
  BOOST_TEST(dcs.size() == 3u);  // a holds 2 stages, b and c one each
}

BOOST_AUTO_TEST_CASE(pp_across_dc_puts_consecutive_stages_in_different_dcs) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 2, 8, 1, 2, kGpus), scenario);
  BOOST_TEST(dc_names_of(plan.stage_dc, scenario) == (std::vector<std::string>{"a", "b", "c", "a"}));
  for (const WorkerPlan& worker_plan : plan.workers) {
    BOOST_TEST(worker_plan.worker.dc == plan.stage_dc[static_cast<std::size_t>(worker_plan.worker.stage)]);
  }
}

BOOST_AUTO_TEST_CASE(dp_across_dc_puts_each_pipeline_in_its_own_dc) {
  auto scenario = three_dcs();
  Plan plan =
      make_plan(experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 2, 3, 4, 1, 2, kGpus), scenario);
  for (const WorkerPlan& worker_plan : plan.workers) {
    const Worker& worker = worker_plan.worker;
    BOOST_TEST(worker.dc == worker.replica);
    for (const Op& op : worker_plan.ops) {
      if (op.kind == OpKind::send || op.kind == OpKind::recv) BOOST_TEST(!op.cross_dc);
      if (op.kind == OpKind::allreduce) BOOST_TEST(op.cross_dc);
    }
  }
}

BOOST_AUTO_TEST_CASE(explicit_list_places_replicas_with_their_stage) {
  auto scenario = three_dcs();
  Plan plan =
      make_plan(experiment("schedule = \"gpipe\"\nplacement = [\"c\", \"c\", \"a\"]", 3, 2, 4, 1, 2, kGpus), scenario);
  BOOST_TEST(dc_names_of(plan.stage_dc, scenario) == (std::vector<std::string>{"c", "c", "a"}));
  for (const WorkerPlan& worker_plan : plan.workers) {
    BOOST_TEST(worker_plan.worker.dc == plan.stage_dc[static_cast<std::size_t>(worker_plan.worker.stage)]);
  }
}

BOOST_AUTO_TEST_CASE(infeasible_baselines_name_the_dc) {
  auto scenario = three_dcs();
  std::string pp = error_of(
      [&] { make_plan(experiment("schedule = \"1f1b\"", 4, 2, 8, 1, 2, "[gpus]\na = 2\nb = 4\nc = 4\n"), scenario); });
  BOOST_TEST(pp ==
                 "x.toml:16:1: gpus.a: pp-across-dc placement needs 4 GPUs in a (stages 0, 3 x dp 2 x tp 1); "
                 "[gpus] gives a = 2",
             pp);
  std::string dp = error_of([&] {
    make_plan(experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 4, 2, 8, 1, 2, "[gpus]\na = 4\nb = 3\n"),
              scenario);
  });
  BOOST_TEST(dp.find("dp-across-dc placement needs 4 GPUs in b (replica 1 x pp 4 x tp 1); [gpus] gives b = 3") !=
                 std::string::npos,
             dp);
  std::string atlas = error_of(
      [&] { make_plan(experiment("schedule = \"atlas\"", 4, 2, 8, 1, 2, "[gpus]\na = 4\nb = 2\n"), scenario); });
  BOOST_TEST(atlas ==
                 "x.toml: atlas placement needs 8 GPUs for 4 stages x dp 2 x tp 1; a=4 b=2 give 3 stages: "
                 "1 stage (2 GPUs) missing",
             atlas);
}

BOOST_AUTO_TEST_CASE(dcs_not_in_the_testbed_are_errors_at_their_position) {
  auto scenario = three_dcs();
  std::string gpus = error_of(
      [&] { make_plan(experiment("schedule = \"atlas\"", 2, 1, 4, 1, 2, "[gpus]\na = 4\nbb = 4\n"), scenario); });
  BOOST_TEST(gpus == "x.toml:17:1: gpus.bb: unknown DC \"bb\" in testbed t3; did you mean \"b\"?", gpus);
  std::string placement = error_of(
      [&] { make_plan(experiment("schedule = \"gpipe\"\nplacement = [\"a\", \"west\"]", 2, 1, 4), scenario); });
  BOOST_TEST(placement == "x.toml:4:19: placement[1]: unknown DC \"west\" in testbed t3 (DCs: a, b, c)", placement);
}

BOOST_AUTO_TEST_CASE(a_stages_replicas_share_a_host_and_stages_round_robin) {
  // a holds stages 0-2 of 3 replicas on its 2 hosts: stage 0 on a-0, 1 on a-1, 2 on a-0.
  Plan plan = make_plan(experiment("schedule = \"atlas\"", 4, 3, 4, 1, 2, "[gpus]\na = 9\nb = 3\n"), three_dcs());
  std::vector<std::string> expected{"a-0", "a-1", "a-0", "b-0"};
  for (const WorkerPlan& worker_plan : plan.workers) {
    BOOST_TEST(worker_plan.worker.host == expected[static_cast<std::size_t>(worker_plan.worker.stage)]);
  }
}

BOOST_AUTO_TEST_CASE(dp_across_dc_spreads_each_pipeline_over_its_dcs_hosts) {
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 3, 2, 4, 1, 2), three_dcs());
  std::vector<std::string> hosts;
  for (const WorkerPlan& worker_plan : plan.workers) hosts.push_back(worker_plan.worker.host);
  BOOST_TEST(hosts == (std::vector<std::string>{"a-0", "a-1", "a-0", "b-0", "b-1", "b-0"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(op_lists)

// Every send has exactly one recv on its peer with the same microbatch and
// bytes, and vice versa; sends follow the compute that produces them.
void check_pairing(const Plan& plan) {
  using Key = std::tuple<int, int, int>;  // sender, receiver, microbatch
  std::map<Key, std::uint64_t> sends;
  std::map<Key, std::uint64_t> recvs;
  for (const WorkerPlan& worker_plan : plan.workers) {
    int id = worker_plan.worker.id;
    for (const Op& op : worker_plan.ops) {
      if (op.kind == OpKind::send) BOOST_TEST(sends.emplace(Key{id, op.peer, op.microbatch}, op.bytes).second);
      if (op.kind == OpKind::recv) BOOST_TEST(recvs.emplace(Key{op.peer, id, op.microbatch}, op.bytes).second);
      if (op.kind == OpKind::send || op.kind == OpKind::recv) {
        const Worker& peer = plan.workers[static_cast<std::size_t>(op.peer)].worker;
        BOOST_TEST(std::abs(peer.stage - worker_plan.worker.stage) == 1);
        BOOST_TEST(peer.replica == worker_plan.worker.replica);
        BOOST_TEST(op.cross_dc == (peer.dc != worker_plan.worker.dc));
      }
    }
  }
  BOOST_TEST(sends == recvs);
  int pp = plan.experiment.parallel.pp;
  std::size_t expected =
      static_cast<std::size_t>(2 * (pp - 1) * plan.experiment.parallel.dp * plan.experiment.model.microbatches);
  BOOST_TEST(sends.size() == expected);
}

BOOST_AUTO_TEST_CASE(sends_and_recvs_pair_up) {
  auto scenario = three_dcs();
  for (const char* schedule : {"gpipe", "1f1b", "atlas"}) {
    check_pairing(make_plan(experiment(std::string("schedule = \"") + schedule + "\"", 4, 3, 6), scenario));
  }
}

BOOST_AUTO_TEST_CASE(ops_around_each_compute_step) {
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 3, 1, 2), three_dcs());
  auto kinds = [&](int stage) {
    std::string text;
    for (const Op& op : plan.workers[static_cast<std::size_t>(stage)].ops) text += to_string(op.kind)[0];
    return text;
  };
  // stage 0: F0 F1 B0 B1 -> f s f s r b r b
  BOOST_TEST(kinds(0) == "fsfsrbrb");
  // middle stage: F0 F1 B0 B1 (one warm-up forward), a recv before and a send after each
  BOOST_TEST(kinds(1) == "rfsrfsrbsrbs");
  BOOST_TEST(kinds(2) == "rfbsrfbs");
}

BOOST_AUTO_TEST_CASE(allreduce_ends_each_worker_with_the_ring_grouped_by_dc) {
  auto scenario = three_dcs();
  Plan plan = make_plan(
      experiment("schedule = \"1f1b\"\nplacement = \"dp-across-dc\"", 2, 4, 4, 1, 2, "[gpus]\na = 4\nb = 4\n"),
      scenario);
  for (const WorkerPlan& worker_plan : plan.workers) {
    BOOST_TEST((worker_plan.ops.back().kind == OpKind::allreduce));
    BOOST_TEST(worker_plan.ops.back().bytes == plan.allreduce_bytes);
    // replicas 0, 2 in a, 1, 3 in b: the ring visits a's members, then b's.
    std::vector<int> replicas;
    for (int id : worker_plan.worker.allreduce_group)
      replicas.push_back(plan.workers[static_cast<std::size_t>(id)].worker.replica);
    BOOST_TEST(replicas == (std::vector<int>{0, 2, 1, 3}));
  }
}

BOOST_AUTO_TEST_CASE(temporal_sharing_slots_cover_each_link_without_gaps_and_match_on_both_ends) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\ntemporal_sharing = true", 4, 3, 8), scenario);
  std::map<std::pair<int, int>, std::set<int>> slots;
  std::map<std::tuple<int, int, int>, int> send_slot;
  int cross = 0;
  for (const WorkerPlan& worker_plan : plan.workers) {
    for (const Op& op : worker_plan.ops) {
      if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
      BOOST_TEST(((op.link_slot >= 0) == op.cross_dc));
      if (op.kind != OpKind::send || !op.cross_dc) continue;
      ++cross;
      std::pair<int, int> link{worker_plan.worker.dc, plan.workers[static_cast<std::size_t>(op.peer)].worker.dc};
      slots[link].insert(op.link_slot);
      send_slot[{worker_plan.worker.id, op.peer, op.microbatch}] = op.link_slot;
    }
  }
  BOOST_TEST(cross > 0);
  for (const auto& [link, used] : slots) {
    // 0 .. n-1 without gaps: a gap would stall the link forever.
    BOOST_TEST(*used.rbegin() == static_cast<int>(used.size()) - 1);
  }
  for (const WorkerPlan& worker_plan : plan.workers) {
    for (const Op& op : worker_plan.ops) {
      if (op.kind == OpKind::recv && op.cross_dc) {
        BOOST_TEST(op.link_slot == send_slot.at({op.peer, worker_plan.worker.id, op.microbatch}));
      }
    }
  }
}

// Sends per turn (link_slot) on each directed link.
std::map<std::pair<int, int>, std::map<int, int>> sends_per_turn(const Plan& plan) {
  std::map<std::pair<int, int>, std::map<int, int>> turns;
  for (const WorkerPlan& worker_plan : plan.workers) {
    for (const Op& op : worker_plan.ops) {
      if (op.kind != OpKind::send || !op.cross_dc) continue;
      const int peer_dc = plan.workers[static_cast<std::size_t>(op.peer)].worker.dc;
      ++turns[{worker_plan.worker.dc, peer_dc}][op.link_slot];
    }
  }
  return turns;
}

BOOST_AUTO_TEST_CASE(a_turn_holds_as_many_sends_as_fill_the_link_together) {
  // a <-> b at 1 Gbit/s, 1 ms round trip: one stream's window (4 MiB) fills
  // it alone, so every send has a turn to itself. Capped at 100 Mbit/s per
  // flow, ten one-stream sends fill it together: a turn holds ten.
  const std::string two_dcs =
      "name = \"t2\"\n[defaults]\nrate = \"1gbit\"\ndelay = \"500us\"\n[[dc]]\nname = \"a\"\n[[dc]]\nname = \"b\"\n";
  const auto scenario = wanlab::emulator::parse_scenario(two_dcs, "t2.toml");
  const auto capped = wanlab::emulator::parse_scenario(
      two_dcs + "[[link]]\nbetween = [\"a\", \"b\"]\nflow_rate = \"100mbit\"\n", "t2.toml");
  const std::string sharing = "schedule = \"1f1b\"\nstreams = 1\npacing = false\ntemporal_sharing = true";
  const Experiment spec = experiment(sharing, 2, 2, 16);  // 2 x 16 sends each way
  for (const auto& [link, turns] : sends_per_turn(make_plan(spec, scenario))) {
    BOOST_TEST(turns.size() == 32u);
    for (const auto& [slot, sends] : turns) BOOST_TEST(sends == 1);
  }
  for (const auto& [link, turns] : sends_per_turn(make_plan(spec, capped))) {
    std::vector<int> sizes;
    for (const auto& [slot, sends] : turns) sizes.push_back(sends);
    BOOST_TEST(sizes == (std::vector<int>{10, 10, 10, 2}), link.first << "->" << link.second);
  }
  // The simulator gives a turn's sends the link together: sharing it in
  // turns is no slower than not sharing it, where one send cannot fill it.
  const auto iteration_s = [&](const Experiment& e) {
    const Plan plan = make_plan(e, capped);
    return summarize_run(summarize(simulate(plan, capped, link_model_for(capped, 1.0), 2))).mean_iteration_s;
  };
  const double turns = iteration_s(spec);
  const double free_for_all = iteration_s(experiment("schedule = \"1f1b\"\nstreams = 1\npacing = false", 2, 2, 16));
  BOOST_TEST(turns <= free_for_all * 1.001, turns << " s in turns, " << free_for_all << " s without");
}

BOOST_AUTO_TEST_CASE(replicas_take_turns_microbatch_by_microbatch) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"\ntemporal_sharing = true", 2, 3, 4), scenario);
  // Stage 0 of each replica sends activations over a -> b; for microbatch k
  // the three replicas' slots are consecutive, replica 0 first.
  for (int k = 0; k < 4; ++k) {
    std::vector<int> slots;
    for (int replica = 0; replica < 3; ++replica) {
      for (const Op& op : plan.workers[static_cast<std::size_t>(plan.worker_id(0, replica))].ops) {
        if (op.kind == OpKind::send && op.microbatch == k) slots.push_back(op.link_slot);
      }
    }
    BOOST_REQUIRE(slots.size() == 3u);
    BOOST_TEST(slots[1] == slots[0] + 1);
    BOOST_TEST(slots[2] == slots[0] + 2);
  }
}

BOOST_AUTO_TEST_CASE(no_slots_without_temporal_sharing) {
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 2, 4), three_dcs());
  for (const WorkerPlan& worker_plan : plan.workers) {
    for (const Op& op : worker_plan.ops) BOOST_TEST(op.link_slot == -1);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(run_size)

// The size from the fields (known before building) is what the plan holds.
BOOST_AUTO_TEST_CASE(the_size_from_the_fields_counts_the_plans_ops) {
  auto scenario = three_dcs();
  for (const char* schedule : {"gpipe", "1f1b", "atlas"}) {
    for (auto [pp, dp, microbatches] :
         {std::tuple{1, 1, 5}, std::tuple{2, 1, 3}, std::tuple{4, 3, 8}, std::tuple{5, 2, 2}, std::tuple{3, 4, 1}}) {
      Experiment given = experiment(std::string("schedule = \"") + schedule + "\"", pp, dp, microbatches);
      Plan plan = make_plan(given, scenario);
      std::uint64_t ops = 0;
      for (const WorkerPlan& worker_plan : plan.workers) ops += worker_plan.ops.size();
      PlanSize expected = plan_size(given);
      PlanSize counted = plan_size(plan);
      BOOST_TEST(counted.ops_per_iteration == ops);
      BOOST_TEST(expected.ops_per_iteration == ops, schedule << " pp " << pp << " dp " << dp);
      BOOST_TEST(expected.steps_per_iteration == counted.steps_per_iteration);
      // Each all-reduce counts its 2(dp - 1) ring steps.
      std::uint64_t ring = dp > 1 ? static_cast<std::uint64_t>(pp * dp) * (2 * (dp - 1) - 1) : 0;
      BOOST_TEST(counted.steps_per_iteration == ops + ring);
    }
  }
}

BOOST_AUTO_TEST_CASE(make_plan_refuses_a_run_beyond_the_limit) {
  Experiment big = experiment("schedule = \"1f1b\"", 4, 1, 8);  // 160 steps per iteration
  big.iterations = static_cast<int>(kMaxSimulatedSteps / 160);
  BOOST_TEST(error_of([&] { make_plan(big, three_dcs()); }) == "(no error)");
  big.iterations += 1;
  std::string message = error_of([&] { make_plan(big, three_dcs()); });
  BOOST_TEST(message ==
             "x.toml: the run is too big: iterations 125001 x 160 steps per iteration (parallel.pp 4, "
             "parallel.dp 1, model.microbatches 8) = 20000160 steps; at most 20000000 (a step is a forward, "
             "backward, send, recv or all-reduce ring step)");
}

BOOST_AUTO_TEST_SUITE_END()
