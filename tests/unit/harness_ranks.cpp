// Which workers a run's outputs show (ranks.hpp): --ranks' forms and errors,
// the representative workers of a large simulated plan, and that the trace,
// the timeline and ranks/ hold those workers and no others.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "harness_support.hpp"
#include "wanlab/harness/report/rank_trace.hpp"
#include "wanlab/harness/report/timeline.hpp"
#include "wanlab/harness/report/trace.hpp"

namespace hs = wanlab::harness;
using harness_test::JsonValue;

namespace {

// 3 stages x 30 replicas: 90 workers, over kAllRanksUpTo.
harness_test::SimulatedRun wide_run() {
  harness_test::SimulatedRun run;
  run.plan = hs::make_plan(harness_test::experiment("schedule = \"atlas\"", 3, 30, 2, 1, 2), run.scenario);
  run.record = hs::simulate(run.plan, run.scenario, harness_test::steady_links(run.scenario), 2);
  return run;
}

std::string error_of(std::string_view spec, int workers) {
  try {
    hs::parse_rank_spec(spec, workers);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

// The worker ids trace.json gives a track ("thread_name" under the workers' process).
std::set<int> traced_workers(const std::string& trace) {
  std::set<int> workers;
  const JsonValue parsed = harness_test::parse_json(trace);
  for (const JsonValue& event : parsed["traceEvents"].items)
    if (event["ph"].text == "M" && event["name"].text == "thread_name" && event["pid"].number == 1 &&
        event["tid"].number > 0)
      workers.insert(static_cast<int>(event["tid"].number) - 1);
  return workers;
}

std::set<int> shown_workers(const hs::RankSelection& ranks) {
  std::set<int> workers;
  for (std::size_t id = 0; id < ranks.shown.size(); ++id)
    if (ranks.shown[id]) workers.insert(static_cast<int>(id));
  return workers;
}

}  // namespace

BOOST_AUTO_TEST_CASE(ranks_take_auto_all_representative_or_worker_ids_and_refuse_anything_else) {
  BOOST_TEST((hs::parse_rank_spec("auto", 8).kind == hs::RankSpec::Kind::automatic));
  BOOST_TEST((hs::parse_rank_spec("all", 8).kind == hs::RankSpec::Kind::all));
  BOOST_TEST((hs::parse_rank_spec("representative", 8).kind == hs::RankSpec::Kind::representative));
  const hs::RankSpec listed = hs::parse_rank_spec("0,7,3", 8);
  BOOST_TEST((listed.kind == hs::RankSpec::Kind::listed));
  BOOST_TEST(listed.ids == (std::vector<int>{0, 7, 3}), boost::test_tools::per_element());
  for (const auto& [spec, expected] : std::vector<std::pair<std::string, std::string>>{{"8", "got \"8\""},
                                                                                       {"x", "got \"x\""},
                                                                                       {"", "got \"\""},
                                                                                       {"1,,2", "got \"\""},
                                                                                       {"-1", "got \"-1\""},
                                                                                       {"1,2,", "got \"\""},
                                                                                       {"All", "got \"All\""}}) {
    BOOST_TEST_CONTEXT("--ranks " << spec) {
      const std::string error = error_of(spec, 8);
      BOOST_TEST(error.find("worker ids separated by commas (the plan has 8)") != std::string::npos, error);
      BOOST_TEST(error.find(expected) != std::string::npos, error);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_large_simulated_plan_shows_replica_zero_and_the_last_to_finish_of_every_stage) {
  const harness_test::SimulatedRun run = wide_run();
  BOOST_REQUIRE(run.plan.workers.size() > hs::kAllRanksUpTo);
  const hs::RankSelection ranks = hs::select_ranks(run.record, {});
  BOOST_TEST(!ranks.all());
  std::set<int> replicas;
  std::set<int> stages_of_replica_zero;
  for (const hs::WorkerPlan& worker_plan : run.plan.workers) {
    const hs::Worker& worker = worker_plan.worker;
    if (!ranks.shows(worker.id)) continue;
    replicas.insert(worker.replica);
    if (worker.replica == 0) stages_of_replica_zero.insert(worker.stage);
  }
  BOOST_TEST(stages_of_replica_zero.size() == 3u);
  BOOST_TEST(replicas.count(0) == 1u);
  BOOST_TEST(replicas.size() <= 2u);
  BOOST_TEST(ranks.count() == 3 * replicas.size());
  // The replica drawn beside 0 is the one whose op ended last.
  std::int64_t last_end = 0;
  for (const hs::Event& event : run.record.events) last_end = std::max(last_end, event.end_ns);
  bool last_shown = false;
  for (const hs::Event& event : run.record.events)
    if (event.end_ns == last_end && ranks.shows(event.worker)) last_shown = true;
  BOOST_TEST(last_shown);
  BOOST_TEST(ranks.description.find("of 90 workers") != std::string::npos, ranks.description);
  // A real run (or --ranks all) shows everyone, whatever its size.
  hs::RunRecord real = run.record;
  real.runtime = "podman";
  BOOST_TEST(hs::select_ranks(real, {}).all());
  BOOST_TEST(hs::select_ranks(run.record, hs::parse_rank_spec("all", 90)).all());
  const harness_test::SimulatedRun small = harness_test::pp_across_dc_run();
  BOOST_TEST(hs::select_ranks(small.record, {}).all());
}

BOOST_AUTO_TEST_CASE(the_trace_the_timeline_and_ranks_hold_the_shown_workers_only) {
  const harness_test::SimulatedRun run = wide_run();
  for (const std::string spec : {"auto", "4,50,89", "all"}) {
    BOOST_TEST_CONTEXT("--ranks " << spec) {
      const hs::RankSelection ranks = hs::select_ranks(run.record, hs::parse_rank_spec(spec, 90));
      const std::set<int> shown = shown_workers(ranks);
      const std::string trace = hs::trace_json(run.record, ranks);
      BOOST_TEST(traced_workers(trace) == shown, boost::test_tools::per_element());
      const JsonValue parsed = harness_test::parse_json(trace);
      BOOST_TEST(parsed["otherData"]["ranks"].text == ranks.description);
      // Every span on a worker's track (pid 1, tid > 0) is a shown worker's.
      for (const JsonValue& event : parsed["traceEvents"].items)
        if (event["ph"].text == "X" && event["pid"].number == 1 && event["tid"].number > 0)
          BOOST_TEST(shown.count(static_cast<int>(event["tid"].number) - 1) == 1u);
      const std::string svg = hs::timeline_svg(run.record, 1, ranks);
      std::size_t rows = 0;
      for (std::size_t at = svg.find("· replica"); at != std::string::npos; at = svg.find("· replica", at + 1)) ++rows;
      BOOST_TEST(rows == shown.size());
      // Left-out rows are summarised per DC: the spread of GPU busy over all its workers.
      BOOST_TEST((svg.find("% over all ") != std::string::npos) == !ranks.all(), svg.substr(0, 3000));
      const std::filesystem::path dir =
          std::filesystem::temp_directory_path() / ("wanlab-ranks-test-" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir);
      hs::write_rank_traces(run.record, ranks, wanlab::base::OutputDir::open(dir.string()));
      std::set<int> written;
      for (const auto& entry : std::filesystem::directory_iterator(dir / "ranks"))
        written.insert(std::stoi(entry.path().stem().string().substr(5)));  // rank-N
      std::filesystem::remove_all(dir);
      BOOST_TEST(written == shown, boost::test_tools::per_element());
    }
  }
}
