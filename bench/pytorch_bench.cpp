// The PyTorch point-to-point and all-reduce benchmark (examples/pytorch/
// p2p_allreduce.py, gloo) run through `wanlab launch` on a scenario, beside
// what the simulator's transfer model (harness/model/tcp_model.hpp) gives for
// the same transfers on the same links, and beside DTFM's published 64 MB
// figure. Twice: with the scenario's TCP buffers, and with 16 MB ones.
//
// What is modelled: gloo keeps one TCP connection per pair of ranks, so a
// point-to-point send is one message on one stream, unpaced, warm (the
// benchmark's warm-up round and the all-reduces before it used the same
// connection); its time runs from the send to the receiver's last byte.
// gloo sends an unbound buffer only once the receiver has posted its own and
// said so (a rendezvous), so the data leaves one way's delay (the notice's,
// from the receiver) after both sides are ready. An all-reduce is gloo's
// segmented ring (model_allreduce), bound by rendezvous per 1 MiB segment
// rather than by the window. A third run with
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

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/harness/model/link_model.hpp"

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
  double allreduce_s = 0, allreduce_model_s = 0, allreduce_no_wan_s = NAN;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? NAN : values[values.size() / 2];
}

// The DC pair east -> west path of `scenario` as the simulator sees it, unpaced (gloo).
hs::TcpPath path_between(const em::Scenario& scenario, int src, int dst) {
  const em::PairParams there = scenario.pair(src, dst);
  const em::PairParams back = scenario.pair(dst, src);
  const double rtt_s = static_cast<double>(there.delay_ns + back.delay_ns) / 1e9;
  return hs::tcp_path_for(there, rtt_s, hs::link_model_for(scenario, 1.0), 1.0, 0);
}

// A point-to-point message of `bytes` after one of the same size on the same
// connection (warm), and on a fresh one (cold).
std::pair<double, double> model_p2p(const hs::TcpPath& path, double notice_s, double bytes) {
  hs::TcpChannelState state;
  const double cold = notice_s + hs::transfer_alone_s(path, 1, bytes, state);
  return {notice_s + hs::transfer_alone_s(path, 1, bytes, state), cold};
}

