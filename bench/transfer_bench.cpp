// The transfer-model benchmark: real transfer times of one message
// over the wanlab transport on an emulated two-DC link, beside the
// simulator's time for the same transfer, over a grid of rate, one-way delay,
// streams, message size and the channel's state before the message:
//   cold  a channel just connected (the streams' first data)
//   warm  sent once the previous message of the same size is acknowledged
//         (one way's delay after it arrived)
//   idle  sent 1 s after that
// A message's time runs from the send call to the receiver holding all of it
// (both ends are threads of this process, one steady clock).
//
// Usage (root): wanlab_transfer_bench [--wanlab PATH] [--markdown FILE] [--csv FILE]
//               [--rates 100mbit,1gbit,5gbit] [--delays 5,50,150] [--streams 1,4,16]
//               [--sizes 1M,16M,256M,1000M] [--max-seconds S] [--slow-start-after-idle 0|1]
//               [--pace on|off] [--wmem SIZE] [--rmem SIZE] [--remodel CSV]
// --remodel: no testbed; an earlier run's CSV (run with the same --pace, --wmem,
// --rmem and --slow-start-after-idle) against the model as it is now.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "message_timing.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/emulator/tcp_window.hpp"
#include "wanlab/emulator/units.hpp"
#include "wanlab/harness/model/tcp_model.hpp"
#include "wanlab/transport/channel.hpp"

namespace fs = std::filesystem;
namespace em = wanlab::emulator;
namespace hs = wanlab::harness;
namespace base = wanlab::base;
using namespace wanlab::bench;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint16_t kPort = 5380;
constexpr std::uint32_t kChunk = hs::kCrossDcChunkBytes;  // and the not-sent low-water mark, as the harness's
const char* kStates[] = {"cold", "warm", "idle"};
constexpr auto kIdleGap = 1s;

struct Config {
  std::string wanlab;
  std::string markdown;
  std::string csv;
  std::vector<std::uint64_t> rates_bps{100'000'000, 1'000'000'000, 5'000'000'000};
  std::vector<int> delays_ms{5, 50, 150};
  std::vector<int> streams{1, 4, 16};
  std::vector<std::uint64_t> sizes{1u << 20, 16u << 20, 256u << 20, 1000u << 20};
  double max_seconds = 12;  // cells whose modelled time is longer are left out
  int slow_start_after_idle = 1;
  std::string wmem = "4mb";
  std::string rmem = "6mb";
  bool pace = true;     // each stream paced at the payload rate / streams (SO_MAX_PACING_RATE), as wanlab train does
  std::string remodel;  // an earlier run's CSV: its measured times against the model as it is now, no testbed
};

// The channel's three messages: cold (its first), warm and idle. The previous
// message's last acknowledgements reach the sender one way after it arrived:
// warm starts then (the model's state after a message is that of all of it
// acknowledged), idle 1 s later.
std::vector<Round> states_after_one_way(double one_way_s) {
  const auto one_way = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(one_way_s));
  return {{1, Clock::duration::zero()}, {1, one_way}, {1, one_way + Clock::duration(kIdleGap)}};
}

struct Cell {
  std::uint64_t rate_bps = 0;
  int delay_ms = 0;
  int streams = 0;
  std::uint64_t bytes = 0;
  std::string state;
  double measured_s = 0;
  double modelled_s = 0;
  double steady_s = 0;
  std::uint32_t cwnd_segments = 0;  // mean over the streams that carried it, at its first chunk
};

std::string size_text(std::uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return fmt::format("{}M", bytes >> 20);
  return fmt::format("{}K", bytes >> 10);
}

