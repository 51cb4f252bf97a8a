// The PyTorch point-to-point and all-reduce benchmark (examples/pytorch/
// p2p_allreduce.py, gloo) run through `wanlab launch` on a scenario, beside
// what the simulator's transfer model (harness/model/tcp_model.hpp) gives for
// the same transfers on the same links (gloo_model.hpp), and beside DTFM's
// published 64 MB figure. Twice: with the scenario's TCP buffers, and with
// 16 MB ones. Then the DDP example (examples/pytorch/ddp_gpt.py) on the
// scenario and without its delay: the communication DDP leaves after the
// backward pass, measured beside the same model for DDP's buckets.
//
// What is modelled: gloo keeps one TCP connection per pair of ranks, so a
// point-to-point send is one message on one stream, unpaced, warm (the
// benchmark's warm-up round and the all-reduces before it used the same
// connection); its time runs from the send to the receiver's last byte.
// gloo sends an unbound buffer only once the receiver has posted its own and
// said so (a rendezvous), so the data leaves one way's delay (the notice's,
// from the receiver) after both sides are ready. An all-reduce is gloo's
// segmented ring (hs::gloo_allreduce_s), bound by rendezvous per 1 MiB
// segment rather than by the window. A third run with
// (almost) no delay measures what the machine itself takes (copies,
// reductions, the release path on its cores): the "no WAN" column.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <tuple>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/harness/model/gloo_model.hpp"

namespace em = wanlab::emulator;
namespace hs = wanlab::harness;
namespace fs = std::filesystem;
using namespace wanlab;
using bench::UsageError;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// DTFM (BinhangYuan/tc_cluster_setting): gloo, 64 MB point to point, emulated
// 10 ms one way (shared/REFERENCES.md).
constexpr double kDtfmGlooP2pS = 0.532;

struct Row {
  std::string variant;
  double mib = 0;
  double p2p_s = 0, p2p_model_s = 0, p2p_cold_model_s = 0, p2p_no_wan_s = NAN;
  double p2p_skew_s = 0;  // how long after rank 0 rank 1 left the barrier before the send
  double allreduce_s = 0, allreduce_model_s = 0, allreduce_no_wan_s = NAN;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? NAN : values[values.size() / 2];
}

// A point-to-point message of `bytes` after one of the same size on the same
// connection (warm), and on a fresh one (cold).
std::pair<double, double> model_p2p(const hs::TcpPath& path, double notice_s, double bytes) {
  hs::TcpChannelState state;
  const double cold = hs::gloo_send_s(path, notice_s, bytes, state);
  return {hs::gloo_send_s(path, notice_s, bytes, state), cold};
}

