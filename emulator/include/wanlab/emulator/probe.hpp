// Measurements between two emulated hosts, done in-process: a thread enters
// each host's namespace. Used by `wanlab demo`, the integration tests and the
// benchmark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wanlab::emulator {

struct Endpoint {
  std::string netns;
  std::uint32_t ipv4 = 0;  // host byte order
};

// Where measure_rtt_ms times an echo's round trip.
enum class RttTiming {
  // The kernel's receive timestamps, less the echo side's hold: what a
  // kernel-answered ping sees, without either program's wake-up (on a loaded
  // machine those add milliseconds). Right where packets are held before the
  // receiving host's stack, as a testbed's router namespaces hold them.
  network,
  // The client's own clock, wake-ups included. Needed where the receiving
  // interface itself holds packets (`wanlab attach` on the nfqueue path): the
  // kernel stamps a packet when it arrives there, before the hold.
  application,
};

// Round-trip times (ms) of `count` UDP echoes sent every `interval_ms` on
// measure_echoes_paced's schedule. A lost echo is left out and costs no wait.
std::vector<double> measure_rtt_ms(const Endpoint& from, const Endpoint& to, int count, double interval_ms,
                                   RttTiming timing = RttTiming::network);

struct GoodputOptions {
  double seconds = 3.0;
  double warmup_seconds = 1.0;  // bytes received before this are not counted
  // Count from this CLOCK_MONOTONIC instant instead of the warm-up's end, so
  // that intervals line up with something else's clock (a schedule's steps).
  std::optional<std::uint64_t> count_from_mono_ns;
  std::optional<std::string> congestion;  // e.g. "cubic"
  int streams = 1;
};

// TCP goodput from `from` to `to` in bit/s, counted at the receiver.
double measure_goodput_bps(const Endpoint& from, const Endpoint& to, const GoodputOptions& options);

// One answered echo of measure_echoes_paced.
struct PacedEcho {
  double rtt_ms = 0;               // sent until the answer arrived (kernel receive timestamp)
  double app_rtt_ms = 0;           // sent until the client read the answer (its own clock)
  double echo_hold_ms = 0;         // the echo side's kernel receive timestamp until its reply's sendto
  std::uint64_t sent_mono_ns = 0;  // CLOCK_MONOTONIC when it was sent (the data plane's clock)
  // The round trip of the network alone: without the echo application's
  // wake-up, which a kernel-answered ping would not have either.
  double network_rtt_ms() const { return rtt_ms - echo_hold_ms; }
};

// `count` UDP echoes sent every `interval_ms` on a fixed schedule, without
// waiting for answers, so a long RTT does not stretch the run. Both sides take
// receive times from the kernel (SO_TIMESTAMPNS, CLOCK_REALTIME); the sender
// stamps just before sendto. Echoes without an answer 2 s after the last send
// are left out; the rest keep their send order.
std::vector<PacedEcho> measure_echoes_paced(const Endpoint& from, const Endpoint& to, int count, double interval_ms);

// The senders' TCP_INFO when a goodput run ends, summed over the streams
// (srtt: their mean). The *_limited times say why a stream was not sending:
// receive window or send buffer (kernel >= 4.10; 0 where unsupported).
struct SenderTcpInfo {
  std::uint64_t retransmitted_segments = 0;  // tcpi_total_retrans
  double srtt_ms = 0;                        // tcpi_rtt, mean over streams
  std::uint64_t busy_us = 0;                 // tcpi_busy_time: time with data in flight
  std::uint64_t rwnd_limited_us = 0;         // tcpi_rwnd_limited
  std::uint64_t sndbuf_limited_us = 0;       // tcpi_sndbuf_limited
  std::uint64_t max_cwnd_segments = 0;       // tcpi_snd_cwnd, the largest stream's
};

struct GoodputReport {
  double bps = 0;                    // over the counted seconds, as measure_goodput_bps
  std::vector<double> interval_bps;  // goodput of each interval of the counted span, in order
  // The longest time the receiver got no byte, over the gaps that overlap
  // each interval: on a link that never pauses, a long one is the host not
  // running the receiver, the sender or a release path, whose bytes land later.
  std::vector<double> interval_max_gap_s;
  SenderTcpInfo sender;
};

// measure_goodput_bps, also splitting the counted span into `interval_seconds`
// slices (the last one may be shorter and is scaled to its length) and reading
// the senders' TCP_INFO at the end.
GoodputReport measure_goodput(const Endpoint& from, const Endpoint& to, const GoodputOptions& options,
                              double interval_seconds = 1.0);

// Mean and coefficient of variation (population standard deviation / mean);
// NaN for no values.
double mean(const std::vector<double>& values);
double coefficient_of_variation(const std::vector<double>& values);

double median(std::vector<double> values);
double percentile(std::vector<double> values, double p);  // p in [0, 100]

}  // namespace wanlab::emulator
