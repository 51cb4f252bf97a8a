// `wanlab train`, `wanlab compare` and the internal `wanlab worker`,
// `wanlab prefill-worker` and `wanlab decode-sink`: the harness's real runs
// over an emulated WAN.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "commands.hpp"
#include "options.hpp"
#include "wanlab/harness/report/card.hpp"
#include "wanlab/harness/tools/compare.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/record/health.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"
#include "wanlab/harness/sim/simulate.hpp"
#include "wanlab/harness/report/outputs.hpp"
#include "wanlab/harness/run/run.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::cli {
namespace hs = wanlab::harness;
namespace em = wanlab::emulator;
namespace {

// The experiment's command-line options (harness::experiment_options()): a
// bad value, or one that breaks a check between fields, is a bad command line
// (exit 2) naming the option.
void apply_overrides(hs::Experiment& experiment, const Options& options) {
  const auto known = hs::experiment_options();
  for (const auto& [name, value] : options.ordered()) {
    if (std::none_of(known.begin(), known.end(), [&](const auto& option) { return option.name == name; })) continue;
    try {
      hs::apply_override(experiment, name, value);
    } catch (const hs::ExperimentError& error) {
      throw UsageError(error.what());
    }
    if (name == "schedule")
      fmt::print(stderr,
                 "wanlab train: --schedule is the old name of --pipeline (the compute order); `wanlab set "
                 "--schedule` loads a link's schedule\n");
  }
}

// The simulator follows the WAN's schedules and [[event]]s; BubbleTea's
// admission, in a real run, estimates transfers at the links' base settings.
void note_base_settings_admission(const hs::Experiment& experiment, const em::Scenario& scenario) {
  if (experiment.prefill.enabled && em::has_timeline(scenario))
    fmt::print(stderr,
               "wanlab train: BubbleTea's admission estimates KV transfers at the links' base settings; their "
               "schedules and [[event]]s act on the emulated links and the simulation\n");
}

void print_prefill_summary(const hs::RunRecord& record) {
  const hs::PrefillSummary p = hs::summarize_prefill(record);
  fmt::print(
      "prefill (BubbleTea): GPU utilization {:.1f}% with prefill ({:.1f}% training only), {:.0f} prompt tokens/s\n",
      100 * p.mean_gpu_utilization, 100 * p.mean_training_utilization, p.prefill_tokens_per_s);
  // Nothing served has no TTFT: "none served", never a perfect-looking 0.00 s.
  const std::string ttft = p.ttft_p50_s ? fmt::format("TTFT p50 {:.2f} s, p90 {:.2f} s, p99 {:.2f} s", *p.ttft_p50_s,
                                                      p.ttft_p90_s.value_or(0), p.ttft_p99_s.value_or(0))
                                        : std::string("TTFT none served");
  fmt::print("  requests: {} arrived, {} served, {} rejected, {} failed, {} unfinished; {}\n", p.requests, p.served,
             p.rejected, p.failed, p.unfinished, ttft);
  for (const auto& [link, bytes] : p.kv_bytes)
    fmt::print("  KV  {:<22} {:>10.1f} MB in all\n", link, static_cast<double>(bytes) / 1e6);
  fmt::print(
      "  bubble prediction error: start p50 {:.1f} ms, p90 {:.1f} ms; length p50 {:.1f} ms, p90 {:.1f} ms "
      "(of the predicted bubble: start p50 {:.0f}%, p90 {:.0f}%; length p50 {:.0f}%, p90 {:.0f}%); "
      "compute held up by prefill {:.3f} s in all workers\n",
      1e3 * p.prediction_error_s.start_p50, 1e3 * p.prediction_error_s.start_p90, 1e3 * p.prediction_error_s.length_p50,
      1e3 * p.prediction_error_s.length_p90, 100 * p.prediction_error_relative.start_p50,
      100 * p.prediction_error_relative.start_p90, 100 * p.prediction_error_relative.length_p50,
      100 * p.prediction_error_relative.length_p90, p.training_delay_s);
  for (const auto& note : record.prefill->notes) fmt::print("  note: {}\n", note);
}

std::string percentiles_text(const hs::TransferPercentiles& p) {
  return fmt::format("{:.3f}/{:.3f}/{:.3f} s", p.p50_s, p.p90_s, p.p99_s);
}

// Per WAN link, the transfer time (first byte sent to last received) p50/p90/p99.
void print_transfers(const hs::RunRecord& record) {
  for (const auto& link : hs::summarize_transfers(record)) {
    std::string line = fmt::format("  transfers {:<16} p50/p90/p99", link.link);
    if (link.measured)
      line += fmt::format(" measured {} ({} messages{})", percentiles_text(link.measured->transfer),
                          link.measured->transfer.messages,
                          link.measured->retransmitted_segments
                              ? fmt::format(", {} segments retransmitted", *link.measured->retransmitted_segments)
                              : "");
    if (link.simulated)
      line += fmt::format("{} simulated {}", link.measured ? "," : "", percentiles_text(link.simulated->transfer));
    fmt::print("{}\n", line);
  }
}

void print_summary(const hs::RunRecord& record) {
  const auto iterations = hs::summarize(record);
  const auto run = hs::summarize_run(iterations);
  fmt::print("\n{} iterations on {} workers ({}): mean iteration {:.3f} s, GPU utilization {:.1f}%, bubble {:.1f}%{}\n",
             iterations.size(), record.plan.workers.size(), record.runtime, run.mean_iteration_s,
             100 * run.mean_gpu_utilization, 100 * run.mean_bubble_fraction,
             run.skipped_iterations ? fmt::format(" (means skip the first {})", run.skipped_iterations) : "");
  if (iterations.empty()) return;
  const hs::Experiment& experiment = record.plan.experiment;
  if (hs::is_diloco(experiment.schedule)) {
    const hs::StepFigures steps = hs::step_figures(experiment, iterations, run);
    fmt::print(
        "  {}: an iteration is an outer round of {} inner steps: {:.4f} s and {:.3f} MB over the WAN per "
        "inner step\n",
        hs::to_string(experiment.schedule), steps.steps_per_iteration, steps.mean_step_s,
        steps.wan_bytes_per_step / 1e6);
  }
  for (const auto& [link, bytes] : iterations.back().wan_bytes)
    fmt::print("  WAN {:<22} {:>10.1f} MB per iteration\n", link, static_cast<double>(bytes) / 1e6);
  print_transfers(record);
  // The measured slowdown against the same plan simulated, and its causes along the critical path.
  if (record.slowdown) fmt::print("  against its plan: {}\n", hs::describe(*record.slowdown));
  if (record.prefill) print_prefill_summary(record);
}

}  // namespace