// The scenario's text with both TCP buffer maxima set to `size` ("16mb").
std::string with_buffers(std::string text, const std::string& size) {
  for (const char* key : {"tcp_wmem_max", "tcp_rmem_max"}) {
    const std::regex line(std::string("(^|\n)") + key + R"( *= *"[^"]*")");
    if (!std::regex_search(text, line)) throw UsageError(fmt::format("--scenario: it sets no {} to change", key));
    text = std::regex_replace(text, line, std::string("$1") + key + " = \"" + size + "\"");
  }
  return text;
}

// `wanlab launch` of examples/pytorch/SCRIPT ARGS... on every host of the
// scenario, brought up for the run and taken down after.
void launch_script(const bench::Options& options, const std::string& wanlab, const std::string& scenario_path,
                   const std::string& variant, std::vector<std::string> script_args) {
  bench::Testbed bed(wanlab, scenario_path, "ptbench");
  std::vector<std::string> argv{wanlab,    "launch", "--testbed", "ptbench",
                                "--hosts", "all",    "--",        options.get("python").value_or("/usr/bin/python3")};
  script_args[0] = options.get("examples").value_or("examples/pytorch") + "/" + script_args[0];
  argv.insert(argv.end(), script_args.begin(), script_args.end());
  fmt::print("{}: {}\n", variant, fmt::join(argv, " "));
  std::fflush(stdout);
  const auto run = base::run_captured(argv);
  base::check_interrupted();
  fmt::print("{}", run.output);
  if (run.status != 0) throw std::runtime_error(fmt::format("{}: wanlab launch exited {}", variant, run.status));
}

std::vector<Row> measure(const bench::Options& options, const std::string& wanlab, const std::string& scenario_path,
                         const std::string& variant, const std::string& work) {
  const em::Scenario scenario = em::load_scenario(scenario_path);
  if (scenario.dcs.size() < 2) throw UsageError("--scenario: needs at least two DCs");
  const std::string json = work + "/p2p_allreduce.json";
  launch_script(options, wanlab, scenario_path, variant,
                {"p2p_allreduce.py", "--json", json, "--sizes", options.get("sizes").value_or("1,16,64"), "--repeats",
                 options.get("repeats").value_or("5")});
  nlohmann::json measured;
  std::ifstream(json) >> measured;
  std::vector<Row> rows;
  const hs::TcpPath p2p_path = hs::gloo_path(scenario, 0, 1);
  for (const auto& entry : measured.at("rows")) {
    Row row;
    row.variant = variant;
    row.mib = entry.at("mib").get<double>();
    row.p2p_s = median(entry.at("p2p_s").get<std::vector<double>>());
    row.p2p_skew_s = median(entry.at("p2p_skew_s").get<std::vector<double>>());
    row.allreduce_s = median(entry.at("allreduce_s").get<std::vector<double>>());
    const double notice_s = static_cast<double>(scenario.pair(1, 0).delay_ns) / 1e9;
    std::tie(row.p2p_model_s, row.p2p_cold_model_s) = model_p2p(p2p_path, notice_s, row.mib * kMiB);
    row.allreduce_model_s = hs::gloo_allreduce_s(scenario, row.mib * kMiB);
    rows.push_back(row);
  }
  return rows;
}

std::string seconds_cell(double seconds) {
  return std::isnan(seconds) ? std::string("-") : fmt::format("{:.3f}", seconds);
}

std::string table(const std::vector<Row>& rows, bool markdown) {
  bench::Table out{
      "gloo point to point (rank 0 -> 1) and all-reduce (every rank), seconds",
      {"buffers", "MiB", "p2p", "model", "skew", "ratio", "cold", "no WAN", "all-red.", "model", "ratio", "no WAN"},
      {},
      {}};
  const auto s = seconds_cell;
  for (const Row& row : rows)
    // The receiver's notice leaves when it is ready too: after rank 0, by
    // the barrier's skew, as measured (the model starts from both ready).
    out.rows.push_back({row.variant, fmt::format("{:g}", row.mib), s(row.p2p_s), s(row.p2p_model_s), s(row.p2p_skew_s),
                        fmt::format("{:.2f}", row.p2p_s / (row.p2p_model_s + std::max(0.0, row.p2p_skew_s))),
                        s(row.p2p_cold_model_s), s(row.p2p_no_wan_s), s(row.allreduce_s), s(row.allreduce_model_s),
                        fmt::format("{:.2f}", row.allreduce_s / row.allreduce_model_s), s(row.allreduce_no_wan_s)});
  for (const Row& row : rows)
    if (std::abs(row.mib - 64) < 1e-9)
      out.notes.push_back(fmt::format("{}: 64 MiB point to point {:.3f} s, DTFM's gloo 64 MB {:.3f} s (ratio {:.2f})",
                                      row.variant, row.p2p_s, kDtfmGlooP2pS, row.p2p_s / kDtfmGlooP2pS));
  return markdown ? out.markdown() : out.text();
}

// The DDP example's steps on a scenario: what DDP leaves to communicate after
// the backward pass's last bucket, on rank 0 and on the rank that came last
// (it waited for nobody), beside the model: every bucket's gloo ring
// all-reduce starting when the bucket was ready (gloo runs them on two
// threads, side by side), so what is left after the last is
// max over buckets (ready - last ready + all-reduce), at least 0.
struct DdpRun {
  std::string variant;
  double step_s = 0;
  double exposed_s = 0;        // rank 0's wait after its backward pass
  double skew_s = 0;           // of it: until the last rank was ready too
  double least_exposed_s = 0;  // the last rank's wait: the communication itself
  double model_exposed_s = 0;
  // The step with rank 0's wait replaced by skew + the model's communication.
  double model_step_s = 0;
  std::vector<std::tuple<double, double, double>> buckets;  // bytes, all-reduce measured (last rank), model
};

DdpRun measure_ddp(const bench::Options& options, const std::string& wanlab, const std::string& scenario_path,
                   const std::string& variant, const std::string& work) {
  const em::Scenario scenario = em::load_scenario(scenario_path);
  const std::string json = work + "/ddp.json";
  launch_script(options, wanlab, scenario_path, variant,
                {"ddp_gpt.py", "--steps", options.get("ddp-steps").value_or("20"), "--json", json});
  nlohmann::json measured;
  std::ifstream(json) >> measured;
  const auto steps = measured.at("step_s").get<std::vector<double>>();
  const auto exposed = measured.at("exposed_s").get<std::vector<double>>();
  const auto least_exposed = measured.at("least_exposed_s").get<std::vector<double>>();
  const auto skew = measured.at("skew_s").get<std::vector<double>>();
  const auto& buckets = measured.at("buckets");
  if (steps.size() < 3) throw UsageError("--ddp-steps: at least 3");
  DdpRun run;
  run.variant = variant;
  std::vector<double> model_exposed, model_steps;
  std::vector<std::vector<double>> bucket_allreduce;
  // Step 0 is DDP's first, before it rebuilds its buckets: left out.
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const auto& step_buckets = buckets.at(i);
    const double last_ready_s = step_buckets.back().at("ready_s").get<double>();
    double left_s = 0;
    for (std::size_t b = 0; b < step_buckets.size(); ++b) {
      const double bytes = step_buckets[b].at("bytes").get<double>();
      left_s = std::max(
          left_s, step_buckets[b].at("ready_s").get<double>() - last_ready_s + hs::gloo_allreduce_s(scenario, bytes));
      if (bucket_allreduce.size() <= b) bucket_allreduce.resize(b + 1);
      bucket_allreduce[b].push_back(step_buckets[b].at("allreduce_s").get<double>());
    }
    model_exposed.push_back(left_s);
    model_steps.push_back(steps[i] - exposed[i] + skew[i] + left_s);
  }
  const auto from_second = [](const std::vector<double>& values) {
    return median(std::vector<double>(values.begin() + 1, values.end()));
  };
  run.step_s = from_second(steps);
  run.exposed_s = from_second(exposed);
  run.least_exposed_s = from_second(least_exposed);
  run.skew_s = from_second(skew);
  run.model_exposed_s = median(model_exposed);
  run.model_step_s = median(model_steps);
  const auto& last_step = buckets.back();
  for (std::size_t b = 0; b < bucket_allreduce.size() && b < last_step.size(); ++b) {
    const double bytes = last_step[b].at("bytes").get<double>();
    run.buckets.emplace_back(bytes, median(bucket_allreduce[b]), hs::gloo_allreduce_s(scenario, bytes));
  }
  return run;
}

