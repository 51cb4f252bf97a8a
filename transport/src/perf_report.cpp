// Text and JSON output of `wanlab perf`.
#include <fmt/format.h>

#include <cmath>

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

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// JSON has no NaN or infinity.
double finite(double value) { return std::isfinite(value) ? value : 0.0; }

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
  std::string per_stream;
  for (const auto& s : r.per_stream) {
    per_stream += fmt::format(
        R"({}{{"index":{},"bytes":{},"share":{:.6f},"chunks":{},"retransmits":{},"stalls":{},"stalled_seconds":{:.6f},)"
        R"("rtt_ms":{:.3f},"cwnd":{},"delivery_rate_bps":{}}})",
        per_stream.empty() ? "" : ",", s.index, s.bytes, finite(s.share), s.chunks, s.retransmits, s.stalls,
        finite(s.stalled_seconds), finite(s.rtt_ms), s.cwnd, s.delivery_rate_bps);
  }
  std::string intervals;
  for (const auto& i : r.intervals) {
    intervals += fmt::format(R"({}{{"start":{:.6f},"end":{:.6f},"bytes":{},"goodput_bps":{:.0f},"retransmits":{}}})",
                             intervals.empty() ? "" : ",", finite(i.start), finite(i.end), i.bytes,
                             finite(i.goodput_bps()), i.retransmits);
  }
  const double server_rate = r.server_seconds > 0 ? 8.0 * static_cast<double>(r.server_bytes) / r.server_seconds : 0;
  return fmt::format(
      R"({{"host":{},"port":{},"streams":{},"bytes":{},"seconds":{:.6f},"goodput_bps":{:.0f},"retransmits":{},)"
      R"("messages":{},"message_size":{},"chunk_size":{},"congestion_control":{},)"
      R"("message_completion_ms":{{"p50":{:.3f},"p99":{:.3f},"max":{:.3f}}},)"
      R"("server":{{"bytes":{},"messages":{},"seconds":{:.6f},"goodput_bps":{:.0f}}},)"
      R"("per_stream":[{}],"intervals":[{}]}})",
      json_string(r.host), r.port, r.streams, r.bytes, finite(r.seconds), finite(r.goodput_bps), r.retransmits,
      r.messages, r.message_size, r.chunk_size, json_string(r.congestion_control), finite(r.completion_p50_ms),
      finite(r.completion_p99_ms), finite(r.completion_max_ms), r.server_bytes, r.server_messages,
      finite(r.server_seconds), finite(server_rate), per_stream, intervals);
}

}  // namespace wanlab::transport::perf
