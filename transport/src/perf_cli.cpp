// `wanlab perf` command line: parsing and running.
#include <fmt/format.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <charconv>
#include <concepts>
#include <csignal>
#include <iostream>
#include <set>

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

ChannelOptions& channel_of(Command& command) {
  return command.mode == Command::Mode::server ? command.server.channel : command.client.channel;
}

std::uint64_t size_at_most_1g(const std::string& given, const std::string& value) {
  return std::min<std::uint64_t>(parse_size(given, value), 1u << 30);
}

using Side = Option::Side;

std::vector<Option> make_options() {
  const double idle = std::chrono::duration<double>(ChannelOptions{}.idle_timeout).count();
  return {
      // server
      {"port", 'p', "N", Side::server,
       fmt::format("port to listen on (default {}; 0: any free port, printed)", kDefaultPort),
       [](Command& c, const std::string& given, const std::string& value) {
         c.server.port = parse_number<std::uint16_t>(given, value, 0, 65535);
       }},
      {"bind", 'B', "ADDR", Side::server, "address to listen on (default: all)",
       [](Command& c, const std::string&, const std::string& value) { c.server.bind = value; }},
      {"one-off", '1', "", Side::server, "exit after one client",
       [](Command& c, const std::string&, const std::string&) { c.server.one_off = true; }},
      {"json", 'J', "", Side::server, "one JSON object per client",
       [](Command& c, const std::string&, const std::string&) { c.server.json = true; }},
      {"memory-budget", 0, "B", Side::server,
       "receive memory of all clients (default: two 1G messages); a message: half of it, 1G at most",
       [](Command& c, const std::string& given, const std::string& value) {
         c.server.channel.memory_budget = parse_size(given, value);
         if (c.server.channel.memory_budget < kMinMemoryBudget)
           usage_error(fmt::format("--memory-budget: {} is below the least budget of {} bytes (1M)",
                                   c.server.channel.memory_budget, kMinMemoryBudget));
       }},
      {"idle-timeout", 0, "SEC", Side::server,
       fmt::format("drop a client that sends and reads nothing for SEC s, 0: never (default {})", idle),
       [](Command& c, const std::string& given, const std::string& value) {
         c.server.channel.idle_timeout = parse_milliseconds(given, value, 0, 86400);
       }},
      // client
      {"port", 'p', "N", Side::client, fmt::format("server port (default {})", kDefaultPort),
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.port = parse_number<std::uint16_t>(given, value, 1, 65535);
       }},
      {"parallel", 'P', "N", Side::client, fmt::format("TCP connections, 1..{} (default 1)", kMaxConnections),
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.channel.connections = parse_number<unsigned>(given, value, 1, kMaxConnections);
       }},
      {"time", 't', "SEC", Side::client, "send for SEC seconds (default 10)",
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.duration = parse_seconds(given, value, 0.001, 86400);
       }},
      {"bytes", 'n', "BYTES", Side::client, "send BYTES bytes instead (not with -t)",
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.bytes = parse_size(given, value);
         if (*c.client.bytes == 0) usage_error(given + ": must be at least 1 byte");
       }},
      {"message-size", 'l', "B", Side::client, "bytes per message (default 1M)",
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.message_size = parse_size(given, value);
         if (c.client.message_size == 0 || c.client.message_size > (1u << 30))
           usage_error(fmt::format("{}: {} is out of range (1..1GiB)", given, c.client.message_size));
       }},
      {"window", 0, "BYTES", Side::client, "unacknowledged bytes at most (default 256M)",
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.window = parse_size(given, value);
         if (c.client.window == 0) usage_error(given + ": must be at least 1 byte");
       }},
      {"interval", 'i', "SEC", Side::client, "progress every SEC seconds, 0 for none (default 1)",
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.interval = parse_seconds(given, value, 0, 3600);
       }},
      {"bind", 'B', "ADDR", Side::client, "local address to connect from",
       [](Command& c, const std::string&, const std::string& value) { c.client.channel.local_address = value; }},
      {"connect-timeout", 0, "SEC", Side::client, "give up connecting after SEC seconds (default 10)",
       [](Command& c, const std::string& given, const std::string& value) {
         c.client.channel.connect_timeout = parse_milliseconds(given, value, 0.001, 3600);
       }},
      {"json", 'J', "", Side::client, "print one JSON object at the end, nothing else",
       [](Command& c, const std::string&, const std::string&) { c.client.json = true; }},
      // both
      {"chunk-size", 0, "BYTES", Side::both,
       fmt::format("chunk size of this side's sends (default {})", kDefaultChunkSize),
       [](Command& c, const std::string& given, const std::string& value) {
         const auto size = parse_size(given, value);
         if (size < kMinChunkSize || size > kMaxChunkSize)
           usage_error(fmt::format("{}: {} is out of range ({}..{})", given, size, kMinChunkSize, kMaxChunkSize));
         channel_of(c).chunk_size = static_cast<std::uint32_t>(size);
       }},
      {"cc", 0, "NAME", Side::both, "congestion control: cubic, bbr, ... (default: system's)",
       [](Command& c, const std::string& given, const std::string& value) {
         if (value.empty() || value.size() > 15)
           usage_error(
               fmt::format("{}: {} is not a congestion control name (e.g. cubic, bbr)", given, base::quoted(value)));
         channel_of(c).socket.congestion_control = value;
       }},
      {"checksum", 0, "", Side::both, "CRC32C on every chunk this side sends",
       [](Command& c, const std::string&, const std::string&) { channel_of(c).checksum = true; }},
      {"send-buffer", 0, "B", Side::both, "SO_SNDBUF (default: kernel autotuning)",
       [](Command& c, const std::string& given, const std::string& value) {
         channel_of(c).socket.send_buffer = static_cast<int>(size_at_most_1g(given, value));
       }},
      {"receive-buffer", 0, "B", Side::both, "SO_RCVBUF (default: kernel autotuning)",
       [](Command& c, const std::string& given, const std::string& value) {
         channel_of(c).socket.receive_buffer = static_cast<int>(size_at_most_1g(given, value));
       }},
      {"pacing-rate", 0, "RATE", Side::both,
       "cap each connection's sending rate (SO_MAX_PACING_RATE) in bits/s: 100M, 1G (default: none)",
       [](Command& c, const std::string& given, const std::string& value) {
         channel_of(c).socket.max_pacing_rate = std::max<std::uint64_t>(1, parse_bit_rate(given, value) / 8);
       }},
      {"notsent-lowat", 0, "B", Side::both,
       fmt::format("TCP_NOTSENT_LOWAT (default {})", SocketOptions{}.not_sent_lowat),
       [](Command& c, const std::string& given, const std::string& value) {
         channel_of(c).socket.not_sent_lowat = static_cast<std::uint32_t>(size_at_most_1g(given, value));
       }},
  };
}