// --ranks, checked before the run: a plan has pp x dp workers.
hs::RankSpec ranks_option(const Options& options, const hs::Experiment& experiment) {
  try {
    return hs::parse_rank_spec(options.get("ranks").value_or("auto"), experiment.parallel.pp * experiment.parallel.dp);
  } catch (const std::invalid_argument& error) {
    throw UsageError(std::string("--ranks: ") + error.what());
  }
}

int cmd_train(const Options& options) {
  if (options.positionals().size() != 1) throw UsageError("expected one experiment file");
  hs::Experiment experiment = hs::load_experiment(options.positionals().front());
  apply_overrides(experiment, options);
  const em::Scenario scenario = hs::load_testbed(experiment);
  const auto out = out_dir_option(options, hs::check_run_outputs);
  const hs::RankSpec ranks = ranks_option(options, experiment);
  if (experiment.wan_start_ns != 0 && !options.flag("simulate"))
    throw UsageError(
        fmt::format("wan_start {}: a real run starts at its testbed's time 0; it applies to --simulate "
                    "and whatif",
                    em::units::format_time(experiment.wan_start_ns)));

  hs::RunOptions run;
  try {
    run.runtime = hs::parse_runtime_choice(options.get("runtime").value_or("auto"));
  } catch (const std::invalid_argument& error) {
    throw UsageError(std::string("--runtime: ") + error.what());
  }
  run.image = options.get("image").value_or("");
  if (!run.image.empty()) image_option(run.image);
  run.release = release_option(options);
  if (options.flag("idle-poll")) {
    try {
      run.idle_poll = hs::parse_idle_poll(options.get("idle-poll").value_or("on"));
    } catch (const std::invalid_argument& error) {
      throw UsageError(std::string("--idle-poll: ") + error.what());
    }
  }
  if (const auto timeout = options.integer<int>("timeout", 1, 86400))
    run.iteration_timeout = std::chrono::seconds(*timeout);
  const bool quiet = options.flag("quiet");
  if (!quiet)
    run.log = [](const std::string& line) {
      fmt::print("wanlab train: {}\n", line);
      std::fflush(stdout);
    };
  run.progress = [](const hs::Progress& p) {
    std::string prefill;
    if (p.utilization_with_prefill_so_far)
      prefill = fmt::format(", with prefill {:.1f}%; requests served {}, waiting {}, rejected {}, TTFT p50 {}",
                            100 * *p.utilization_with_prefill_so_far, p.requests_served, p.requests_waiting,
                            p.requests_rejected, p.ttft_p50_s ? fmt::format("{:.3f} s", *p.ttft_p50_s) : "-");
    fmt::print("iteration {}/{}: {:.3f} s, GPU utilization so far {:.1f}%{}\n", p.iteration + 1, p.iterations,
               p.iteration_s, 100 * p.utilization_so_far, prefill);
    std::fflush(stdout);
  };
  fmt::print("{}: {} schedule, {} placement, {} stream(s), temporal sharing {}, {} iterations, scale {}, prefill {}\n",
             experiment.name, hs::to_string(experiment.schedule), hs::to_string(experiment.placement),
             experiment.streams, experiment.temporal_sharing ? "on" : "off", experiment.iterations, experiment.scale,
             experiment.prefill.enabled ? fmt::format("on (KV caches to {})", experiment.prefill.decode_dc) : "off");
  std::fflush(stdout);

  if (!options.flag("simulate")) note_base_settings_admission(experiment, scenario);
  // --simulate: the planner's discrete-event simulation instead of the emulated WAN.
  const hs::RunRecord record = options.flag("simulate") ? hs::simulate_experiment(experiment, scenario)
                                                        : hs::run_experiment(experiment, scenario, run);
  print_summary(record);
  // Even with --quiet: the default runtime is podman, and a run that fell back says why.
  if (run.runtime == hs::RuntimeChoice::automatic && record.runtime == "sandbox")
    fmt::print(stderr, "wanlab train: workers ran in wanlab's sandbox, not podman: {}\n", record.runtime_detail);
  if (out)
    fmt::print("{}\n",
               hs::write_run_outputs(record, scenario, {command_line(), std::filesystem::current_path().string(), ""},
                                     hs::select_ranks(record, ranks), *out));
  // Last, so that it is what the user sees: whether the figures above can be trusted.
  if (record.emulation) fmt::print("{}\n", hs::judge_emulation(*record.emulation).verdict);
  return 0;
}

