// The planner (planner.hpp): a case whose best plan is known by hand, the
// latency ordering beating Algorithm 1's order, [egress] prices and their errors.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "experiment/experiment_internal.hpp"
#include "harness_support.hpp"
#include "parser_corpus.hpp"
#include "wanlab/harness/tools/planner.hpp"

using namespace wanlab::harness;
using harness_test::error_of;
using harness_test::three_dcs;

namespace {

// 1F1B, 4 layers of hidden 1024, forward 1 ms and backward 2 ms at pp 1 x tp 1.
std::string job(int pp, int dp, int microbatches, const std::string& rest) {
  return "name = \"p\"\ntestbed = \"t3.toml\"\nschedule = \"1f1b\"\n[model]\nlayers = 4\nhidden = 1024\nseq_len = "
         "1024\n"
         "microbatches = " +
         std::to_string(microbatches) + "\n[parallel]\npp = " + std::to_string(pp) + "\ndp = " + std::to_string(dp) +
         "\n[compute]\nforward_ms = 1\nbackward_ms = 2\n" + rest;
}

Experiment parsed(const std::string& toml) { return parse_experiment(toml, "p.toml"); }

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(planner)

// Eight GPUs in one DC, a batch of 8 microbatches, compute 3 ms per microbatch
// over pp x tp GPUs. Using all 8, a plan takes 3 (8 + (pp - 1) dp) / 8 ms plus
// its all-reduce: pp 1 has no bubble, and only dp 1 has no all-reduce, so
// tp 8, pp 1, dp 1, 8 microbatches is the one best plan, at 3 ms.
BOOST_AUTO_TEST_CASE(the_best_plan_of_a_case_known_by_hand) {
  Experiment experiment = parsed(job(1, 1, 8, "[gpus]\na = 8\n[fabric]\nlatency = \"0us\"\n"));
  PlannerReport report = search_plans(experiment, three_dcs());
  BOOST_REQUIRE(!report.ranked.empty());
  const PlanOutcome& best = report.ranked.front();
  BOOST_TEST(best.candidate.tp == 8);
  BOOST_TEST(best.candidate.pp == 1);
  BOOST_TEST(best.candidate.dp == 1);
  BOOST_TEST(best.candidate.microbatches == 8);
  BOOST_TEST(best.iteration_s == 3e-3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(best.wan_gb == 0.0);
  for (std::size_t i = 1; i < report.ranked.size(); ++i) {
    BOOST_TEST(report.ranked[i].iteration_s > best.iteration_s, i);
    // The batch stays: dp x microbatches = 8.
    BOOST_TEST(report.ranked[i].candidate.dp * report.ranked[i].candidate.microbatches == 8);
  }
  // The experiment's own shape (tp 1, pp 1, dp 1) uses one GPU: 8 x 3 ms.
  BOOST_REQUIRE(report.algorithm1.has_value());
  BOOST_TEST(report.algorithm1->iteration_s == 24e-3, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(planner_table(report, 3).find("the best plan is 8.00x faster") != std::string::npos);
}

// --out: plans.csv has a row per simulated plan, the table's best first, and
// plans.svg iteration time and utilization against egress cost, a point per
// plan, the Pareto front labelled.
BOOST_AUTO_TEST_CASE(out_writes_every_plan_as_csv_and_a_plot) {
  Experiment experiment = parsed(job(1, 1, 8, "[gpus]\na = 8\n[fabric]\nlatency = \"0us\"\n"));
  const PlannerReport report = search_plans(experiment, three_dcs());
  const auto dir = std::filesystem::temp_directory_path() / ("wanlab-plans-" + std::to_string(::getpid()));
  const std::vector<std::string> written = write_planner_files(report, wanlab::base::OutputDir::open(dir.string()));
  BOOST_TEST(written == (std::vector<std::string>{dir.string() + "/plans.csv", dir.string() + "/plans.svg"}),
             boost::test_tools::per_element());
  const std::vector<std::string> csv = lines_of(written[0]);
  BOOST_REQUIRE_EQUAL(csv.size(), report.ranked.size() + 1);
  BOOST_TEST(csv[0].starts_with("rank,tp,pp,dp,microbatches,dc_order,stages,gpus,iteration_s,"));
  BOOST_TEST(csv[1] == "1,8,1,1,8,Algorithm 1,a x1,8,0.003000,1.0000,2730666.7,0.000,0.0000,no");
  std::ostringstream svg;
  svg << std::ifstream(written[1]).rdbuf();
  BOOST_TEST(svg.str().starts_with("<svg"));
  BOOST_TEST(svg.str().find("Iteration time against WAN egress cost, one point per plan") != std::string::npos);
  BOOST_TEST(svg.str().find("GPU utilization against WAN egress cost") != std::string::npos);
  // The front's first point is the fastest of the cheapest plans: here the best plan (no WAN: $0).
  const std::vector<LinePlot> plots = planner_plots(report);
  BOOST_REQUIRE_EQUAL(plots.size(), 2u);
  const auto front = std::find_if(plots[0].series.begin(), plots[0].series.end(),
                                  [](const PlotSeries& series) { return series.name.starts_with("Pareto front"); });
  BOOST_REQUIRE(front != plots[0].series.end());
  BOOST_TEST(front->points.front().second == report.ranked.front().iteration_s);
  BOOST_TEST(front->labels.front() == "tp 8 pp 1 dp 1 mb 8");
  std::size_t plotted = 0;
  for (const PlotSeries& series : plots[0].series)
    if (!series.joined && !series.name.starts_with("the experiment")) plotted += series.points.size();
  BOOST_TEST(plotted == report.ranked.size());
  std::filesystem::remove_all(dir);
}

// Algorithm 1 chains b -> c -> a (60 + 40 ms one way); ordered by latency
// b -> a -> c (10 + 40 ms). The planner shows the gain on the same shape.
BOOST_AUTO_TEST_CASE(ordering_by_latency_beats_algorithm_1s_order) {
  Experiment experiment = parsed(job(2, 2, 8, "[gpus]\nb = 6\nc = 4\na = 2\n"));
  experiment.model.layers = 6;
  experiment.parallel.pp = 6;
  PlannerReport report = search_plans(experiment, three_dcs());
  int compared = 0;
  for (const PlanOutcome& ordered : report.ranked) {
    if (!ordered.candidate.ordered) continue;
    for (const PlanOutcome& plain : report.ranked) {
      const PlanCandidate& a = plain.candidate;
      const PlanCandidate& b = ordered.candidate;
      if (a.ordered || a.tp != b.tp || a.pp != b.pp || a.dp != b.dp) continue;
      BOOST_TEST(ordered.iteration_s < plain.iteration_s);
      ++compared;
    }
  }
  BOOST_TEST(compared >= 1);
  const std::string table = planner_table(report, 5);
  BOOST_TEST(table.find("ordered by latency") != std::string::npos, table);
}

// --jobs: the candidates on two threads give the ranking, the table and the
// progress lines of one, in the same order.
BOOST_AUTO_TEST_CASE(two_jobs_rank_as_one) {
  Experiment experiment = parsed(job(2, 2, 8, "[gpus]\nb = 6\nc = 4\na = 2\n"));
  std::vector<std::string> lines[2];
  PlannerReport reports[2];
  for (int jobs : {1, 2}) {
    PlannerOptions options;
    options.jobs = jobs;
    options.progress = [&, jobs](const std::string& line) { lines[jobs - 1].push_back(line); };
    reports[jobs - 1] = search_plans(experiment, three_dcs(), options);
  }
  const PlannerReport& one = reports[0];
  const PlannerReport& two = reports[1];
  BOOST_TEST(one.ranked.size() >= 4u);
  BOOST_REQUIRE(one.ranked.size() == two.ranked.size());
  for (std::size_t i = 0; i < one.ranked.size(); ++i) {
    const PlanCandidate& a = one.ranked[i].candidate;
    const PlanCandidate& b = two.ranked[i].candidate;
    BOOST_TEST(
        (a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.microbatches == b.microbatches && a.ordered == b.ordered),
        i);
    BOOST_TEST(one.ranked[i].iteration_s == two.ranked[i].iteration_s, i);
  }
  BOOST_TEST(one.skipped == two.skipped);
  BOOST_TEST(planner_table(one, 100) == planner_table(two, 100));
  BOOST_TEST(lines[0] == lines[1], boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(egress_is_priced_per_pair) {
  const std::string gpus = "[gpus]\na = 2\nb = 2\n";
  Experiment experiment = parsed(job(2, 1, 4, gpus + "[egress]\nprice_per_gb = 0.05\n[egress.pairs]\n\"b-a\" = 0.5\n"));
  BOOST_TEST(experiment.egress.price("a", "b") == 0.5);
  BOOST_TEST(experiment.egress.price("c", "a") == 0.05);
  PlannerReport report = search_plans(experiment, three_dcs());
  bool crossed = false;
  for (const PlanOutcome& outcome : report.ranked) {
    BOOST_TEST(outcome.egress_usd == outcome.wan_gb * 0.5, boost::test_tools::tolerance(1e-9));
    crossed = crossed || outcome.wan_gb > 0;
  }
  BOOST_TEST(crossed);
}

BOOST_AUTO_TEST_CASE(bad_egress_and_missing_gpus_are_one_line_errors) {
  const std::string base = job(2, 1, 4, "[gpus]\na = 2\nb = 2\n");  // 17 lines
  auto parse_error = [](const std::string& toml) { return error_of([&] { parsed(toml); }); };
  BOOST_TEST(
      parse_error(base + "[egress]\nprice = 1\n").starts_with(R"(p.toml:19:1: unknown key "price" in [egress])"));
  BOOST_TEST(parse_error(base + "[egress]\nprice_per_gb = -1\n") ==
             "p.toml:19:16: egress.price_per_gb: expected a price in USD per GB from 0 to 1000, got -1");
  BOOST_TEST(parse_error(base + "[egress.pairs]\n\"a_b\" = 1\n") ==
             R"(p.toml:19:1: egress.pairs: expected a key "dc-dc" naming two DCs like "east-west", got "a_b")");
  // One price covers both directions: a second for the same pair was dropped silently.
  BOOST_TEST(parse_error(base + "[egress.pairs]\nb-a = 1\na-b = 2\n") ==
             "p.toml:20:1: egress.pairs.a-b: b-a is priced already, at p.toml:19:1; one price covers both directions");
  BOOST_TEST(parse_error(base + "[egress.pairs]\na-b = 1\nb-a = 2\n") ==
             "p.toml:20:1: egress.pairs.b-a: a-b is priced already, at p.toml:19:1; one price covers both directions");
  Experiment unknown_dc = parsed(base + "[egress.pairs]\na-x = 1\n");
  BOOST_TEST(error_of([&] { plan_candidates(unknown_dc, three_dcs()); }) ==
             R"(p.toml:19:7: egress.pairs.a-x: no DC "x" in testbed t3)");
  Experiment no_gpus = parsed(job(2, 1, 4, ""));
  BOOST_TEST(error_of([&] { plan_candidates(no_gpus, three_dcs()); }) ==
             "p.toml: gpus: the planner searches the free GPUs per DC; give them in [gpus]");
}

BOOST_AUTO_TEST_SUITE_END()

// --- one stage-memory rule for `wanlab plan` and `wanlab train` ---

BOOST_AUTO_TEST_SUITE(stage_memory)

// A training-only experiment whose stage cannot fit a GPU is refused (it was
// accepted silently while only [prefill] checked memory), saying by how much.
BOOST_AUTO_TEST_CASE(a_stage_that_does_not_fit_is_refused_with_or_without_prefill) {
  // 4 layers of hidden 1024: 50M parameters, 0.8 GB of state at 16 bytes each.
  const std::string message = error_of([&] { parsed(job(1, 1, 8, "[gpus]\na = 8\nmemory_gb = 0.6\n")); });
  BOOST_TEST(message ==
                 "p.toml:9:1: a pipeline stage does not fit in 0.6 GB per GPU: weights 0.1 + gradients 0.1 + "
                 "optimizer 0.6 + activations 0.1 GB = 0.9 GB (0.3 GB too many); use tp >= 2, more stages (pp) or "
                 "[gpus] memory_gb",
             message);
  BOOST_CHECK_NO_THROW(parsed(job(2, 1, 8, "[gpus]\na = 8\nmemory_gb = 0.6\n")));  // half the state per GPU
  // A memory_gb so small that the tp it needs is past any int (found by the
  // experiment fuzzer: the count was cast to an int) is refused the same way.
  const std::string tiny = error_of([&] { parsed(job(1, 1, 8, "[gpus]\na = 8\nmemory_gb = 5e-324\n")); });
  BOOST_TEST(tiny.find("a pipeline stage does not fit in 4.94066e-324 GB per GPU") != std::string::npos, tiny);
  BOOST_TEST(tiny.find("use tp >= inf,") != std::string::npos, tiny);
}

// What the planner keeps, train accepts: every candidate `wanlab plan` would
// simulate on a shipped experiment passes the checks `wanlab train
// --simulate` runs (with the experiment's own [prefill]), so the plan it
// ranks first is one train runs. And what it drops, train refuses.
BOOST_AUTO_TEST_CASE(every_candidate_of_a_shipped_experiment_is_one_train_accepts) {
  const auto dir = parser_corpus::source_dir() / "scenarios/experiments";
  int experiments = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const Experiment experiment = load_experiment(entry.path().string());
    if (experiment.gpus.empty()) continue;
    const auto scenario = load_testbed(experiment);
    if (is_diloco(experiment.schedule)) {  // not a pipeline across DCs: refused, naming the schedule
      BOOST_CHECK_EXCEPTION(plan_candidates(experiment, scenario), ExperimentError, [](const ExperimentError& error) {
        return std::string(error.what()).find(": schedule: the planner searches Atlas's") != std::string::npos;
      });
      continue;
    }
    ++experiments;
    const std::vector<PlanCandidate> candidates = plan_candidates(experiment, scenario);
    BOOST_TEST(!candidates.empty(), entry.path());
    for (const PlanCandidate& candidate : candidates) {
      Experiment planned = with_candidate(experiment, candidate);
      planned.prefill.enabled = experiment.prefill.enabled;
      BOOST_CHECK_NO_THROW(detail::check_cross_fields(planned));
    }
  }
  BOOST_TEST(experiments >= 8);
}

// With BubbleTea on, the served model's weights count: Llama-2-70B served on
// one GPU (138 GB) cannot fit 80 GB, so the planner keeps no tp 1 plan, and
// the experiment's own pp 4 at tp 2 (87.8 GB) is refused.
BOOST_AUTO_TEST_CASE(with_prefill_on_the_served_model_counts_in_the_search) {
  const Experiment experiment =
      load_experiment((parser_corpus::source_dir() / "scenarios/experiments/bubbletea-3dc.toml").string());
  BOOST_REQUIRE(experiment.prefill.enabled);
  const std::vector<PlanCandidate> candidates = plan_candidates(experiment, load_testbed(experiment));
  BOOST_REQUIRE(!candidates.empty());
  for (const PlanCandidate& candidate : candidates) BOOST_TEST(candidate.tp >= 2, "tp " << candidate.tp);
  Experiment small_tp = experiment;
  small_tp.parallel.tp = 2;
  BOOST_TEST(error_of([&] { detail::check_cross_fields(small_tp); }).find("prefill: does not fit in 80 GB") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
