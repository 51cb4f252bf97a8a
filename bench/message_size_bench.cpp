// The message-size benchmark: bandwidth against message size over
// the scenarios/gcp-cen-west.toml preset (one rate, one delay), beside
// Sailor's profile of the same GCP pair, to see whether TCP over the emulated
// link alone gives Sailor's shape. Nothing is set per size.
//
// For each size, on one new channel of the wanlab transport (both ends threads
// of this process, one steady clock):
//   fresh  its first message: send to the receiver holding all of it
//   warm   after `--warmups` messages, `n` messages queued back to back, the
//          first send to the last arrival: Sailor's method (NCCL send/recv,
//          3 warm-up messages, then 47 timed one after another), with n cut so
//          that large sizes fit the time (--budget)
// The anchor, measured in the same run: what the emulated link carries here
// (--anchor-streams streams, 256 MB messages, warm), so the shape can be read
// against the link as this machine carries it.
//
// Usage (root): wanlab_message_size_bench [--wanlab PATH] [--scenario FILE] [--name NAME]
//               [--sizes 1M,16M,256M,1G] [--streams 4] [--anchor-streams 16] [--warmups 3]
//               [--messages 47] [--budget 2G] [--markdown FILE]
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_support.hpp"
#include "message_timing.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/units.hpp"

namespace em = wanlab::emulator;
namespace base = wanlab::base;
using namespace wanlab::bench;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint16_t kPort = 5381;
constexpr std::uint32_t kChunk = 64 * 1024;  // NCCL's socket transport splits at 64 KiB (MIN_CHUNKSIZE)
constexpr double kGB = 1e9;

// Sailor's fit for us-central1-a -> us-west1-b, A100-40, one GPU each
// (eth-easl/sailor, sailor/providers/multizone_bandwidths.json): GB/s as a
// quadratic in log2 of the message size in MB (10^6 bytes), fitted to
// NCCL send/recv of 2^16..2^30 bytes (sailor/profiling/networking/fit_func.py);
// and the largest bandwidth it measured.
constexpr double kSailorFit[] = {-0.0026462289401495104, 0.04789628762781821, 0.2073803445232657};
constexpr double kSailorMaxGBs = 0.619478692242954;

double sailor_gbs(std::uint64_t bytes) {
  const double x = std::log2(static_cast<double>(bytes) / 1e6);
  return kSailorFit[0] * x * x + kSailorFit[1] * x + kSailorFit[2];
}

struct Config {
  std::string wanlab;
  std::string scenario = "scenarios/gcp-cen-west.toml";
  std::string name = "bench-msize";
  std::vector<std::uint64_t> sizes{1u << 20, 16u << 20, 256u << 20, 1u << 30};
  int streams = 4;          // NCCL's socket transport on GCP: 4 sockets (net_socket.cc, vendor 0x1ae0)
  int anchor_streams = 16;  // enough that buffers do not limit: the link does
  std::size_t warmups = 3;
  std::size_t messages = 47;
  std::uint64_t budget = 2ull << 30;  // bytes in the timed round at the most, but 3 messages at the least
  std::string markdown;
};

struct Row {
  std::uint64_t bytes = 0;
  std::size_t timed = 0;  // messages in the warm round
  double fresh_gbs = 0;
  double warm_gbs = 0;
};