std::string ddp_table(const std::vector<DdpRun>& runs, bool markdown) {
  bench::Table out{"the DDP example: what is left to communicate after the backward pass, seconds (medians of steps)",
                   {"DDP run", "step", "rank0 wait", "skew", "last rank", "model", "ratio", "model step", "ratio"},
                   {},
                   {}};
  const auto s = seconds_cell;
  // Below a millisecond the model has nothing to compare with: what the
  // last rank waits there is the machine's own (copies, scheduling).
  const auto ratio = [](double measured, double model) {
    return model < 1e-3 ? std::string("-") : fmt::format("{:.2f}", measured / model);
  };
  for (const DdpRun& run : runs)
    out.rows.push_back({run.variant, s(run.step_s), s(run.exposed_s), s(run.skew_s), s(run.least_exposed_s),
                        s(run.model_exposed_s), ratio(run.least_exposed_s, run.model_exposed_s), s(run.model_step_s),
                        ratio(run.step_s, run.model_step_s)});
  for (const DdpRun& run : runs)
    for (const auto& [bytes, measured_s, model_s] : run.buckets)
      out.notes.push_back(
          fmt::format("{}: a bucket of {:.0f} bytes all-reduced in {:.3f} s (last rank), model {:.3f} s", run.variant,
                      bytes, measured_s, model_s));
  return markdown ? out.markdown() : out.text();
}