// compare's output: the table, or one of --markdown, --csv and --ttfts.
std::string compare_format(const Options& options) {
  std::string chosen;
  for (const char* format : {"markdown", "csv", "ttfts"}) {
    if (!options.flag(format)) continue;
    if (!chosen.empty()) throw UsageError(fmt::format("--{}: not with --{}", format, chosen));
    chosen = format;
  }
  return chosen;
}

int cmd_compare(const Options& options) {
  const std::string format = compare_format(options);
  const auto& paths = options.positionals();
  if (paths.empty()) throw UsageError("expected one or more result directories (or results.json files)");
  if (format == "ttfts" && paths.size() != 1)
    throw UsageError(fmt::format("--ttfts: expected one result, got {}", paths.size()));
  std::vector<hs::ResultRow> rows;
  for (const auto& path : paths) {
    hs::ResultRow row = hs::read_result(path);
    // A benchmark publishes no figure of a run whose emulation fell behind.
    if (options.flag("kept-up-only") && row.emulation_kept_up == false) {
      fmt::print(stderr, "wanlab compare: left out {}: {}\n", path, row.emulation_verdict);
      continue;
    }
    rows.push_back(std::move(row));
  }
  if (format == "markdown") fmt::print("{}", hs::compare_markdown(rows));
  if (format == "csv") fmt::print("{}", hs::compare_csv(rows));
  if (format == "ttfts" && rows.empty()) return 1;  // the one result fell behind, as printed
  if (format == "ttfts") fmt::print("{}", hs::ttft_csv(rows.front()));
  if (format.empty()) fmt::print("{}", hs::compare_table(rows));
  return 0;
}

int cmd_worker(const Options& options) {
  if (options.flag("probe")) {
    // The runtime's check that the binary runs inside a container.
    fmt::print("wanlab worker: ok (pid {})\n", ::getpid());
    return 0;
  }
  const auto control = options.get("control");
  const auto id = options.get("id");
  if (!control || !id) throw UsageError("expected --control SOCKET and --id N");
  return hs::worker_main(*control, *options.integer<int>("id", 0, 1 << 20));
}

}  // namespace wanlab::cli

namespace wanlab::cli {

// BubbleTea's processes, started by `wanlab train` like the workers.
int cmd_prefill_worker(const Options& options) {
  const auto control = options.get("control");
  if (!control || !options.get("id")) throw UsageError("expected --control SOCKET and --id N");
  return hs::prefill_worker_main(*control, *options.integer<int>("id", 0, 1 << 20));
}

int cmd_decode_sink(const Options& options) {
  const auto control = options.get("control");
  if (!control || !options.get("id")) throw UsageError("expected --control SOCKET and --id N");
  return hs::decode_sink_main(*control, *options.integer<int>("id", 0, 1 << 20));
}

}  // namespace wanlab::cli
