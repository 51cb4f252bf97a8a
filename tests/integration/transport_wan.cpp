// The transport on an emulated long-fat pipe: 50 ms one way (100 ms RTT),
// 1 Gbit/s, tcp_wmem max 4 MiB on the hosts. One TCP stream is held to about
// 4 MiB per RTT (some 300 Mbit/s at most, less after the kernel's buffer
// overhead); eight streams of one channel must get at least three times the
// goodput of one. Drives the real binary: `wanlab up`, `wanlab exec ... wanlab
// perf server --one-off` and `... perf client --json`, `wanlab down`.

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/json.hpp"
#include "support/process.hpp"

namespace {

namespace test = wanlab::test;

using namespace std::chrono_literals;

const char* kTestbed = "tperf-itest";

std::string scenario() {
  return std::string("name = \"") + kTestbed + R"("
[defaults]
rate = "1gbit"
queue = "1bdp"
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "4mb"
tcp_rmem_max = "32mb"
[[dc]]
name = "east"
hosts = 1
[[dc]]
name = "west"
hosts = 1
[[link]]
between = ["east", "west"]
delay = "50ms"
)";
}

int run_wanlab(const std::vector<std::string>& args, std::string* output = nullptr) {
  test::Running child(test::wanlab_argv(args));
  const int status = child.finish(120s);
  if (output) *output = child.output();
  return status;
}

struct Testbed {
  Testbed() {
    file = std::filesystem::temp_directory_path() / (std::string(kTestbed) + ".toml");
    std::ofstream(file) << scenario();
    std::string output;
    run_wanlab({"down", kTestbed});  // a leftover from an interrupted run
    BOOST_TEST_REQUIRE(run_wanlab({"up", file.string(), "--quiet"}, &output) == 0, output);
  }
  ~Testbed() {
    std::string output;
    if (run_wanlab({"down", kTestbed}, &output) != 0) BOOST_TEST_MESSAGE("wanlab down: " << output);
    std::filesystem::remove(file);
  }
  std::filesystem::path file;
};

struct Run {
  double goodput_bps = 0;         // over the whole run
  double steady_goodput_bps = 0;  // after slow start: intervals from 3 s on
  std::string json;
};

Run perf(const std::string& server_address, unsigned streams) {
  const auto bin = test::wanlab_bin();
  test::Running server({bin, "exec", "west-0", "--testbed", kTestbed, "--", bin, "perf", "server", "--one-off"});
  BOOST_TEST_REQUIRE(server.read_until("listening on", 10s), server.output());
  std::string json;
  const int status = run_wanlab({"exec", "east-0", "--testbed", kTestbed, "--", bin, "perf", "client", server_address,
                                 "-P", std::to_string(streams), "-t", "10", "--json"},
                                &json);
  BOOST_TEST_REQUIRE(status == 0, json);
  BOOST_TEST(server.finish(10s) == 0, server.output());  // --one-off: the server exits after its client

  Run run;
  run.json = json;
  const nlohmann::json report = nlohmann::json::parse(json, nullptr, false);
  BOOST_TEST_REQUIRE((report.is_object() && report.contains("goodput_bps") && report.contains("intervals")), json);
  run.goodput_bps = report["goodput_bps"].get<double>();
  double steady_bytes = 0, steady_seconds = 0;
  for (const auto& interval : report["intervals"]) {
    const double start = interval.at("start").get<double>(), end = interval.at("end").get<double>();
    if (start < 3.0) continue;
    steady_bytes += interval.at("bytes").get<double>();
    steady_seconds += end - start;
  }
  BOOST_TEST_REQUIRE(steady_seconds > 4.0, json);
  run.steady_goodput_bps = 8 * steady_bytes / steady_seconds;
  return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(eight_streams_get_three_times_the_goodput_of_one_on_a_long_fat_pipe) {
  Testbed bed;
  std::string hosts;
  BOOST_TEST_REQUIRE(run_wanlab({"hosts", "--testbed", kTestbed, "--json"}, &hosts) == 0, hosts);
  // The west host's IPv4 address.
  const auto west = test::json_object_with(hosts, {{"name", "west-0"}});
  const std::string address = test::json_string(west, "ipv4");
  BOOST_TEST_REQUIRE(!address.empty(), hosts);

  const auto one = perf(address, 1);
  const auto eight = perf(address, 8);
  BOOST_TEST_MESSAGE("1 stream:  " << one.goodput_bps / 1e6 << " Mbit/s (steady " << one.steady_goodput_bps / 1e6
                                   << ")\n8 streams: " << eight.goodput_bps / 1e6 << " Mbit/s (steady "
                                   << eight.steady_goodput_bps / 1e6 << ")");
  // One stream is window-bound: 4 MiB per 100 ms is 335 Mbit/s before
  // overhead. It must use most of that window: a writer that waits for POLLOUT
  // keeps only about 70% of the buffer in flight (about 230 Mbit/s here).
  BOOST_TEST(one.steady_goodput_bps < 340e6, one.json);
  BOOST_TEST(one.steady_goodput_bps > 245e6, one.json);
  // Eight streams: three times as much, unless that is more than the link
  // carries. 1448 payload bytes per 1514-byte frame make 956 Mbit/s the most
  // a 1 Gbit/s link delivers, and one stream gets about 300 of it, so 3x would
  // be 94% of the link: then 90% of it is asked for instead.
  constexpr double link_payload_bps = 1e9 * 1448 / 1514;
  BOOST_TEST(eight.steady_goodput_bps >= std::min(3 * one.steady_goodput_bps, 0.9 * link_payload_bps), eight.json);
  BOOST_TEST(eight.goodput_bps >= std::min(2.5 * one.goodput_bps, 0.8 * link_payload_bps), eight.json);
  BOOST_TEST(eight.steady_goodput_bps < 1.01e9, eight.json);
}