// The scenario's text with every delay set to `delay`.
std::string with_delay(std::string text, const std::string& delay) {
  return std::regex_replace(text, std::regex(R"((^|\n)delay *= *"[^"]*")"), "$1delay = \"" + delay + "\"");
}

int run(const bench::Options& options) {
  const std::string wanlab = bench::wanlab_option(options);
  const std::string examples = options.get("examples").value_or("examples/pytorch");
  if (!fs::exists(examples + "/p2p_allreduce.py"))
    throw UsageError("--examples " + examples + ": no p2p_allreduce.py there");
  const std::string scenario_path = options.get("scenario").value_or(examples + "/wan-10ms.toml");
  const std::string tuned = options.get("tuned").value_or("16mb");
  em::units::parse_size(tuned);
  const std::string work = fs::temp_directory_path() / fmt::format("wanlab-pytorch-bench-{}", ::getpid());
  fs::create_directories(work);
  std::vector<Row> rows;
  std::vector<DdpRun> ddp_runs;
  const bool with_ddp = options.get("ddp-steps").value_or("20") != "0";
  try {
    const std::string text = base::read_regular_file(scenario_path);
    const std::string tuned_path = work + "/tuned.toml";
    const std::string no_wan_path = work + "/no-wan.toml";
    base::replace_file(tuned_path, with_buffers(text, tuned));
    base::replace_file(no_wan_path, with_delay(with_buffers(text, tuned), "50us"));
    // The machine's own time for each size: the same transfers at 50 us.
    const auto no_wan = measure(options, wanlab, no_wan_path, "no WAN", work);
    for (const auto& [path, variant] :
         {std::pair{scenario_path, std::string("as the scenario")}, std::pair{tuned_path, "both " + tuned}}) {
      auto measured = measure(options, wanlab, path, variant, work);
      for (std::size_t i = 0; i < measured.size() && i < no_wan.size(); ++i) {
        measured[i].p2p_no_wan_s = no_wan[i].p2p_s;
        measured[i].allreduce_no_wan_s = no_wan[i].allreduce_s;
      }
      rows.insert(rows.end(), measured.begin(), measured.end());
    }
    if (with_ddp) {
      ddp_runs.push_back(measure_ddp(options, wanlab, scenario_path, "as the scenario", work));
      const std::string scenario_no_wan = work + "/scenario-no-wan.toml";
      base::replace_file(scenario_no_wan, with_delay(text, "50us"));
      ddp_runs.push_back(measure_ddp(options, wanlab, scenario_no_wan, "no WAN", work));
    }
  } catch (...) {
    fs::remove_all(work);
    throw;
  }
  fs::remove_all(work);
  fmt::print("\n{}", table(rows, false));
  if (with_ddp) fmt::print("\n{}", ddp_table(ddp_runs, false));
  if (const auto markdown = options.get("markdown"))
    base::write_output_file(*markdown, table(rows, true) + (with_ddp ? "\n" + ddp_table(ddp_runs, true) : ""));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Program program{
      "wanlab_pytorch_bench",
      "gloo point-to-point and all-reduce through wanlab launch, beside the simulator's transfer model",
      {bench::valued("wanlab", "PATH", "the wanlab binary (default: the one built beside this benchmark)"),
       bench::valued("python", "PATH", "a Python with torch (default /usr/bin/python3, Debian's python3-torch)"),
       bench::valued("examples", "DIR", "where p2p_allreduce.py is (default examples/pytorch)"),
       bench::valued("scenario", "FILE", "the scenario (default DIR/wan-10ms.toml)"),
       bench::valued("tuned", "SIZE", "the TCP buffers of the second run (default 16mb)"),
       bench::valued("sizes", "MIB,...", "tensor sizes in MiB (default 1,16,64)"),
       bench::valued("repeats", "N", "timed rounds per size (default 5)"),
       bench::valued("ddp-steps", "N", "DDP example steps per run (default 20; 0: no DDP runs)"),
       bench::valued("markdown", "FILE", "write the table there")},
      ""};
  return bench::main_of(program, run, argc, argv);
}
