// Text and JSON output of `wanlab perf` (JSON through nlohmann).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>

#include "wanlab/transport/perf.hpp"

namespace wanlab::transport::perf {
namespace {

// iperf3's units: transfer in binary multiples, rates in decimal ones.
std::string bytes_text(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GBytes", bytes / (1024.0 * 1024 * 1024));
  if (bytes >= 1024.0 * 1024) return fmt::format("{:.1f} MBytes", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} KBytes", bytes / 1024.0);
}

std::string rate_text(double bps) {
  if (bps >= 1e9) return fmt::format("{:.2f} Gbits/sec", bps / 1e9);
  if (bps >= 1e6) return fmt::format("{:.1f} Mbits/sec", bps / 1e6);
  return fmt::format("{:.1f} Kbits/sec", bps / 1e3);
}

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity; `digits` after the point, as the report has
// always printed them.
double finite(double value, int digits) {
  if (!std::isfinite(value)) return 0.0;
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}
// Rates in whole bits per second.
std::int64_t whole(double value) { return std::isfinite(value) ? std::llround(value) : 0; }

}  // namespace

std::string header_line(const ClientOptions& options) {
  const auto what =
      options.bytes ? fmt::format("{} bytes", *options.bytes) : fmt::format("{:g} s", options.duration.count());
  return fmt::format("Connecting to {}:{} with {} stream{}, {} in messages of {} bytes, chunks of {} bytes{}",
                     options.host, options.port, options.channel.connections,
                     options.channel.connections == 1 ? "" : "s", what, options.message_size,
                     options.channel.chunk_size,
                     options.channel.socket.congestion_control.empty()
                         ? ""
                         : ", congestion control " + options.channel.socket.congestion_control);
}

std::string interval_line(const Interval& interval) {
  return fmt::format("[SUM] {:6.2f}-{:<6.2f} sec  {:>13}  {:>16}  {:>6} retr", interval.start, interval.end,
                     bytes_text(static_cast<double>(interval.bytes)), rate_text(interval.goodput_bps()),
                     interval.retransmits);
}

std::string to_text(const Report& r) {
  std::string out = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";
  out += "[ ID]  Transfer       Share   Retr   Stalls  Stalled s  RTT ms    Cwnd\n";
  for (const auto& s : r.per_stream) {
    out += fmt::format("[{:3}]  {:>13}  {:5.1f}%  {:5}  {:7}  {:9.3f}  {:6.2f}  {:6}\n", s.index,
                       bytes_text(static_cast<double>(s.bytes)), 100.0 * s.share, s.retransmits, s.stalls,
                       s.stalled_seconds, s.rtt_ms, s.cwnd);
  }
  out += fmt::format("[SUM]  0.00-{:.2f} sec  {}  {}  {} retr  (goodput, acknowledged by the receiver)\n", r.seconds,
                     bytes_text(static_cast<double>(r.bytes)), rate_text(r.goodput_bps), r.retransmits);
  out += fmt::format("message completion: p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms ({} messages of {} bytes)\n",
                     r.completion_p50_ms, r.completion_p99_ms, r.completion_max_ms, r.messages, r.message_size);
  const double server_rate = r.server_seconds > 0 ? 8.0 * static_cast<double>(r.server_bytes) / r.server_seconds : 0;
  out += fmt::format("server received {} in {:.2f} s ({}); congestion control {}\n",
                     bytes_text(static_cast<double>(r.server_bytes)), r.server_seconds, rate_text(server_rate),
                     r.congestion_control.empty() ? "?" : r.congestion_control);
  return out;
}

std::string to_json(const Report& r) {
  Json per_stream = Json::array();
  for (const auto& s : r.per_stream) {
    per_stream.push_back({{"index", s.index},
                          {"bytes", s.bytes},
                          {"share", finite(s.share, 6)},
                          {"chunks", s.chunks},
                          {"retransmits", s.retransmits},
                          {"stalls", s.stalls},
                          {"stalled_seconds", finite(s.stalled_seconds, 6)},
                          {"rtt_ms", finite(s.rtt_ms, 3)},
                          {"cwnd", s.cwnd},
                          {"delivery_rate_bps", s.delivery_rate_bps}});
  }
  Json intervals = Json::array();
  for (const auto& i : r.intervals) {
    intervals.push_back({{"start", finite(i.start, 6)},
                         {"end", finite(i.end, 6)},
                         {"bytes", i.bytes},
                         {"goodput_bps", whole(i.goodput_bps())},
                         {"retransmits", i.retransmits}});
  }
  const double server_rate = r.server_seconds > 0 ? 8.0 * static_cast<double>(r.server_bytes) / r.server_seconds : 0;
  const Json json = {{"host", r.host},
                     {"port", r.port},
                     {"streams", r.streams},
                     {"bytes", r.bytes},
                     {"seconds", finite(r.seconds, 6)},
                     {"goodput_bps", whole(r.goodput_bps)},
                     {"retransmits", r.retransmits},
                     {"messages", r.messages},
                     {"message_size", r.message_size},
                     {"chunk_size", r.chunk_size},
                     {"congestion_control", r.congestion_control},
                     {"message_completion_ms",
                      {{"p50", finite(r.completion_p50_ms, 3)},
                       {"p99", finite(r.completion_p99_ms, 3)},
                       {"max", finite(r.completion_max_ms, 3)}}},
                     {"server",
                      {{"bytes", r.server_bytes},
                       {"messages", r.server_messages},
                       {"seconds", finite(r.server_seconds, 6)},
                       {"goodput_bps", whole(server_rate)}}},
                     {"per_stream", std::move(per_stream)},
                     {"intervals", std::move(intervals)}};
  return json.dump();
}

}  // namespace wanlab::transport::perf
