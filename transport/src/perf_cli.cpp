// `wanlab perf` command line: parsing and running.
#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <charconv>
#include <concepts>
#include <csignal>
#include <iostream>

#include "wanlab/base/parse.hpp"
#include "wanlab/transport/error.hpp"
#include "wanlab/transport/perf.hpp"

namespace wanlab::transport::perf {
namespace {

[[noreturn]] void usage_error(const std::string& what) { throw UsageError(what); }

// A number given to `option`: errors read "-P: expected a whole number from 1 to 64, got "x"".
template <std::integral T>
T parse_number(const std::string& option, const std::string& text, T min, T max) {
  try {
    return base::parse_integer<T>(text, min, max);
  } catch (const base::ParseError& e) {
    usage_error(fmt::format("{}: {}", option, e.what()));
  }
}

std::chrono::duration<double> parse_seconds(const std::string& option, const std::string& text, double min,
                                            double max) {
  try {
    return std::chrono::duration<double>(base::parse_decimal(text, min, max));
  } catch (const base::ParseError& e) {
    usage_error(fmt::format("{}: {} (in seconds)", option, e.what()));
  }
}

std::chrono::milliseconds parse_milliseconds(const std::string& option, const std::string& text, double min,
                                             double max) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(parse_seconds(option, text, min, max));
}

// Walks the arguments; options take their value as the next argument or after '='.
class ArgReader {
 public:
  explicit ArgReader(std::span<const std::string> args) : args_(args) {}
  bool next() {
    if (position_ >= args_.size()) return false;
    const auto& arg = args_[position_++];
    const auto equals = arg.find('=');
    if (arg.starts_with("--") && equals != std::string::npos) {
      name_ = arg.substr(0, equals);
      inline_value_ = arg.substr(equals + 1);
    } else {
      name_ = arg;
      inline_value_.reset();
    }
    return true;
  }
  const std::string& name() const { return name_; }
  bool is(std::initializer_list<const char*> names) const {
    for (const char* n : names) {
      if (name_ == n) return true;
    }
    return false;
  }
  std::string value() {
    if (inline_value_) return *std::exchange(inline_value_, std::nullopt);
    if (position_ >= args_.size()) usage_error(fmt::format("option {} needs a value", name_));
    return args_[position_++];
  }
  void no_value() const {
    if (inline_value_) usage_error(fmt::format("option {} takes no value", name_));
  }

 private:
  std::span<const std::string> args_;
  std::size_t position_ = 0;
  std::string name_;
  std::optional<std::string> inline_value_;
};

// Options both sides share; true if `reader` held one of them.
// `lowest_port`: 0 lets a server listen on any free port.
bool parse_channel_option(ArgReader& reader, ChannelOptions& channel, std::uint16_t& port,
                          std::uint16_t lowest_port) {
  if (reader.is({"-p", "--port"})) {
    port = parse_number<std::uint16_t>(reader.name(), reader.value(), lowest_port, 65535);
  } else if (reader.is({"--chunk-size"})) {
    const auto size = parse_size(reader.name(), reader.value());
    if (size < kMinChunkSize || size > kMaxChunkSize) {
      usage_error(fmt::format("--chunk-size: {} is out of range ({}..{})", size, kMinChunkSize, kMaxChunkSize));
    }
    channel.chunk_size = static_cast<std::uint32_t>(size);
  } else if (reader.is({"--cc"})) {
    channel.socket.congestion_control = reader.value();
    if (channel.socket.congestion_control.empty() || channel.socket.congestion_control.size() > 15) {
      usage_error(fmt::format("--cc: {} is not a congestion control name (e.g. cubic, bbr)",
                              base::quoted(channel.socket.congestion_control)));
    }
  } else if (reader.is({"--checksum"})) {
    reader.no_value();
    channel.checksum = true;
  } else if (reader.is({"--send-buffer"})) {
    channel.socket.send_buffer =
        static_cast<int>(std::min<std::uint64_t>(parse_size(reader.name(), reader.value()), 1u << 30));
  } else if (reader.is({"--receive-buffer"})) {
    channel.socket.receive_buffer =
        static_cast<int>(std::min<std::uint64_t>(parse_size(reader.name(), reader.value()), 1u << 30));
  } else if (reader.is({"--notsent-lowat"})) {
    channel.socket.not_sent_lowat =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(parse_size(reader.name(), reader.value()), 1u << 30));
  } else {
    return false;
  }
  return true;
}

[[noreturn]] void unknown(const std::string& name, const char* mode) {
  usage_error(fmt::format("unknown {} option {} (see 'wanlab perf --help')", mode, base::quoted(name)));
}

