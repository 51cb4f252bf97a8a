// The transport on an emulated long-fat pipe: 50 ms one way (100 ms RTT),
// 1 Gbit/s, tcp_wmem max 4 MiB on the hosts. One TCP stream is held to about
// 4 MiB per RTT (some 300 Mbit/s at most, less after the kernel's buffer
// overhead); eight streams of one channel must get at least three times the
// goodput of one. Drives the real binary: `wanlab up`, `wanlab exec ... wanlab
// perf server --one-off` and `... perf client --json`, `wanlab down`.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

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

std::string wanlab_bin() {
  const char* bin = std::getenv("WANLAB_BIN");
  BOOST_TEST_REQUIRE(bin != nullptr, "WANLAB_BIN is not set (run through ctest)");
  return bin;
}

// A child process whose stdout and stderr come back through a pipe.
class Child {
 public:
  explicit Child(const std::vector<std::string>& command) {
    int fds[2];
    BOOST_TEST_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    pid_ = ::fork();
    BOOST_TEST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      std::vector<char*> argv;
      for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
  }

  // Reads output until `part` appears or `limit` passes; true if it appeared.
  bool read_until(const std::string& part, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (output_.find(part) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || !read_some(static_cast<int>(left))) return false;
    }
    return true;
  }
  // Reads to EOF and reaps the process; returns its exit status (-1 on timeout).
  int finish(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return -1;
      if (!read_some(static_cast<int>(left))) break;
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  const std::string& output() const { return output_; }

 private:
  bool read_some(int timeout_ms) {
    pollfd entry{out_, POLLIN, 0};
    if (::poll(&entry, 1, timeout_ms) <= 0) return false;
    char buffer[4096];
    const auto n = ::read(out_, buffer, sizeof(buffer));
    if (n <= 0) return false;
    output_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
  pid_t pid_ = -1;
  int out_ = -1;
  std::string output_;
};

int wanlab(const std::vector<std::string>& args, std::string* output = nullptr) {
  std::vector<std::string> command{wanlab_bin()};
  command.insert(command.end(), args.begin(), args.end());
  Child child(command);
  const int status = child.finish(120s);
  if (output) *output = child.output();
  return status;
}

// Every number that follows `"key":` in `json`, in order.
std::vector<double> json_numbers(const std::string& json, const std::string& key) {
  std::vector<double> values;
  const std::string needle = "\"" + key + "\":";
  for (auto at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    values.push_back(std::strtod(json.c_str() + at + needle.size(), nullptr));
  }
  return values;
}

struct Testbed {
  Testbed() {
    file = std::filesystem::temp_directory_path() / (std::string(kTestbed) + ".toml");
    std::ofstream(file) << scenario();
    std::string output;
    wanlab({"down", kTestbed});  // a leftover from an interrupted run
    BOOST_TEST_REQUIRE(wanlab({"up", file.string(), "--quiet"}, &output) == 0, output);
  }
  ~Testbed() {
    std::string output;
    if (wanlab({"down", kTestbed}, &output) != 0) BOOST_TEST_MESSAGE("wanlab down: " << output);
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
  const auto bin = wanlab_bin();
  Child server({bin, "exec", "west-0", "--testbed", kTestbed, "--", bin, "perf", "server", "--one-off"});
  BOOST_TEST_REQUIRE(server.read_until("listening on", 10s), server.output());
  std::string json;
  const int status = wanlab({"exec", "east-0", "--testbed", kTestbed, "--", bin, "perf", "client", server_address, "-P",
                             std::to_string(streams), "-t", "10", "--json"},
                            &json);
  BOOST_TEST_REQUIRE(status == 0, json);
  BOOST_TEST(server.finish(10s) == 0, server.output());  // --one-off: the server exits after its client

  Run run;
  run.json = json;
  const auto goodput = json_numbers(json, "goodput_bps");
  BOOST_TEST_REQUIRE(!goodput.empty(), json);
  run.goodput_bps = goodput.front();
  const auto starts = json_numbers(json, "start");
  const auto ends = json_numbers(json, "end");
  // "bytes" also appears at the top, in "server" and per stream: the interval ones are the last.
  const auto bytes = json_numbers(json, "bytes");
  BOOST_TEST_REQUIRE(starts.size() == ends.size());
  BOOST_TEST_REQUIRE(bytes.size() >= starts.size());
  const auto interval_bytes =
      std::vector<double>(bytes.end() - static_cast<std::ptrdiff_t>(starts.size()), bytes.end());
  double steady_bytes = 0, steady_seconds = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (starts[i] < 3.0) continue;
    steady_bytes += interval_bytes[i];
    steady_seconds += ends[i] - starts[i];
  }
  BOOST_TEST_REQUIRE(steady_seconds > 4.0, json);
  run.steady_goodput_bps = 8 * steady_bytes / steady_seconds;
  return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(eight_streams_get_three_times_the_goodput_of_one_on_a_long_fat_pipe) {
  Testbed bed;
  std::string hosts;
  BOOST_TEST_REQUIRE(wanlab({"hosts", "--testbed", kTestbed, "--json"}, &hosts) == 0, hosts);
  // The west host's IPv4 address: the "ipv4" value in the object naming west-0.
  const auto west = hosts.find("\"west-0\"");
  BOOST_TEST_REQUIRE(west != std::string::npos, hosts);
  const auto object = hosts.rfind('{', west);
  const auto ipv4 = hosts.find("\"ipv4\"", object);
  const auto quote = hosts.find('"', hosts.find(':', ipv4) + 1);
  const auto address = hosts.substr(quote + 1, hosts.find('"', quote + 1) - quote - 1);

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
