// `wanlab perf`: an iperf3-like goodput test over a Channel.
//
// The client connects a channel of N connections, sends a request message,
// then keeps up to `window` bytes of messages unacknowledged; the server
// acknowledges each message (8 bytes: its sequence number) as it is
// delivered whole. When the time (-t) or byte count (-n) is reached the client
// waits for the last acknowledgement, shuts down, and the server answers with
// its own count before shutting down too.
//
//   goodput          = acknowledged message bytes / (last ack - first send)
//   completion time  = ack arrival - the moment a connection took the
//                      message's first chunk (so it includes the ack's
//                      one-way trip back, not time queued behind the window)
//   retransmits      = TCP_INFO total_retrans of the client's connections
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/transport/options.hpp"

namespace wanlab::transport::perf {

inline constexpr std::uint16_t kDefaultPort = 5301;
/// The least --memory-budget: room for a few small messages.
inline constexpr std::uint64_t kMinMemoryBudget = 1u << 20;

struct ServerOptions {
  std::string bind;                   ///< address to listen on; empty: all (IPv6 dual-stack, else IPv4)
  std::uint16_t port = kDefaultPort;  ///< 0: any free port (local_endpoint() tells)
  bool one_off = false;               ///< exit after one client (success or failure)
  bool json = false;                  ///< one JSON object per client instead of text
  /// channel.memory_budget is shared by all clients; the server accepts
  /// messages of up to half of it (see Server::listen), channel.idle_timeout
  /// drops clients that stop.
  ChannelOptions channel;
};

struct ClientOptions {
  std::string host;
  std::uint16_t port = kDefaultPort;
  std::chrono::duration<double> duration{10.0};  ///< used unless `bytes` is set
  std::optional<std::uint64_t> bytes;            ///< send exactly this many bytes
  std::uint64_t message_size = 1u << 20;
  std::uint64_t window = 256ull << 20;          ///< unacknowledged bytes at most (at least one message)
  std::chrono::duration<double> interval{1.0};  ///< progress reports; 0: none
  bool json = false;
  ChannelOptions channel;  ///< channel.connections is -P
};

/// One progress interval, as seen by the client.
struct Interval {
  double start = 0;  ///< seconds since the first send
  double end = 0;
  std::uint64_t bytes = 0;  ///< acknowledged in this interval
  std::uint64_t retransmits = 0;
  double goodput_bps() const { return end > start ? 8.0 * static_cast<double>(bytes) / (end - start) : 0.0; }
};

struct StreamReport {
  unsigned index = 0;
  std::uint64_t bytes = 0;  ///< payload bytes this connection carried
  double share = 0;         ///< of all payload bytes sent
  std::uint64_t chunks = 0;
  std::uint64_t retransmits = 0;
  std::uint64_t stalls = 0;
  double stalled_seconds = 0;
  double rtt_ms = 0;
  std::uint32_t cwnd = 0;
  std::uint64_t delivery_rate_bps = 0;
};

struct Report {
  std::string host;
  std::uint16_t port = 0;
  unsigned streams = 0;
  std::uint64_t bytes = 0;  ///< acknowledged message bytes
  double seconds = 0;
  double goodput_bps = 0;
  std::uint64_t messages = 0;
  std::uint64_t message_size = 0;
  std::uint32_t chunk_size = 0;
  std::string congestion_control;
  std::uint64_t retransmits = 0;
  double completion_p50_ms = 0;
  double completion_p99_ms = 0;
  double completion_max_ms = 0;
  std::vector<StreamReport> per_stream;
  std::vector<Interval> intervals;
  std::uint64_t server_bytes = 0;  ///< as counted by the server
  std::uint64_t server_messages = 0;
  double server_seconds = 0;
};

/// Runs the client side of one test. Throws TransportError.
asio::awaitable<Report> run_client(ClientOptions options, std::function<void(const Interval&)> on_interval);

/// A perf server: listens at once; serve() accepts clients until stopped (or
/// after one with one_off). Text or JSON lines go to `out`, errors to `err`.
/// The message limit it tells clients is the smaller of
/// channel.max_message_size and what half of channel.memory_budget holds, so
/// that one client's message in order never waits for another's to finish.
class Server {
 public:
  static Server listen(asio::any_io_executor executor, const ServerOptions& options, std::ostream& out,
                       std::ostream& err);
  asio::ip::tcp::endpoint local_endpoint() const;
  /// Returns when one_off and the client is done (true if it succeeded), or
  /// when stop() is called.
  asio::awaitable<bool> serve();
  void stop();

  struct State;

 private:
  explicit Server(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

std::string to_json(const Report& report);
std::string to_text(const Report& report);
std::string interval_line(const Interval& interval);
std::string header_line(const ClientOptions& options);

// ---- command line ------------------------------------------------------------

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Command {
  enum class Mode { server, client, help } mode = Mode::help;
  ServerOptions server;
  ClientOptions client;
};

/// One option of `wanlab perf`: the one table the command line is parsed
/// against and usage() (and `wanlab`'s usage line) is written from.
struct Option {
  enum class Side { server, client, both };
  std::string name;     ///< "port": given as --port
  char short_name = 0;  ///< 'p': given as -p; 0 for none
  std::string metavar;  ///< "N"; empty for a flag
  Side side = Side::both;
  std::string help;  ///< one line, with the default
  /// Sets the option in the command's side (server or client); `given` is
  /// the option as written ("-p" or "--port"), for messages.
  void (*apply)(Command& command, const std::string& given, const std::string& value) = nullptr;
};
const std::vector<Option>& options();

/// Parses the arguments after "perf". Throws UsageError naming the option.
Command parse_args(std::span<const std::string> args);
std::string usage();
/// Runs a parsed command to completion (SIGINT/SIGTERM stop it); returns the exit code.
int run(const Command& command, std::ostream& out, std::ostream& err);

/// "64K", "1M", "1MiB", "2G", "1500": bytes (binary multiples). Throws UsageError.
std::uint64_t parse_size(const std::string& option, const std::string& text);
/// "100M", "1G", "64K", "5000000": bits/s (decimal multiples, as iperf3's
/// rates), more than 0. Throws UsageError.
std::uint64_t parse_bit_rate(const std::string& option, const std::string& text);

}  // namespace wanlab::transport::perf