ServerOptions parse_server(std::span<const std::string> args) {
  ServerOptions options;
  ArgReader reader(args);
  while (reader.next()) {
    if (parse_channel_option(reader, options.channel, options.port, 0)) continue;
    if (reader.is({"--memory-budget"})) {
      options.channel.memory_budget = parse_size(reader.name(), reader.value());
      if (options.channel.memory_budget < kMinMemoryBudget) {
        usage_error(fmt::format("--memory-budget: {} is below the least budget of {} bytes (1M)",
                                options.channel.memory_budget, kMinMemoryBudget));
      }
    } else if (reader.is({"--idle-timeout"})) {
      options.channel.idle_timeout = parse_milliseconds(reader.name(), reader.value(), 0, 86400);
    } else if (reader.is({"-B", "--bind"})) {
      options.bind = reader.value();
    } else if (reader.is({"-1", "--one-off"})) {
      reader.no_value();
      options.one_off = true;
    } else if (reader.is({"-J", "--json"})) {
      reader.no_value();
      options.json = true;
    } else {
      unknown(reader.name(), "server");
    }
  }
  return options;
}

ClientOptions parse_client(std::span<const std::string> args) {
  ClientOptions options;
  options.channel.connections = 1;
  bool have_time = false;
  ArgReader reader(args);
  while (reader.next()) {
    if (parse_channel_option(reader, options.channel, options.port, 1)) continue;
    if (reader.is({"-P", "--parallel"})) {
      options.channel.connections = parse_number<unsigned>(reader.name(), reader.value(), 1, kMaxConnections);
    } else if (reader.is({"-t", "--time"})) {
      options.duration = parse_seconds(reader.name(), reader.value(), 0.001, 86400);
      have_time = true;
    } else if (reader.is({"-n", "--bytes"})) {
      options.bytes = parse_size(reader.name(), reader.value());
      if (*options.bytes == 0) usage_error("-n: must be at least 1 byte");
    } else if (reader.is({"-l", "--message-size"})) {
      options.message_size = parse_size(reader.name(), reader.value());
      if (options.message_size == 0 || options.message_size > (1u << 30)) {
        usage_error(fmt::format("{}: {} is out of range (1..1GiB)", reader.name(), options.message_size));
      }
    } else if (reader.is({"--window"})) {
      options.window = parse_size(reader.name(), reader.value());
      if (options.window == 0) usage_error("--window: must be at least 1 byte");
    } else if (reader.is({"-i", "--interval"})) {
      options.interval = parse_seconds(reader.name(), reader.value(), 0, 3600);
    } else if (reader.is({"--connect-timeout"})) {
      options.channel.connect_timeout = parse_milliseconds(reader.name(), reader.value(), 0.001, 3600);
    } else if (reader.is({"-B", "--bind"})) {
      options.channel.local_address = reader.value();
    } else if (reader.is({"-J", "--json"})) {
      reader.no_value();
      options.json = true;
    } else if (!reader.name().starts_with("-") && options.host.empty()) {
      options.host = reader.name();
    } else if (!reader.name().starts_with("-")) {
      usage_error(fmt::format("unexpected argument {} (the host is {})", base::quoted(reader.name()),
                              base::quoted(options.host)));
    } else {
      unknown(reader.name(), "client");
    }
  }
  if (options.host.empty()) usage_error("client: missing HOST (wanlab perf client HOST [options])");
  if (have_time && options.bytes) usage_error("-t and -n are mutually exclusive");
  return options;
}

}  // namespace

std::uint64_t parse_size(const std::string& option, const std::string& text) {
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  std::string_view suffix(rest, static_cast<std::size_t>(end - rest));
  if (ec != std::errc() || rest == text.data())
    usage_error(fmt::format("{}: {} is not a size (e.g. 1500, 64K, 1M, 1GiB)", option, base::quoted(text)));
  if (suffix.ends_with("iB"))
    suffix.remove_suffix(2);
  else if (suffix.size() == 2 && suffix.back() == 'B')
    suffix.remove_suffix(1);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (suffix == "T" || suffix == "t")
    shift = 40;
  else if (!suffix.empty() && suffix != "B")
    usage_error(fmt::format("{}: {} has an unknown unit (use K, M, G, T)", option, base::quoted(text)));
  if (shift > 0 && value > (~std::uint64_t{0} >> shift))
    usage_error(fmt::format("{}: {} is too large", option, base::quoted(text)));
  return value << shift;
}