// Every cell, a row with its ratio; then the share of cells within 10%.
void write_tables(const Config& config, const std::vector<Cell>& cells, double minutes) {
  Table table;
  table.title = "Transfer model: one message over the wanlab transport, measured against the simulator's model";
  table.header = {"rate",
                  "delay (one way)",
                  "streams",
                  "size",
                  "state",
                  "measured (s)",
                  "model (s)",
                  "ratio",
                  "steady model (s)",
                  "cwnd at start (segments)"};
  int within = 0;
  int steady_within = 0;
  for (const Cell& c : cells) {
    const double ratio = c.measured_s / c.modelled_s;
    within += std::abs(ratio - 1) <= 0.10 ? 1 : 0;
    steady_within += std::abs(c.measured_s / c.steady_s - 1) <= 0.10 ? 1 : 0;
    table.rows.push_back({fmt::format("{} Mbit/s", c.rate_bps / 1'000'000), fmt::format("{} ms", c.delay_ms),
                          std::to_string(c.streams), size_text(c.bytes), c.state, fmt::format("{:.3f}", c.measured_s),
                          fmt::format("{:.3f}", c.modelled_s), fmt::format("{:.2f}", ratio),
                          fmt::format("{:.3f}", c.steady_s), std::to_string(c.cwnd_segments)});
  }
  const double share = cells.empty() ? 0 : 100.0 * within / static_cast<double>(cells.size());
  table.notes = {
      fmt::format("{} of {} cells ({:.0f}%) within 10% of the model (target: 90%): {}; the steady model (no slow "
                  "start, the simulator before rounds): {} of {}.",
                  within, cells.size(), share, verdict(share >= 90), steady_within, cells.size()),
      fmt::format(
          "cubic, tcp_wmem_max {}, tcp_rmem_max {}, queue 1 BDP, tcp_slow_start_after_idle {}, pacing {} "
          "(each stream at the payload rate / streams, as wanlab train does), chunk 16 KiB; cells whose steady time "
          "exceeds {} s left out; {:.1f} minutes.",
          config.wmem, config.rmem, config.slow_start_after_idle, config.pace ? "on" : "off", config.max_seconds,
          minutes),
      "cold: first message on a new channel; warm: sent once the previous one is acknowledged (one way after it "
      "arrived); idle: 1 s after that."};
  if (!config.remodel.empty())
    table.notes.push_back(
        fmt::format("measured times from {}, modelled again by the model as it is now (--remodel)", config.remodel));
  fmt::print("\n{}", table.text());
  if (!config.markdown.empty()) wanlab::base::write_output_file(config.markdown, table.markdown());
  if (!config.csv.empty())
    wanlab::base::write_output_file(config.csv, [&](std::ostream& out) {
      out << "rate_bps,delay_ms,streams,bytes,state,measured_s,model_s,steady_s,cwnd_segments\n";
      for (const Cell& c : cells)
        out << fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{}\n", c.rate_bps, c.delay_ms, c.streams, c.bytes,
                           c.state, c.measured_s, c.modelled_s, c.steady_s, c.cwnd_segments);
    });
}

const Program kProgram{
    "wanlab_transfer_bench",
    "real transfer times of one message over the transport beside the simulator's model, over a grid (root; "
    "minutes)",
    {valued("wanlab", "PATH", "the wanlab binary (default: the one built beside this benchmark)"),
     valued("markdown", "FILE", "write the table there as markdown"), valued("csv", "FILE", "write every cell there"),
     valued("rates", "LIST", "link rates, comma-separated (default 100mbit,1gbit,5gbit)"),
     valued("delays", "LIST", "one-way delays in ms (default 5,50,150)"),
     valued("streams", "LIST", "the channel's streams (default 1,4,16)"),
     valued("sizes", "LIST", "message sizes (default 1M,16M,256M,1000M)"),
     valued("max-seconds", "S", "leave out cells whose steady time is longer (default 12)"),
     valued("slow-start-after-idle", "0|1", "the hosts' tcp_slow_start_after_idle (default 1)"),
     valued("pace", "on|off", "pace each stream at the payload rate / streams, as wanlab train does (default on)"),
     valued("wmem", "SIZE", "the hosts' tcp_wmem max (default 4mb)"),
     valued("rmem", "SIZE", "the hosts' tcp_rmem max (default 6mb)"),
     valued("remodel", "CSV", "no testbed: an earlier run's CSV against the model as it is now")},
    ""};

bool on_or_off(const std::string& text) {
  if (text != "on" && text != "off") throw std::invalid_argument("expected on or off, got " + base::quoted(text));
  return text == "on";
}

// A size option kept as written (the scenario takes it so), checked now.
std::string size_text_option(const Options& options, const std::string& name, const std::string& otherwise) {
  base::parsed_option(options, name, em::units::parse_size);
  return options.get(name).value_or(otherwise);
}