// The option of `side` (or of both) that `given` names: "-p" or "--port".
const Option* find_option(const std::string& given, Side side) {
  for (const Option& option : options()) {
    if (option.side != side && option.side != Side::both) continue;
    if (given == "--" + option.name || (option.short_name && given == std::string{'-', option.short_name}))
      return &option;
  }
  return nullptr;
}

// Every option of the command's side through the table; a client's one word
// is its host. Returns the names of the options given.
std::set<std::string> parse_options(Command& command, std::span<const std::string> args) {
  const bool server = command.mode == Command::Mode::server;
  const char* mode = server ? "server" : "client";
  std::set<std::string> given;
  ArgReader reader(args);
  while (reader.next()) {
    if (const Option* option = find_option(reader.name(), server ? Side::server : Side::client)) {
      std::string value;
      if (option->metavar.empty())
        reader.no_value();
      else
        value = reader.value();
      option->apply(command, reader.name(), value);
      given.insert(option->name);
    } else if (!server && !reader.name().starts_with("-")) {
      if (!command.client.host.empty())
        usage_error(fmt::format("unexpected argument {} (the host is {})", base::quoted(reader.name()),
                                base::quoted(command.client.host)));
      command.client.host = reader.name();
    } else {
      usage_error(fmt::format("unknown {} option {} (see 'wanlab perf --help')", mode, base::quoted(reader.name())));
    }
  }
  return given;
}

void check_client(const ClientOptions& options, const std::set<std::string>& given) {
  if (options.host.empty()) usage_error("client: missing HOST (wanlab perf client HOST [options])");
  if (given.count("time") && given.count("bytes")) usage_error("-t and -n are mutually exclusive");
}

// "  -p, --port N            port to ..." for --help.
std::string usage_lines(Side side) {
  std::string text;
  for (const Option& option : options()) {
    if (option.side != side) continue;
    std::string shown =
        option.short_name ? fmt::format("-{}, --{}", option.short_name, option.name) : "    --" + option.name;
    if (!option.metavar.empty()) shown += " " + option.metavar;
    text += shown.size() < 24 ? fmt::format("  {:<24}{}\n", shown, option.help)
                              : fmt::format("  {}\n  {:<24}{}\n", shown, "", option.help);
  }
  return text;
}

}  // namespace

std::uint64_t parse_bit_rate(const std::string& option, const std::string& text) {
  std::uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  const std::string_view suffix(rest, static_cast<std::size_t>(end - rest));
  if (ec != std::errc() || rest == text.data() || value == 0)
    usage_error(fmt::format("{}: {} is not a rate in bits/s (e.g. 100M, 1G)", option, base::quoted(text)));
  std::uint64_t unit = 1;
  if (suffix == "K" || suffix == "k")
    unit = 1'000;
  else if (suffix == "M" || suffix == "m")
    unit = 1'000'000;
  else if (suffix == "G" || suffix == "g")
    unit = 1'000'000'000;
  else if (!suffix.empty())
    usage_error(fmt::format("{}: {} has an unknown unit (use K, M, G: bits/s)", option, base::quoted(text)));
  if (value > ~std::uint64_t{0} / unit) usage_error(fmt::format("{}: {} is too large", option, base::quoted(text)));
  return value * unit;
}

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

const std::vector<Option>& options() {
  static const std::vector<Option> table = make_options();
  return table;
}

std::string usage() {
  return "usage: wanlab perf server [options]\n"
         "       wanlab perf client HOST [options]\n\n"
         "Measures goodput over a multi-connection wanlab transport channel (like iperf3).\n\n"
         "server options:\n" +
         usage_lines(Side::server) + "\nclient options:\n" + usage_lines(Side::client) + "\nboth:\n" +
         usage_lines(Side::both) + "\nSizes take K, M, G, T suffixes (binary: 64K = 65536).\n";
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
    parse_options(command, rest);
  } else if (mode == "client") {
    command.mode = Command::Mode::client;
    command.client.channel.connections = 1;
    check_client(command.client, parse_options(command, rest));
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
