// Experiment files: defaults that follow the schedule, command-line overrides,
// bad files with file:line:column errors, and the shipped experiment files.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness_support.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;

namespace {

// Lines 1-10; the cases below change or add lines.
const std::string kBase = harness_test::kSmallExperiment;

// kBase edited by line (harness_support.hpp).
std::string with_line(int line, const std::string& text) { return harness_test::with_line(kBase, line, text); }
std::string inserted(int line, const std::string& text) { return harness_test::inserted(kBase, line, text); }
std::string first_lines(int count) { return harness_test::first_lines(kBase, count); }

std::string error_of(const std::string& toml) {
  try {
    parse_experiment(toml, "e.toml");
  } catch (const ExperimentError& error) {
    return error.what();
  }
  return "(no error)";
}

std::string override_error(Experiment experiment, std::string_view option, std::string_view value) {
  try {
    apply_override(experiment, option, value);
  } catch (const ExperimentError& error) {
    return error.what();
  }
  return "(no error)";
}

std::filesystem::path experiments_dir() {
  // ctest sets WANLAB_SOURCE_DIR; run by hand, this file's path gives the tree.
  const char* source = std::getenv("WANLAB_SOURCE_DIR");
  std::filesystem::path root = source != nullptr
                                   ? std::filesystem::path(source)
                                   : std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
  return root / "scenarios" / "experiments";
}

using harness_test::BadFile;

const std::vector<BadFile>& bad_files() {
  static const std::vector<BadFile> cases{
      {"toml syntax", inserted(4, "streams = = 3"), "e.toml:4:"},
      {"unknown top-level key", inserted(4, "stremas = 4"),
       R"(e.toml:4:1: unknown key "stremas" in the top level; did you mean "streams"?)"},
      {"unknown model key", inserted(5, "layer = 4"),
       R"(e.toml:5:1: unknown key "layer" in [model]; did you mean "layers"?)"},
      {"unknown parallel key", inserted(7, "ppp = 2"),
       R"(e.toml:7:1: unknown key "ppp" in [parallel]; did you mean "pp"?)"},
      {"unknown compute key", inserted(9, "foward_ms = 1"),
       R"(e.toml:9:1: unknown key "foward_ms" in [compute]; did you mean "forward_ms"?)"},
      {"missing name", with_line(1, ""), R"(e.toml:1:1: missing required key "name")"},
      {"bad name", with_line(1, "name = \"Atlas 3\""), R"(e.toml:1:8: name: expected 1 to 64 characters)"},
      {"missing testbed", with_line(2, ""), R"(e.toml:1:1: missing required key "testbed")"},
      {"testbed not a string", with_line(2, "testbed = 3"),
       R"(e.toml:2:11: testbed: expected a scenario path like "../three-dc.toml", got 3)"},
      {"missing schedule", with_line(3, ""), R"(e.toml:1:1: missing required key "schedule")"},
      {"unknown schedule", with_line(3, "schedule = \"1f1\""),
       R"(e.toml:3:12: schedule: expected "gpipe", "1f1b", "atlas", "diloco" or "streaming-diloco", got "1f1"; did you mean "1f1b"?)"},
      {"streams of the wrong type", inserted(4, "streams = \"8\""),
       R"(e.toml:4:11: streams: expected an integer from 1 to 64, got "8")"},
      {"zero streams", inserted(4, "streams = 0"), "e.toml:4:11: streams: expected an integer from 1 to 64, got 0"},
      {"too many streams", inserted(4, "streams = 65"),
       "e.toml:4:11: streams: expected an integer from 1 to 64, got 65"},
      {"temporal sharing not a bool", inserted(4, "temporal_sharing = \"yes\""),
       R"(e.toml:4:20: temporal_sharing: expected true or false, got "yes")"},
      {"zero iterations", inserted(4, "iterations = 0"),
       "e.toml:4:14: iterations: expected an integer from 1 to 100000, got 0"},
      {"negative seed", inserted(4, "seed = -1"), "e.toml:4:8: seed: expected an integer from 0 to"},
      {"scale above 1", inserted(4, "scale = 2"), "e.toml:4:9: scale: expected a number from 1e-06 to 1, got 2"},
      {"zero scale", inserted(4, "scale = 0.0"), "e.toml:4:9: scale: expected a number from 1e-06 to 1, got 0"},
      {"scale below the least", inserted(4, "scale = 1e-7"),
       "e.toml:4:9: scale: expected a number from 1e-06 to 1, got 1e-07"},
      {"unknown placement", inserted(4, "placement = \"atlass\""),
       R"(e.toml:4:13: placement: expected "atlas", "pp-across-dc", "dp-across-dc" or a list of DCs, one per stage, got "atlass"; did you mean "atlas"?)"},
      {"placement list too short", inserted(4, "placement = [\"east\"]"),
       "e.toml:4:13: placement: 1 DCs for pp = 2 stages; list one DC per stage"},
      {"placement list with a number", inserted(4, "placement = [\"east\", 2]"),
       R"(e.toml:4:22: placement[1]: expected a DC name like "east", got 2)"},
      {"model not a table", "name = \"e\"\ntestbed = \"t.toml\"\nschedule = \"1f1b\"\nmodel = 3\n",
       "e.toml:4:9: model: expected a table ([model]), got 3"},
      {"zero layers", with_line(5, "layers = 0"),
       "e.toml:5:10: model.layers: expected an integer from 1 to 100000, got 0"},
      {"bytes per value of 16", inserted(5, "bytes_per_value = 16"),
       "e.toml:5:19: model.bytes_per_value: expected an integer from 1 to 8, got 16"},
      {"float microbatches", inserted(5, "microbatches = 2.5"),
       "e.toml:5:16: model.microbatches: expected an integer from 1 to 4096, got 2.5"},
      {"more stages than layers", with_line(7, "pp = 8"),
       "e.toml:7:6: parallel.pp: 8 stages for 4 layers; every stage needs at least one layer"},
      {"zero dp", inserted(8, "dp = 0"), "e.toml:8:6: parallel.dp: expected an integer from 1 to 100000, got 0"},
      {"missing compute", first_lines(7),
       "e.toml:1:1: missing [compute]: give peak_tflops and mfu, or forward_ms and backward_ms"},
      {"both kinds of compute", inserted(9, "peak_tflops = 312\nmfu = 0.4"),
       "e.toml:11:14: compute: give either peak_tflops and mfu, or forward_ms and backward_ms, not both"},
      {"forward without backward", with_line(10, ""),
       "e.toml:9:14: compute.forward_ms: also needs compute.backward_ms"},
      {"peak without mfu", first_lines(8) + "peak_tflops = 312\n",
       "e.toml:9:15: compute.peak_tflops: also needs compute.mfu"},
      {"mfu above 1", first_lines(8) + "peak_tflops = 312\nmfu = 1.5\n",
       "e.toml:10:7: compute.mfu: expected a number greater than 0 and at most 1, got 1.5"},
      {"negative forward time", with_line(9, "forward_ms = -1"),
       "e.toml:9:14: compute.forward_ms: expected a number greater than 0 and at most 1000000, got -1"},
      {"recompute with given times", kBase + "recompute = true\n",
       "e.toml:11:13: compute.recompute: only used with peak_tflops and mfu"},
      {"negative gpus", kBase + "[gpus]\neast = -1\n",
       "e.toml:12:8: gpus.east: expected a number of GPUs from 0 to 1000000, got -1"},
      {"gpus as text", kBase + "[gpus]\neast = \"4\"\n",
       R"(e.toml:12:8: gpus.east: expected a number of GPUs from 0 to 1000000, got "4")"},
      // Found by the experiment fuzzer (tests/data/experiment-corpus/regress-*):
      // the input's control characters reached the message as they were.
      {"newline in the schedule", with_line(3, "schedule = \"a\\nb\""),
       R"(e.toml:3:12: schedule: expected "gpipe", "1f1b", "atlas", "diloco" or "streaming-diloco", got "a\x0ab")"},
      {"newline in the placement", inserted(4, "placement = \"a\\nb\""),
       R"(e.toml:4:13: placement: expected "atlas", "pp-across-dc", "dp-across-dc" or a list of DCs, one per stage, got "a\x0ab")"},
      {"newline in a gpus key", kBase + "[gpus]\n\"a\\nb\" = -1\n",
       R"(e.toml:12:10: gpus."a\x0ab": expected a number of GPUs from 0 to 1000000, got -1)"},
      {"control byte where TOML expects a value", inserted(4, "streams = \x01"), "e.toml:4:11: "},
  };
  return cases;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(parsing)

BOOST_AUTO_TEST_CASE(the_base_file_parses) {
  Experiment experiment = parse_experiment(kBase, "dir/e.toml");
  BOOST_TEST(experiment.name == "e");
  BOOST_TEST(experiment.testbed_path == "dir/t3.toml");
  BOOST_TEST(experiment.parallel.pp == 2);
  BOOST_TEST(experiment.model.layers == 4);
  BOOST_TEST(experiment.model.hidden == 4096);  // the struct's default
  BOOST_TEST(*experiment.compute.forward_ms == 1.0);
}

BOOST_AUTO_TEST_CASE(bad_files_give_one_line_errors_at_their_position) {
  harness_test::expect_errors(bad_files(), error_of);
}

BOOST_AUTO_TEST_CASE(testbed_paths_are_relative_to_the_experiment_file) {
  std::string toml = with_line(2, "testbed = \"../three-dc.toml\"");
  BOOST_TEST(parse_experiment(toml, "/x/experiments/e.toml").testbed_path == "/x/three-dc.toml");
  BOOST_TEST(parse_experiment(toml, "e.toml").testbed_path == "../three-dc.toml");
  BOOST_TEST(parse_experiment(with_line(2, "testbed = \"/s/t.toml\""), "/x/e.toml").testbed_path == "/s/t.toml");
}

BOOST_AUTO_TEST_CASE(flops_derived_compute_and_recompute) {
  Experiment experiment =
      parse_experiment(first_lines(8) + "peak_tflops = 312\nmfu = 0.45\nrecompute = true\n", "e.toml");
  BOOST_TEST(*experiment.compute.peak_tflops == 312.0);
  BOOST_TEST(*experiment.compute.mfu == 0.45);
  BOOST_TEST(experiment.compute.recompute);
  BOOST_TEST(!experiment.compute.forward_ms.has_value());
}

BOOST_AUTO_TEST_CASE(gpus_keep_file_order) {
  Experiment experiment = parse_experiment(kBase + "[gpus]\nwest = 4\neast = 2\ncentral = 0\n", "e.toml");
  BOOST_TEST((experiment.gpus == std::vector<std::pair<std::string, int>>{{"west", 4}, {"east", 2}, {"central", 0}}));
  BOOST_TEST(experiment.where("gpus.east") == "e.toml:13:1");
}

BOOST_AUTO_TEST_CASE(missing_files_say_so) {
  std::string message;
  try {
    load_experiment("/nonexistent/e.toml");
  } catch (const ExperimentError& error) {
    message = error.what();
  }
  BOOST_TEST(message == "/nonexistent/e.toml: cannot open experiment: No such file or directory");
  Experiment experiment = parse_experiment(kBase, "/nonexistent/e.toml");
  try {
    load_testbed(experiment);
    message = "(no error)";
  } catch (const ExperimentError& error) {
    message = error.what();
  }
  BOOST_TEST(message == R"(/nonexistent/e.toml:2:11: testbed: no scenario file at "/nonexistent/t3.toml")");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(schedule_defaults_and_overrides)

BOOST_AUTO_TEST_CASE(atlas_implies_its_placement_streams_and_temporal_sharing) {
  Experiment atlas = parse_experiment(kBase, "e.toml");
  BOOST_TEST((atlas.placement == Placement::atlas));
  BOOST_TEST(atlas.streams == 8);
  BOOST_TEST(atlas.temporal_sharing);
  for (const char* baseline : {"gpipe", "1f1b"}) {
    Experiment experiment = parse_experiment(with_line(3, std::string("schedule = \"") + baseline + "\""), "e.toml");
    BOOST_TEST((experiment.placement == Placement::pp_across_dc));
    BOOST_TEST(experiment.streams == 1);
    BOOST_TEST(!experiment.temporal_sharing);
  }
}

BOOST_AUTO_TEST_CASE(the_file_can_switch_one_element_off) {
  Experiment experiment = parse_experiment(inserted(4, "streams = 1\ntemporal_sharing = false"), "e.toml");
  BOOST_TEST((experiment.placement == Placement::atlas));
  BOOST_TEST(experiment.streams == 1);
  BOOST_TEST(!experiment.temporal_sharing);
}

BOOST_AUTO_TEST_CASE(schedule_override_rederives_what_was_not_given) {
  Experiment experiment = parse_experiment(inserted(4, "streams = 4"), "e.toml");
  apply_override(experiment, "--schedule", "1f1b");
  BOOST_TEST((experiment.schedule == Schedule::one_f_one_b));
  BOOST_TEST((experiment.placement == Placement::pp_across_dc));
  BOOST_TEST(!experiment.temporal_sharing);
  BOOST_TEST(experiment.streams == 4);  // given in the file
  // Elements switched on one at a time, in either order.
  apply_override(experiment, "--temporal-sharing", "on");
  apply_override(experiment, "--placement", "atlas");
  apply_override(experiment, "schedule", "gpipe");
  BOOST_TEST(experiment.temporal_sharing);
  BOOST_TEST((experiment.placement == Placement::atlas));
  BOOST_TEST((experiment.schedule == Schedule::gpipe));
}

BOOST_AUTO_TEST_CASE(placement_override_takes_a_dc_list) {
  Experiment experiment = parse_experiment(kBase, "e.toml");
  apply_override(experiment, "--placement", "east,west");
  BOOST_TEST((experiment.placement == Placement::explicit_list));
  BOOST_TEST((experiment.placement_dcs == std::vector<std::string>{"east", "west"}));
  BOOST_TEST(experiment.where("placement[1]") == "--placement");
  apply_override(experiment, "--placement", "dp-across-dc");
  BOOST_TEST((experiment.placement == Placement::dp_across_dc));
  BOOST_TEST(experiment.placement_dcs.empty());
}

BOOST_AUTO_TEST_CASE(overrides_and_iterations) {
  Experiment experiment = parse_experiment(kBase, "e.toml");
  apply_override(experiment, "--streams", "16");
  apply_override(experiment, "--iterations", "3");
  apply_override(experiment, "--temporal-sharing", "off");
  apply_override(experiment, "--reorder-dcs", "off");
  BOOST_TEST(!experiment.reorder_dcs);
  BOOST_TEST(experiment.streams == 16);
  BOOST_TEST(experiment.iterations == 3);
  BOOST_TEST(!experiment.temporal_sharing);
}

BOOST_AUTO_TEST_CASE(bad_overrides_name_the_flag) {
  Experiment experiment = parse_experiment(kBase, "e.toml");
  BOOST_TEST(override_error(experiment, "--streams", "many") ==
             R"(--streams: expected a whole number from 1 to 64, got "many")");
  BOOST_TEST(override_error(experiment, "--streams", "8x") ==
             R"(--streams: expected a whole number from 1 to 64, got "8x")");
  BOOST_TEST(override_error(experiment, "--iterations", "0") ==
             R"(--iterations: expected a whole number from 1 to 100000, got "0")");
  BOOST_TEST(override_error(experiment, "--temporal-sharing", "yes") ==
             R"(--temporal-sharing: expected on or off, got "yes")");
  BOOST_TEST(
      override_error(experiment, "--schedule", "gpip") ==
      R"(--schedule: expected gpipe, 1f1b, atlas, diloco or streaming-diloco, got "gpip"; did you mean "gpipe"?)");
  BOOST_TEST(override_error(experiment, "--placement", "east,west,east") ==
             "--placement: 3 DCs for pp = 2 stages; list one DC per stage");
  BOOST_TEST(
      override_error(experiment, "--placement", "pp-acros-dc") ==
      R"(--placement: expected atlas, pp-across-dc, dp-across-dc or DCs like "east,east,west,west", got "pp-acros-dc"; did you mean "pp-across-dc"?)");
  BOOST_TEST(override_error(experiment, "--stream", "4") ==
             "--stream: unknown experiment option; did you mean --streams?");
}

BOOST_AUTO_TEST_SUITE_END()

// Checks between fields run on the final values: whichever sections the file
// has, and again after each command-line override.
BOOST_AUTO_TEST_SUITE(checks_on_final_values)

// kBase without [parallel] (lines 6-7): pp is the default 4.
std::string without_parallel(const std::string& layers_line) {
  return first_lines(4) + layers_line + "\n[compute]\nforward_ms = 1\nbackward_ms = 2\n";
}

BOOST_AUTO_TEST_CASE(layers_below_the_default_pp_without_parallel) {
  BOOST_TEST(error_of(without_parallel("layers = 2")) ==
             "e.toml:5:10: model.layers: 2 layers for the default pp = 4 stages; every stage needs at least one "
             "layer (set [parallel] pp)");
  BOOST_TEST(error_of(without_parallel("layers = 4")) == "(no error)");
}

BOOST_AUTO_TEST_CASE(pp_above_the_default_layers_without_model) {
  std::string toml = first_lines(3) + "[parallel]\npp = 33\n[compute]\nforward_ms = 1\nbackward_ms = 2\n";
  BOOST_TEST(error_of(toml) ==
             "e.toml:5:6: parallel.pp: 33 stages for 32 layers; every stage needs at least one layer");
}

// The simulator's cap; the emulated testbed's (1024) is checked before a real run (harness_fabric.cpp).
BOOST_AUTO_TEST_CASE(more_workers_than_the_cap) {
  BOOST_TEST(error_of(inserted(8, "dp = 32768") + "[fabric]\n") == "(no error)");
  std::string toml = with_line(5, "layers = 8");
  toml.replace(toml.find("pp = 2"), 6, "pp = 4\ndp = 65536");
  BOOST_TEST(error_of(toml) == "e.toml:6:1: parallel: pp x dp = 262144 workers; at most 131072");
}

BOOST_AUTO_TEST_CASE(placement_list_against_the_default_pp) {
  std::string toml = first_lines(3) + "placement = [\"east\", \"west\"]\n[compute]\nforward_ms = 1\nbackward_ms = 2\n";
  BOOST_TEST(error_of(toml) == "e.toml:4:13: placement: 2 DCs for pp = 4 stages; list one DC per stage");
}

BOOST_AUTO_TEST_CASE(a_run_too_big_for_the_limit_is_refused_in_the_file) {
  std::string toml = first_lines(3) + "iterations = 100000\n[model]\nlayers = 4\nmicrobatches = 4096\n" +
                     "[parallel]\npp = 2\n[compute]\nforward_ms = 1\nbackward_ms = 2\n";
  std::string message = error_of(toml);
  BOOST_TEST(message.find("e.toml: the run is too big: iterations 100000 x 32768 steps per iteration (parallel.pp 2, "
                          "parallel.dp 1, model.microbatches 4096) = 3276800000 steps; at most 20000000 ") == 0,
             message);
}

BOOST_AUTO_TEST_CASE(placement_override_is_checked_against_the_default_pp) {
  Experiment experiment = parse_experiment(without_parallel("layers = 8"), "e.toml");
  BOOST_TEST(override_error(experiment, "--placement", "east,west") ==
             "--placement: 2 DCs for pp = 4 stages; list one DC per stage");
  BOOST_TEST(override_error(experiment, "--placement", "east,west,east,west") == "(no error)");
}

BOOST_AUTO_TEST_CASE(iterations_override_is_checked_against_the_run_size) {
  Experiment experiment = parse_experiment(inserted(5, "microbatches = 4096"), "e.toml");  // 32768 steps per iteration
  BOOST_TEST(override_error(experiment, "--iterations", "610") == "(no error)");
  std::string message = override_error(experiment, "--iterations", "611");
  BOOST_TEST(message.find("--iterations: the run is too big: iterations 611 x 32768 steps per iteration") == 0,
             message);
  BOOST_TEST(message.find('\n') == std::string::npos);
}

// A schedule, streams or temporal sharing from the command line cannot break a
// check; what they leave is checked all the same (a list the file gave stays).
BOOST_AUTO_TEST_CASE(every_override_leaves_a_checked_experiment) {
  Experiment experiment = parse_experiment(inserted(4, "placement = [\"east\", \"west\"]"), "e.toml");
  for (auto [option, value] :
       {std::pair{"--schedule", "gpipe"}, std::pair{"--streams", "3"}, std::pair{"--temporal-sharing", "on"},
        std::pair{"--scale", "0.5"}, std::pair{"--iterations", "7"}}) {
    BOOST_TEST(override_error(experiment, option, value) == "(no error)", option);
    apply_override(experiment, option, value);
  }
  BOOST_TEST((experiment.placement == Placement::explicit_list));
  BOOST_TEST(experiment.scale == 0.5);
  BOOST_TEST(experiment.where("scale") == "--scale");
}

BOOST_AUTO_TEST_CASE(override_numbers_are_strict) {
  Experiment experiment = parse_experiment(kBase, "e.toml");
  for (const char* bad : {" 8", "+8", "8 ", "0x8", "", "8.0", "1e1", "99999999999999999999"}) {
    BOOST_TEST(
        override_error(experiment, "--streams", bad).find("--streams: expected a whole number from 1 to 64, got ") == 0,
        bad);
  }
  BOOST_TEST(override_error(experiment, "--scale", "0") == R"(--scale: expected a number from 1e-06 to 1, got "0")");
  BOOST_TEST(override_error(experiment, "--scale", "nan") ==
             R"(--scale: expected a number from 1e-06 to 1, got "nan")");
  BOOST_TEST(override_error(experiment, "--scale", "1.5") ==
             R"(--scale: expected a number from 1e-06 to 1, got "1.5")");
  BOOST_TEST(override_error(experiment, "--scale", "1e-6") == "(no error)");
  // Untrusted text is shown bounded.
  std::string message = override_error(experiment, "--iterations", std::string(100000, '9'));
  BOOST_TEST(message.size() < 200u, message);
  BOOST_TEST(override_error(experiment, "--temporal-sharing", std::string(1000, 'x')).size() < 200u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(shipped_experiments)

BOOST_AUTO_TEST_CASE(every_file_loads_plans_and_simulates) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(experiments_dir())) {
    if (entry.path().extension() != ".toml") continue;
    ++files;
    std::string path = entry.path().string();
    Experiment experiment = load_experiment(path);
    wanlab::emulator::Scenario scenario = load_testbed(experiment);
    Plan plan = make_plan(experiment, scenario);
    RunRecord record = simulate(plan, scenario, link_model_for(scenario, experiment.scale), 1);
    double seconds = static_cast<double>(record.iteration_end_ns.at(0) - record.iteration_start_ns.at(0)) / 1e9;
    BOOST_TEST_MESSAGE(entry.path().filename().string()
                       << ": " << seconds << " s per iteration, " << plan.activation_bytes << " B activations, "
                       << plan.stage_param_bytes << " B per stage");
    if (experiment.fabric) continue;  // simulate only (scale-16dc): no real run to keep short
    // Real runs must stay short on a 2-core box: seconds per iteration (the
    // DP-across-DC baseline is slow by design and runs fewer iterations),
    // activations of a few MB and stage gradients of a few hundred MB (at
    // scale 0.1; the real runs of bench/harness took 30 s to 4 minutes).
    BOOST_TEST(seconds * experiment.iterations < 240, path);
    BOOST_TEST(plan.activation_bytes <= 4u * 1024 * 1024, path);
    BOOST_TEST(plan.stage_param_bytes <= 512u * 1024 * 1024, path);
  }
  BOOST_TEST(files >= 2);
}

// Every prefix of a shipped file either parses and plans, or gives a one-line
// ExperimentError; nothing else escapes.
BOOST_AUTO_TEST_CASE(every_truncation_fails_cleanly_or_plans) {
  std::string path = (experiments_dir() / "atlas-3dc.toml").string();
  Experiment full = load_experiment(path);
  wanlab::emulator::Scenario scenario = load_testbed(full);
  std::ifstream file(path);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  int errors = 0;
  int plans = 0;
  for (std::size_t length = 0; length <= text.size(); ++length) {
    try {
      make_plan(parse_experiment(text.substr(0, length), path), scenario);
      ++plans;
    } catch (const ExperimentError& error) {
      ++errors;
      BOOST_TEST(std::string(error.what()).find('\n') == std::string::npos);
    }
  }
  BOOST_TEST(errors > 0);
  BOOST_TEST(plans > 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(trends)

double simulated_seconds(const std::string& file,
                         const std::vector<std::pair<std::string, std::string>>& overrides = {}) {
  Experiment experiment = load_experiment((experiments_dir() / file).string());
  for (const auto& [option, value] : overrides) apply_override(experiment, option, value);
  wanlab::emulator::Scenario scenario = load_testbed(experiment);
  RunRecord record = simulate(make_plan(experiment, scenario), scenario, link_model_for(scenario, experiment.scale), 1);
  return static_cast<double>(record.iteration_end_ns.at(0) - record.iteration_start_ns.at(0)) / 1e9;
}

// Each of Atlas's elements, switched on in turn on the shipped model, shortens
// the simulated iteration; the baselines keep their order.
BOOST_AUTO_TEST_CASE(each_atlas_element_helps_on_the_shipped_model) {
  double baseline = simulated_seconds("1f1b-3dc.toml");
  double streams = simulated_seconds("1f1b-3dc.toml", {{"--streams", "8"}});
  double sharing = simulated_seconds("1f1b-3dc.toml", {{"--streams", "8"}, {"--temporal-sharing", "on"}});
  double atlas = simulated_seconds("atlas-3dc.toml");
  BOOST_TEST_MESSAGE("1f1b " << baseline << " s, +streams " << streams << " s, +temporal sharing " << sharing
                             << " s, atlas " << atlas << " s");
  BOOST_TEST(streams < baseline);
  BOOST_TEST(sharing < streams);
  BOOST_TEST(atlas < sharing);
  BOOST_TEST(simulated_seconds("gpipe-3dc.toml") > baseline);
  BOOST_TEST(simulated_seconds("dp-across-dc-3dc.toml") > 5 * baseline);
  BOOST_TEST(simulated_seconds("atlas-order-3dc.toml") <
             simulated_seconds("atlas-order-3dc.toml", {{"--reorder-dcs", "off"}}));
}

BOOST_AUTO_TEST_SUITE_END()