std::string size_text(std::uint64_t bytes) {
  if (bytes % (1u << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  return fmt::format("{} MiB", bytes >> 20);
}

// One channel: the fresh message, the warm-ups, then `timed` back to back.
Row measure(const Testbed& bed, const Config& config, int streams, std::uint64_t bytes, double one_way_s) {
  wanlab::base::check_interrupted();
  Row row;
  row.bytes = bytes;
  row.timed = std::clamp<std::size_t>(static_cast<std::size_t>(config.budget / bytes), 3, config.messages);
  // The previous round's acknowledgements reach the sender one way after it arrived.
  const auto one_way = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(one_way_s));
  const auto times = time_rounds(bed.host_of_dc(0), bed.host_of_dc(1), {streams, bytes, 0, kChunk, kPort},
                                 {{1, Clock::duration::zero()}, {config.warmups, one_way}, {row.timed, one_way}});
  row.fresh_gbs = static_cast<double>(bytes) / times[0].seconds / kGB;
  row.warm_gbs = static_cast<double>(bytes) * static_cast<double>(row.timed) / times[2].seconds / kGB;
  fmt::print("{:>8} x{:<2} fresh {:6.3f} GB/s ({:.3f} s)  warm {:6.3f} GB/s ({} messages, {:.3f} s)\n",
             size_text(bytes), streams, row.fresh_gbs, times[0].seconds, row.warm_gbs, row.timed, times[2].seconds);
  std::fflush(stdout);
  return row;
}

Table table_of(const Config& config, const std::vector<Row>& rows, double anchor_gbs, const std::string& started,
               const std::string& load, double minutes) {
  Table table;
  table.title = fmt::format("Bandwidth against message size over {} ({} streams), beside Sailor's GCP profile",
                            config.scenario, config.streams);
  table.header = {"message",       "fresh (GB/s)",  "warm (GB/s)",     "Sailor (GB/s)",
                  "warm / Sailor", "warm / anchor", "Sailor / its max"};
  for (const Row& r : rows) {
    const double sailor = sailor_gbs(r.bytes);
    table.rows.push_back({size_text(r.bytes), fmt::format("{:.3f}", r.fresh_gbs),
                          fmt::format("{:.3f} ({})", r.warm_gbs, r.timed), fmt::format("{:.3f}", sailor),
                          fmt::format("{:.2f}", r.warm_gbs / sailor), fmt::format("{:.2f}", r.warm_gbs / anchor_gbs),
                          fmt::format("{:.2f}", sailor / kSailorMaxGBs)});
  }
  const MachineInfo machine = machine_info();
  table.notes = {
      fmt::format("anchor, measured in this run: {:.3f} GB/s ({} streams, 256 MiB messages, warm) of the link's "
                  "configured 0.620 GB/s; Sailor's largest measured bandwidth {:.3f} GB/s",
                  anchor_gbs, config.anchor_streams, kSailorMaxGBs),
      fmt::format("fresh: a new channel's first message, send to last byte received; warm: after {} warm-up "
                  "messages, (n) messages queued back to back, first send to last arrival (Sailor: NCCL "
                  "send/recv, 3 warm-ups, 47 timed)",
                  config.warmups),
      "Sailor (GB/s): its fit (quadratic in log2 MB) for us-central1-a -> us-west1-b, A100-40, 1 GPU each "
      "(eth-easl/sailor, sailor/providers/multizone_bandwidths.json), at this size",
      fmt::format("run of {}, {:.1f} minutes; {} CPUs ({}), kernel {}; load average at start {}", started, minutes,
                  machine.cpus, machine.cpu_model, machine.kernel, load)};
  return table;
}

const Program kProgram{
    "wanlab_message_size_bench",
    "bandwidth against message size over a two-DC preset, beside Sailor's GCP profile (root; about 2 minutes)",
    {valued("wanlab", "PATH", "the wanlab binary (default: the one built beside this benchmark)"),
     valued("scenario", "FILE", "the two-DC scenario (default scenarios/gcp-cen-west.toml)"),
     valued("name", "NAME", "the testbed's name (default bench-msize)"),
     valued("sizes", "LIST", "message sizes, comma-separated (default 1M,16M,256M,1G)"),
     valued("streams", "N", "the channel's streams, 1 to 64 (default 4)"),
     valued("anchor-streams", "N", "the anchor's streams, 1 to 64 (default 16)"),
     valued("warmups", "N", "warm-up messages before the timed ones, 1 to 100 (default 3)"),
     valued("messages", "N", "timed messages at the most, 1 to 1000 (default 47)"),
     valued("budget", "SIZE", "bytes in the timed round at the most, but 3 messages at the least (default 2G)"),
     valued("markdown", "FILE", "write the table there as markdown")},
    ""};

std::uint64_t positive_size(const std::string& text) {
  const std::uint64_t bytes = em::units::parse_size(text);
  if (bytes == 0) throw std::invalid_argument("a size must be greater than 0");
  return bytes;
}

Config config_of(const Options& options) {
  Config config;
  config.wanlab = wanlab_option(options);
  config.scenario = options.get("scenario").value_or(config.scenario);
  config.name = options.get("name").value_or(config.name);
  config.markdown = base::output_file_option(options, "markdown").value_or("");
  config.streams = options.integer("streams", 1, 64).value_or(config.streams);
  config.anchor_streams = options.integer("anchor-streams", 1, 64).value_or(config.anchor_streams);
  config.warmups = options.integer<std::size_t>("warmups", 1, 100).value_or(config.warmups);
  config.messages = options.integer<std::size_t>("messages", 1, 1000).value_or(config.messages);
  config.budget = base::parsed_option(options, "budget", em::units::parse_size).value_or(config.budget);
  config.sizes = list_option(options, "sizes", positive_size).value_or(config.sizes);
  return config;
}

int run(const Options& options) {
  const Config config = config_of(options);
  const em::Scenario scenario = em::load_scenario(config.scenario);
  if (scenario.dcs.size() < 2) throw std::runtime_error(config.scenario + ": needs two DCs");
  const std::string started = now_text();
  const std::string load = load_average();
  const auto start = Clock::now();
  const Testbed bed(config.wanlab, config.scenario, config.name);
  const double one_way_s = static_cast<double>(scenario.pair(0, 1).delay_ns) / 1e9;
  const Row anchor = measure(bed, config, config.anchor_streams, 256u << 20, one_way_s);
  std::vector<Row> rows;
  for (const std::uint64_t bytes : config.sizes) rows.push_back(measure(bed, config, config.streams, bytes, one_way_s));
  const double minutes = std::chrono::duration<double>(Clock::now() - start).count() / 60;
  const Table table = table_of(config, rows, anchor.warm_gbs, started, load, minutes);
  fmt::print("\n{}", table.text());
  if (!config.markdown.empty()) wanlab::base::write_output_file(config.markdown, table.markdown());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return wanlab::bench::main_of(kProgram, run, argc, argv); }