// gloo's ring all-reduce (gloo/allreduce.cc, torch 1.13's) over every DC,
// one rank each in DC order. The tensor is cut into segments of at most
// 1 MiB (kMaxSegmentSize), at least 2 per rank, their count rounded up to a
// multiple of the ranks; the ring's 2 (n - 1) steps each move one rank's
// segments, two in flight, each a rendezvous (the receiver's notice one way,
// the data the other): a segment costs one one-way delay, or its transfer at
// the stream's rate where that is longer. The last data arrives one way later.
double model_allreduce(const em::Scenario& scenario, double bytes) {
  constexpr double kMaxSegmentBytes = 1 << 20;
  const int n = static_cast<int>(scenario.dcs.size());
  const double segment = std::min(std::ceil(bytes / (2 * n)), kMaxSegmentBytes);
  const double segments = std::ceil(std::max(std::ceil(bytes / segment), 2.0 * n) / n) * n;
  double slowest_segment_s = 0, delay_s = 0;
  for (int i = 0; i < n; ++i) {
    const hs::TcpPath path = path_between(scenario, i, (i + 1) % n);
    const double rate_bps = std::min(path.rate_bps, path.window_bytes * 8 / path.rtt_s);
    slowest_segment_s = std::max(slowest_segment_s, std::max(path.delay_s, segment * 8 / rate_bps));
    delay_s = std::max(delay_s, path.delay_s);
  }
  return 2 * (n - 1) * (segments / n) * slowest_segment_s + delay_s;
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

std::vector<Row> measure(const bench::Options& options, const std::string& wanlab, const std::string& scenario_path,
                         const std::string& variant, const std::string& work) {
  const em::Scenario scenario = em::load_scenario(scenario_path);
  if (scenario.dcs.size() < 2) throw UsageError("--scenario: needs at least two DCs");
  const std::string json = work + "/p2p_allreduce.json";
  bench::Testbed bed(wanlab, scenario_path, "ptbench");
  const std::string script = options.get("examples").value_or("examples/pytorch") + "/p2p_allreduce.py";
  std::vector<std::string> argv{wanlab,
                                "launch",
                                "--testbed",
                                "ptbench",
                                "--hosts",
                                "all",
                                "--",
                                options.get("python").value_or("/usr/bin/python3"),
                                script,
                                "--json",
                                json,
                                "--sizes",
                                options.get("sizes").value_or("1,16,64"),
                                "--repeats",
                                options.get("repeats").value_or("5")};
  fmt::print("{}: {}\n", variant, fmt::join(argv, " "));
  std::fflush(stdout);
  const auto run = base::run_captured(argv);
  base::check_interrupted();
  fmt::print("{}", run.output);
  if (run.status != 0) throw std::runtime_error(fmt::format("{}: wanlab launch exited {}", variant, run.status));
  nlohmann::json measured;
  std::ifstream(json) >> measured;
  std::vector<Row> rows;
  const hs::TcpPath p2p_path = path_between(scenario, 0, 1);
  for (const auto& entry : measured.at("rows")) {
    Row row;
    row.variant = variant;
    row.mib = entry.at("mib").get<double>();
    row.p2p_s = median(entry.at("p2p_s").get<std::vector<double>>());
    row.allreduce_s = median(entry.at("allreduce_s").get<std::vector<double>>());
    const double notice_s = static_cast<double>(scenario.pair(1, 0).delay_ns) / 1e9;
    std::tie(row.p2p_model_s, row.p2p_cold_model_s) = model_p2p(p2p_path, notice_s, row.mib * kMiB);
    row.allreduce_model_s = model_allreduce(scenario, row.mib * kMiB);
    rows.push_back(row);
  }
  return rows;
}

std::string table(const std::vector<Row>& rows, bool markdown) {
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    if (markdown) {
      out += "| " + fmt::format("{}", fmt::join(cells, " | ")) + " |\n";
      return;
    }
    out += fmt::format("{:<16}", cells[0]);
    for (std::size_t i = 1; i < cells.size(); ++i) out += fmt::format(" {:>9}", cells[i]);
    out += "\n";
  };
  line({"buffers", "MiB", "p2p", "model", "ratio", "cold", "no WAN", "all-red.", "model", "ratio", "no WAN"});
  if (markdown) out += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  const auto s = [](double seconds) { return std::isnan(seconds) ? std::string("-") : fmt::format("{:.3f}", seconds); };
  for (const Row& row : rows)
    line({row.variant, fmt::format("{:g}", row.mib), s(row.p2p_s), s(row.p2p_model_s),
          fmt::format("{:.2f}", row.p2p_s / row.p2p_model_s), s(row.p2p_cold_model_s), s(row.p2p_no_wan_s),
          s(row.allreduce_s), s(row.allreduce_model_s), fmt::format("{:.2f}", row.allreduce_s / row.allreduce_model_s),
          s(row.allreduce_no_wan_s)});
  for (const Row& row : rows)
    if (std::abs(row.mib - 64) < 1e-9)
      out += fmt::format("{}{}: 64 MiB point to point {:.3f} s, DTFM's gloo 64 MB {:.3f} s (ratio {:.2f})\n",
                         markdown ? "\n" : "", row.variant, row.p2p_s, kDtfmGlooP2pS, row.p2p_s / kDtfmGlooP2pS);
  return out;
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
  } catch (...) {
    fs::remove_all(work);
    throw;
  }
  fs::remove_all(work);
  fmt::print("\n{}", table(rows, false));
  if (const auto markdown = options.get("markdown")) base::write_output_file(*markdown, table(rows, true));
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
       bench::valued("markdown", "FILE", "write the table there")},
      ""};
  return bench::main_of(program, run, argc, argv);
}