Config config_of(const Options& options) {
  Config config;
  config.remodel = options.get("remodel").value_or("");
  if (config.remodel.empty()) config.wanlab = wanlab_option(options);
  config.markdown = base::output_file_option(options, "markdown").value_or("");
  config.csv = base::output_file_option(options, "csv").value_or("");
  config.pace = base::parsed_option(options, "pace", on_or_off).value_or(config.pace);
  config.wmem = size_text_option(options, "wmem", config.wmem);
  config.rmem = size_text_option(options, "rmem", config.rmem);
  config.max_seconds = options.decimal("max-seconds", 0.001, 86400).value_or(config.max_seconds);
  config.slow_start_after_idle = options.integer("slow-start-after-idle", 0, 1).value_or(config.slow_start_after_idle);
  config.rates_bps = list_option(options, "rates", em::units::parse_rate).value_or(config.rates_bps);
  const auto count = [](int min, int max) {
    return [=](const std::string& text) { return base::parse_integer<int>(text, min, max); };
  };
  config.delays_ms = list_option(options, "delays", count(0, 60'000)).value_or(config.delays_ms);
  config.streams = list_option(options, "streams", count(1, 1024)).value_or(config.streams);
  config.sizes = list_option(options, "sizes", em::units::parse_size).value_or(config.sizes);
  return config;
}

}  // namespace

// The path as the simulator sees the bench testbed's pair (link_model_for,
// tcp_path_for), its `streams` paced as the harness paces them.
hs::TcpPath model_path(const Config& config, std::uint64_t rate_bps, int delay_ms, int streams) {
  em::Scenario scenario;
  scenario.host.tcp_wmem_max = em::units::parse_size(config.wmem);
  scenario.host.tcp_rmem_max = em::units::parse_size(config.rmem);
  scenario.host.tcp_slow_start_after_idle = config.slow_start_after_idle != 0;
  em::PairParams there;
  there.rate_bps = rate_bps;
  there.delay_ns = static_cast<std::uint64_t>(delay_ms) * 1'000'000;
  return hs::tcp_path_for(there, 2 * delay_ms / 1e3, hs::link_model_for(scenario, 1.0), 1.0, config.pace ? streams : 0);
}

// One channel's messages in order (cold, warm, idle): the model's time for
// each, from what the model carries from message to message.
void model_channel(const hs::TcpPath& path, std::vector<Cell>& channel) {
  hs::TcpChannelState state;
  for (std::size_t k = 0; k < channel.size(); ++k) {
    if (k == 2) hs::after_idle(path, state, std::chrono::duration<double>(kIdleGap).count() + path.rtt_s);
    const double bytes = static_cast<double>(channel[k].bytes);
    channel[k].modelled_s = hs::transfer_alone_s(path, hs::effective_streams(bytes, channel[k].streams), bytes, state);
  }
}

void print_cell(const Cell& cell) {
  fmt::print(
      "{:>9} {:>4}ms {:>3}x {:>6} {:<5} measured {:8.3f} s  model {:8.3f} s  ratio {:5.2f}  steady {:8.3f}  cwnd {}\n",
      fmt::format("{}M", cell.rate_bps / 1'000'000), cell.delay_ms, cell.streams, size_text(cell.bytes), cell.state,
      cell.measured_s, cell.modelled_s, cell.measured_s / cell.modelled_s, cell.steady_s, cell.cwnd_segments);
  std::fflush(stdout);
}

// The cells of an earlier run's CSV, modelled again.
std::vector<Cell> remodel(const Config& config) {
  std::ifstream in(config.remodel);
  if (!in) throw UsageError(fmt::format("--remodel {}: cannot read it", config.remodel));
  std::string line;
  std::getline(in, line);
  std::vector<Cell> cells;
  for (int line_number = 2; std::getline(in, line); ++line_number) {
    const auto fields = split_commas(line);
    if (fields.size() != 9)
      throw UsageError(fmt::format("{}:{}: expected 9 fields, got {}", config.remodel, line_number, fields.size()));
    try {
      cells.push_back(Cell{std::stoull(fields[0]), std::stoi(fields[1]), std::stoi(fields[2]), std::stoull(fields[3]),
                           fields[4], std::stod(fields[5]), 0, std::stod(fields[7]),
                           static_cast<std::uint32_t>(std::stoul(fields[8]))});
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{}:{}: not a number where one belongs", config.remodel, line_number));
    }
  }
  // A channel is the run of cells with the same rate, delay, streams and size.
  for (std::size_t first = 0; first < cells.size();) {
    std::size_t end = first;
    const auto same = [&](const Cell& a, const Cell& b) {
      return a.rate_bps == b.rate_bps && a.delay_ms == b.delay_ms && a.streams == b.streams && a.bytes == b.bytes;
    };
    while (end < cells.size() && same(cells[first], cells[end])) ++end;
    std::vector<Cell> channel(cells.begin() + static_cast<long>(first), cells.begin() + static_cast<long>(end));
    model_channel(model_path(config, channel[0].rate_bps, channel[0].delay_ms, channel[0].streams), channel);
    std::copy(channel.begin(), channel.end(), cells.begin() + static_cast<long>(first));
    first = end;
  }
  return cells;
}

// The cold, warm and idle messages of one channel, measured and modelled.
std::vector<Cell> measure_channel(const Config& config, const Testbed& bed, const hs::TcpPath& path,
                                  const Cell& shape) {
  // Paced as wanlab train paces (its coordinator's pacing_rate): the model
  // path's pacing, the link's payload rate over the streams.
  const std::uint64_t pacing = config.pace ? static_cast<std::uint64_t>(path.max_pacing_bps / 8) : 0;
  const auto measured =
      time_rounds(bed.host_of_dc(0), bed.host_of_dc(1), {shape.streams, shape.bytes, pacing, kChunk, kPort},
                  states_after_one_way(path.delay_s));
  std::vector<Cell> channel;
  for (std::size_t k = 0; k < measured.size(); ++k) {
    Cell cell = shape;
    cell.state = kStates[k];
    cell.measured_s = measured[k].seconds;
    const auto& shares = measured[k].first_shares;
    std::uint64_t cwnd_sum = 0;
    for (const auto& share : shares) cwnd_sum += share.cwnd;
    if (!shares.empty()) cell.cwnd_segments = static_cast<std::uint32_t>(cwnd_sum / shares.size());
    channel.push_back(cell);
  }
  model_channel(path, channel);
  for (const Cell& cell : channel) print_cell(cell);
  return channel;
}

// Every cell of one rate and delay, on one testbed.
void measure_link(const Config& config, const std::string& work_dir, std::uint64_t rate, int delay,
                  std::vector<Cell>& cells) {
  ScenarioSpec spec;
  spec.name = "bench-xfer";
  spec.delay = fmt::format("{}ms", delay);
  spec.rate = fmt::format("{}bit", rate);
  spec.queue = "1bdp";
  spec.congestion = "cubic";
  spec.wmem_max = config.wmem;
  spec.rmem_max = config.rmem;
  spec.slow_start_after_idle = config.slow_start_after_idle != 0;
  const Testbed bed(config.wanlab, work_dir, spec);
  for (const int streams : config.streams) {
    const hs::TcpPath path = model_path(config, rate, delay, streams);
    for (const std::uint64_t bytes : config.sizes) {
      wanlab::base::check_interrupted();
      const double ideal = hs::steady_transfer_s(path, streams, static_cast<double>(bytes));
      if (ideal > config.max_seconds) continue;
      const auto channel = measure_channel(config, bed, path, Cell{rate, delay, streams, bytes, "", 0, 0, ideal, 0});
      cells.insert(cells.end(), channel.begin(), channel.end());
    }
  }
}

int run(const Options& options) {
  const Config config = config_of(options);
  if (!config.remodel.empty()) {
    write_tables(config, remodel(config), 0);
    return 0;
  }
  const WorkDir work("wanlab-transfer-bench");
  std::vector<Cell> cells;
  const auto started = Clock::now();
  for (const std::uint64_t rate : config.rates_bps)
    for (const int delay : config.delays_ms) measure_link(config, work.path, rate, delay, cells);
  write_tables(config, cells, std::chrono::duration<double>(Clock::now() - started).count() / 60);
  return 0;
}

int main(int argc, char** argv) { return wanlab::bench::main_of(kProgram, run, argc, argv); }