std::string usage() {
  return fmt::format(R"(usage: wanlab perf server [options]
       wanlab perf client HOST [options]

Measures goodput over a multi-connection wanlab transport channel (like iperf3).

server options:
  -p, --port N            port to listen on (default {port}; 0: any free port, printed)
  -B, --bind ADDR         address to listen on (default: all)
  -1, --one-off           exit after one client
  -J, --json              one JSON object per client
      --memory-budget B   receive memory of all clients together (default: two 1G
                          messages); a client's messages may be up to half of it, 1G at most
      --idle-timeout SEC  drop a client that sends and reads nothing for SEC s,
                          0: never (default {idle})

client options:
  -p, --port N            server port (default {port})
  -P, --parallel N        TCP connections, 1..64 (default 1)
  -t, --time SEC          send for SEC seconds (default 10)
  -n, --bytes BYTES       send BYTES bytes instead (not with -t)
  -l, --message-size B    bytes per message (default 1M)
      --window BYTES      unacknowledged bytes at most (default 256M)
  -i, --interval SEC      progress every SEC seconds, 0 for none (default 1)
  -B, --bind ADDR         local address to connect from
      --connect-timeout S give up connecting after S seconds (default 10)
  -J, --json              print one JSON object at the end, nothing else

both:
      --chunk-size BYTES  chunk size of this side's sends (default {chunk})
      --cc NAME           congestion control: cubic, bbr, ... (default: system's)
      --checksum          CRC32C on every chunk this side sends
      --send-buffer B     SO_SNDBUF (default: kernel autotuning)
      --receive-buffer B  SO_RCVBUF (default: kernel autotuning)
      --notsent-lowat B   TCP_NOTSENT_LOWAT (default {lowat})

Sizes take K, M, G, T suffixes (binary: 64K = 65536).
)",
                     fmt::arg("port", kDefaultPort), fmt::arg("chunk", kDefaultChunkSize),
                     fmt::arg("lowat", SocketOptions{}.not_sent_lowat),
                     fmt::arg("idle", std::chrono::duration<double>(ChannelOptions{}.idle_timeout).count()));
}

Command parse_args(std::span<const std::string> args) {
  Command command;
  if (args.empty()) usage_error("missing 'server' or 'client' (see 'wanlab perf --help')");
  const auto& mode = args.front();
  const auto rest = args.subspan(1);
  for (const auto& arg : args) {
    if (arg == "-h" || arg == "--help") return command;
  }
  if (mode == "help") return command;
  if (mode == "server") {
    command.mode = Command::Mode::server;
    command.server = parse_server(rest);
  } else if (mode == "client") {
    command.mode = Command::Mode::client;
    command.client = parse_client(rest);
  } else {
    usage_error(fmt::format("unknown mode {}: expected 'server' or 'client'", base::quoted(mode)));
  }
  return command;
}

namespace {

int run_server(const ServerOptions& options, std::ostream& out, std::ostream& err) {
  asio::io_context io(1);
  std::optional<Server> server;
  try {
    server.emplace(Server::listen(io.get_executor(), options, out, err));
  } catch (const TransportError& e) {
    err << "wanlab perf: " << e.what() << std::endl;
    return 1;
  }
  int code = 1;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](std::error_code ec, int) {
    if (ec) return;
    code = 0;
    server->stop();
    io.stop();
  });
  asio::co_spawn(io, server->serve(), [&](std::exception_ptr e, bool ok) {
    code = !e && ok ? 0 : 1;
    signals.cancel();
    io.stop();
  });
  io.run();
  return code;
}

int run_client(const ClientOptions& options, std::ostream& out, std::ostream& err) {
  asio::io_context io(1);
  if (!options.json) out << header_line(options) << std::endl;
  std::function<void(const Interval&)> on_interval;
  if (!options.json) on_interval = [&out](const Interval& interval) { out << interval_line(interval) << std::endl; };
  int code = 1;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](std::error_code ec, int) {
    if (ec) return;
    err << "wanlab perf: interrupted" << std::endl;
    io.stop();
  });
  asio::co_spawn(io, perf::run_client(options, on_interval), [&](std::exception_ptr e, Report report) {
    signals.cancel();
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& failure) {
        err << "wanlab perf: " << failure.what() << std::endl;
      }
    } else {
      out << (options.json ? to_json(report) + "\n" : to_text(report)) << std::flush;
      code = 0;
    }
  });
  io.run();
  return code;
}

}  // namespace

int run(const Command& command, std::ostream& out, std::ostream& err) {
  switch (command.mode) {
    case Command::Mode::help: out << usage(); return 0;
    case Command::Mode::server: return run_server(command.server, out, err);
    case Command::Mode::client: return run_client(command.client, out, err);
  }
  return 2;
}

}  // namespace wanlab::transport::perf
