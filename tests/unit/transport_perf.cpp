// `wanlab perf` over loopback: argument parsing, a byte-count run and a timed
// run, the report's consistency and its JSON.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "unit/transport_attacker.hpp"
#include "unit/transport_support.hpp"
#include "wanlab/transport/perf.hpp"

using namespace transport_test;
namespace perf = wt::perf;

namespace {

std::string usage_error(std::vector<std::string> args) {
  try {
    perf::parse_args(args);
  } catch (const perf::UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

struct ServerRun {
  std::ostringstream out, err;
  std::optional<perf::Server> server;
  bool finished = false;
  bool succeeded = false;
};

void start_server(asio::io_context& io, ServerRun& run) {
  perf::ServerOptions options;
  options.bind = "127.0.0.1";
  options.port = 0;
  options.one_off = true;
  options.json = true;
  run.server.emplace(perf::Server::listen(io.get_executor(), options, run.out, run.err));
  asio::co_spawn(io, run.server->serve(), [&run](std::exception_ptr e, bool ok) {
    run.finished = true;
    run.succeeded = !e && ok;
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(arguments_parse_with_clear_errors) {
  BOOST_CHECK(contains(usage_error({}), "missing 'server' or 'client'"));
  BOOST_CHECK(contains(usage_error({"serve"}), "unknown mode \"serve\""));
  BOOST_CHECK(contains(usage_error({"client"}), "missing HOST"));
  const std::string p_range = "-P: expected a whole number from 1 to 64, got ";
  BOOST_CHECK(contains(usage_error({"client", "h", "-P", "0"}), p_range + "\"0\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "-P", "65"}), p_range + "\"65\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "-P", "x"}), p_range + "\"x\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "-P", "+4"}), p_range + "\"+4\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "-P"}), "option -P needs a value"));
  BOOST_CHECK(contains(usage_error({"client", "h", "-t", "5", "-n", "1M"}), "-t and -n are mutually exclusive"));
  BOOST_CHECK(contains(usage_error({"client", "h", "-t", "-1"}),
                       "-t: expected a number from 0.001 to 86400, got \"-1\" (in seconds)"));
  BOOST_CHECK(contains(usage_error({"client", "h", "-t", "inf"}), "got \"inf\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "--chunk-size", "100"}), "--chunk-size: 100 is out of range"));
  BOOST_CHECK(contains(usage_error({"client", "h", "-n", "5X"}), "-n: \"5X\" has an unknown unit"));
  BOOST_CHECK(contains(usage_error({"client", "h", "--message-size", "0"}), "out of range (1..1GiB)"));
  BOOST_CHECK(contains(usage_error({"client", "h", "--frobnicate"}), "unknown client option \"--frobnicate\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "other"}), "unexpected argument \"other\""));
  BOOST_CHECK(contains(usage_error({"client", "h", "-p", "0"}), "-p: expected a whole number from 1 to 65535"));
  BOOST_CHECK(contains(usage_error({"server", "--one-off=yes"}), "option --one-off takes no value"));
  BOOST_CHECK(contains(usage_error({"server", "-P", "4"}), "unknown server option \"-P\""));
  BOOST_CHECK(contains(usage_error({"server", "--port", "70000"}),
                       "--port: expected a whole number from 0 to 65535, got \"70000\""));
  BOOST_CHECK(contains(usage_error({"server", "--memory-budget", "64K"}), "--memory-budget: 65536 is below"));
  BOOST_CHECK(contains(usage_error({"server", "--idle-timeout", "soon"}),
                       "--idle-timeout: expected a number from 0 to 86400, got \"soon\""));
  // Untrusted text is shown bounded, whatever its length.
  const auto flood = usage_error({"client", "h", "-P", std::string(100000, '9')});
  BOOST_CHECK_LT(flood.size(), 200u);

  const std::vector<std::string> client{
      "client",       "10.2.0.2", "-P",   "8",     "-n",     "1GiB", "--message-size=4M",
      "--chunk-size", "256K",     "--cc", "cubic", "--json", "-p",   "6000"};
  const auto command = perf::parse_args(client);
  BOOST_REQUIRE(command.mode == perf::Command::Mode::client);
  BOOST_CHECK_EQUAL(command.client.host, "10.2.0.2");
  BOOST_CHECK_EQUAL(command.client.channel.connections, 8u);
  BOOST_CHECK_EQUAL(*command.client.bytes, 1ull << 30);
  BOOST_CHECK_EQUAL(command.client.message_size, 4u << 20);
  BOOST_CHECK_EQUAL(command.client.channel.chunk_size, 256u << 10);
  BOOST_CHECK_EQUAL(command.client.channel.socket.congestion_control, "cubic");
  BOOST_CHECK(command.client.json);
  BOOST_CHECK_EQUAL(command.client.port, 6000);

  const std::vector<std::string> server{"server",          "-p",  "7000",           "--one-off", "-B", "127.0.0.1",
                                        "--memory-budget", "64M", "--idle-timeout", "2.5"};
  const auto server_command = perf::parse_args(server);
  BOOST_CHECK(server_command.mode == perf::Command::Mode::server);
  BOOST_CHECK(server_command.server.one_off);
  BOOST_CHECK_EQUAL(server_command.server.port, 7000);
  BOOST_CHECK_EQUAL(server_command.server.channel.memory_budget, 64u << 20);
  BOOST_CHECK_EQUAL(server_command.server.channel.idle_timeout.count(), 2500);
  const std::vector<std::string> any_port{"server", "--port=0", "--idle-timeout", "0"};
  BOOST_CHECK_EQUAL(perf::parse_args(any_port).server.port, 0);
  BOOST_CHECK_EQUAL(perf::parse_args(any_port).server.channel.idle_timeout.count(), 0);
  const std::vector<std::string> help{"client", "--help"};
  BOOST_CHECK(perf::parse_args(help).mode == perf::Command::Mode::help);
  BOOST_CHECK(contains(perf::usage(), "--one-off"));
}

BOOST_AUTO_TEST_CASE(the_real_binary_exits_2_on_a_bad_command_line) {
  const auto bad = transport_attack::run_wanlab({"perf", "client", "127.0.0.1", "-P", "many"});
  BOOST_CHECK_EQUAL(bad.status, 2);
  BOOST_CHECK_MESSAGE(contains(bad.output, "wanlab perf: -P: expected a whole number from 1 to 64, got \"many\""),
                      bad.output);
  const auto budget = transport_attack::run_wanlab({"perf", "server", "--memory-budget", "1K"});
  BOOST_CHECK_EQUAL(budget.status, 2);
  BOOST_CHECK_MESSAGE(contains(budget.output, "--memory-budget: 1024 is below"), budget.output);
}

BOOST_AUTO_TEST_CASE(sizes_use_binary_multiples) {
  BOOST_CHECK_EQUAL(perf::parse_size("x", "1500"), 1500u);
  BOOST_CHECK_EQUAL(perf::parse_size("x", "64K"), 65536u);
  BOOST_CHECK_EQUAL(perf::parse_size("x", "1M"), 1u << 20);
  BOOST_CHECK_EQUAL(perf::parse_size("x", "1MiB"), 1u << 20);
  BOOST_CHECK_EQUAL(perf::parse_size("x", "2GB"), 2ull << 30);
  BOOST_CHECK_THROW(perf::parse_size("x", "M"), perf::UsageError);
  BOOST_CHECK_THROW(perf::parse_size("x", "99999999999T"), perf::UsageError);
}

BOOST_AUTO_TEST_CASE(rates_are_bits_per_second_in_decimal_multiples) {
  BOOST_CHECK_EQUAL(perf::parse_bit_rate("x", "5000000"), 5'000'000u);
  BOOST_CHECK_EQUAL(perf::parse_bit_rate("x", "64K"), 64'000u);
  BOOST_CHECK_EQUAL(perf::parse_bit_rate("x", "100M"), 100'000'000u);
  BOOST_CHECK_EQUAL(perf::parse_bit_rate("x", "1g"), 1'000'000'000u);
  BOOST_CHECK_THROW(perf::parse_bit_rate("x", "0"), perf::UsageError);
  BOOST_CHECK_THROW(perf::parse_bit_rate("x", "100Mbit"), perf::UsageError);
  BOOST_CHECK_THROW(perf::parse_bit_rate("x", "99999999999999G"), perf::UsageError);
  const std::vector<std::string> args{"client", "10.0.0.1", "-P", "2", "--pacing-rate", "100M"};
  BOOST_CHECK_EQUAL(perf::parse_args(args).client.channel.socket.max_pacing_rate, 12'500'000u);
}

BOOST_AUTO_TEST_CASE(byte_count_run_reports_consistent_figures) {
  asio::io_context io;
  ServerRun server;
  start_server(io, server);
  perf::ClientOptions options;
  options.host = "127.0.0.1";
  options.port = server.server->local_endpoint().port();
  options.bytes = 64ull << 20;
  options.message_size = 1 << 20;
  options.channel.connections = 4;
  options.channel.chunk_size = 256 * 1024;
  options.interval = std::chrono::duration<double>(0.05);
  std::vector<perf::Interval> intervals;
  const auto report = run(io, perf::run_client(options, [&](const perf::Interval& i) { intervals.push_back(i); }));
  while (!server.finished) io.run_one_for(50ms);

  BOOST_CHECK_EQUAL(report.bytes, 64ull << 20);
  BOOST_CHECK_EQUAL(report.messages, 64u);
  BOOST_CHECK_EQUAL(report.server_bytes, 64ull << 20);
  BOOST_CHECK_EQUAL(report.server_messages, 64u);
  BOOST_CHECK_EQUAL(report.streams, 4u);
  BOOST_CHECK_GT(report.seconds, 0.0);
  BOOST_CHECK_CLOSE(report.goodput_bps, 8.0 * (64 << 20) / report.seconds, 0.001);
  BOOST_CHECK_LE(report.completion_p50_ms, report.completion_p99_ms);
  BOOST_CHECK_LE(report.completion_p99_ms, report.completion_max_ms);
  BOOST_CHECK_GT(report.completion_p50_ms, 0.0);
  BOOST_REQUIRE_EQUAL(report.per_stream.size(), 4u);
  double shares = 0;
  std::uint64_t stream_bytes = 0;
  for (const auto& s : report.per_stream) {
    shares += s.share;
    stream_bytes += s.bytes;
  }
  BOOST_CHECK_CLOSE(shares, 1.0, 0.001);
  // Payload bytes: the data plus the request message.
  BOOST_CHECK_EQUAL(stream_bytes, (64ull << 20) + 13);
  std::uint64_t interval_bytes = 0;
  for (const auto& i : intervals) interval_bytes += i.bytes;
  BOOST_CHECK_EQUAL(interval_bytes, report.bytes);
  BOOST_CHECK(server.succeeded);
  BOOST_CHECK_MESSAGE(server.err.str().empty(), server.err.str());

  const auto json = perf::to_json(report);
  BOOST_CHECK_MESSAGE(nlohmann::json::accept(json), json);
  for (const char* key : {"\"goodput_bps\":", "\"bytes\":67108864", "\"seconds\":", "\"streams\":4",
                          "\"retransmits\":", "\"per_stream\":[{", "\"message_completion_ms\":{\"p50\":"}) {
    BOOST_CHECK_MESSAGE(contains(json, key), key << " missing from " << json);
  }
  const auto server_json = server.out.str();
  BOOST_CHECK_MESSAGE(nlohmann::json::accept(server_json), server_json);
  BOOST_CHECK(contains(server_json, "\"bytes\":67108864"));
  BOOST_CHECK(contains(perf::to_text(report), "message completion: p50"));
}

BOOST_AUTO_TEST_CASE(timed_run_stops_near_its_duration) {
  asio::io_context io;
  ServerRun server;
  start_server(io, server);
  perf::ClientOptions options;
  options.host = "127.0.0.1";
  options.port = server.server->local_endpoint().port();
  options.duration = std::chrono::duration<double>(0.8);
  options.channel.connections = 2;
  options.interval = std::chrono::duration<double>(0.2);
  std::vector<perf::Interval> intervals;
  const auto report = run(io, perf::run_client(options, [&](const perf::Interval& i) { intervals.push_back(i); }));
  while (!server.finished) io.run_one_for(50ms);
  BOOST_TEST_MESSAGE("0.8 s run: " << report.seconds << " s, " << report.goodput_bps / 1e9 << " Gbit/s");
  BOOST_CHECK_GE(report.seconds, 0.75);
  BOOST_CHECK_LE(report.seconds, 3.0);  // the drain after -t is bounded by the socket buffers
  BOOST_CHECK_GT(report.bytes, 0u);
  BOOST_CHECK_EQUAL(report.server_bytes, report.bytes);
  BOOST_CHECK_GE(intervals.size(), 3u);
  BOOST_CHECK(server.succeeded);
}

BOOST_AUTO_TEST_CASE(client_reports_a_missing_server) {
  asio::io_context io;
  std::uint16_t port;
  {
    tcp::acceptor probe(io, loopback());
    port = probe.local_endpoint().port();
  }
  const std::vector<std::string> args{"client", "127.0.0.1", "-p", std::to_string(port), "--json"};
  const auto command = perf::parse_args(args);
  std::ostringstream out, err;
  BOOST_CHECK_EQUAL(perf::run(command, out, err), 1);
  BOOST_CHECK_MESSAGE(contains(err.str(), "wanlab perf: connection 0 of 1 to 127.0.0.1:" + std::to_string(port) +
                                              ": Connection refused"),
                      err.str());
  BOOST_CHECK(out.str().empty());
}
