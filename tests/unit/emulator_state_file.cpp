// state.toml, a testbed's state between its processes: read strictly, so a
// missing or malformed field is one line naming the file and the field, never
// a default that would send `down` to the wrong namespace or process.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "support/scratch.hpp"
#include "wanlab/base/one_line.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace em = wanlab::emulator;
namespace fs = std::filesystem;

namespace {

const std::string kTop = R"(name = "ut"
scenario = "/run/wanlab/ut/scenario.toml"
release = "nfqueue"
release_reason = "asked for with --release nfqueue"
daemon_pid = 4242
created_unix = 1700000000
created_mono_ns = 123456789
kind = "namespaces"
netns = "wanlab-ut.core"
queue_num = 7
dev = ""
created_clsact = false
created_fq = false
dcs = ["east", "west"]
sysctls = []
)";

const std::string kHosts = R"(
[[hosts]]
name = "east-0"
dc = "east"
dc_index = 0
index = 0
netns = "wanlab-ut.east-0"
ipv4 = "10.77.0.1"
ipv6 = "fd77::1"
core_ifname = "wanlabh0"

[[hosts]]
name = "west-0"
dc = "west"
dc_index = 1
index = 0
netns = "wanlab-ut.west-0"
ipv4 = "10.77.1.1"
ipv6 = "fd77:0:0:1::1"
core_ifname = "wanlabh1"
)";

using wanlab::test::Scratch;

// `text` without the line that starts with `key = `.
std::string without(std::string text, const std::string& key) {
  const auto at = text.find("\n" + key + " = ");
  const auto from = at == std::string::npos ? 0 : at + 1;
  BOOST_REQUIRE(at != std::string::npos || text.starts_with(key + " = "));
  return text.erase(from, text.find('\n', from) + 1 - from);
}

// `text` with the first "key = ..." line's value replaced.
std::string with(std::string text, const std::string& key, const std::string& value) {
  const auto at = text.starts_with(key + " = ") ? 0 : text.find("\n" + key + " = ") + 1;
  BOOST_REQUIRE(at != std::string::npos);
  const auto value_at = at + key.size() + 3;
  return text.replace(value_at, text.find('\n', value_at) - value_at, value);
}

// The error reading `text` as testbed "ut"'s state gives, "" if none.
std::string error_reading(const Scratch& scratch, const std::string& text) {
  try {
    em::read_state_file(scratch.file("state.toml", text), "ut");
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "";
}

// A field given `value`, and what reading it must say about `field`.
struct Bad {
  std::string key, value, field, says;
};

void check_error(const Scratch& scratch, const std::string& text, const std::string& field, const std::string& says) {
  const std::string message = error_reading(scratch, text);
  BOOST_TEST_CONTEXT(field << ": " << message) {
    BOOST_TEST(message.starts_with((scratch.dir / "state.toml").string() + ":"));
    BOOST_TEST(message.find(field + ": ") != std::string::npos);
    BOOST_TEST(message.find(says) != std::string::npos);
    BOOST_TEST(wanlab::base::one_line_problem(message).empty());
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_good_state_file_is_read) {
  Scratch scratch("state-file");
  const em::TestbedState state = em::read_state_file(scratch.file("state.toml", kTop + kHosts), "ut");
  BOOST_TEST(state.name == "ut");
  BOOST_TEST((state.release == em::ReleasePath::nfqueue));
  BOOST_TEST(state.daemon_pid == 4242);
  BOOST_TEST(state.queue_num == 7);
  BOOST_TEST(state.created_mono_ns == 123456789u);
  BOOST_TEST(state.dcs.size() == 2u);
  BOOST_REQUIRE(state.hosts.size() == 2u);
  BOOST_TEST(state.hosts[1].name == "west-0");
  BOOST_TEST(state.hosts[1].ipv4 == 0x0a4d0101u);
}

BOOST_AUTO_TEST_CASE(every_missing_field_is_named) {
  Scratch scratch("state-file");
  for (const std::string key :
       {"name", "scenario", "release", "release_reason", "daemon_pid", "created_unix", "created_mono_ns", "kind",
        "netns", "queue_num", "dev", "created_clsact", "created_fq", "dcs", "sysctls"})
    check_error(scratch, without(kTop, key) + kHosts, key, "missing key");
  check_error(scratch, kTop, "hosts", "missing key");
  for (const std::string key : {"dc", "dc_index", "index", "netns", "ipv4", "ipv6", "core_ifname", "name"})
    check_error(scratch, kTop + without(kHosts, key), "hosts[0]." + key, "missing key");
}

BOOST_AUTO_TEST_CASE(a_malformed_field_is_named) {
  Scratch scratch("state-file");
  const Bad top[] = {
      {"daemon_pid", "\"4242\"", "daemon_pid", "expected an integer"},
      {"daemon_pid", "-1", "daemon_pid", "expected an integer from 0"},
      {"queue_num", "65536", "queue_num", "expected an integer from 0 to 65535"},
      {"kind", "\"bridge\"", "kind", "unexpected value \"bridge\""},
      {"release", "\"tbf\"", "release", "unexpected value \"tbf\""},
      {"netns", "\"wanlab-other.core\"", "netns", "expected \"wanlab-ut.core\""},
      {"name", "\"other\"", "name", "expected \"ut\""},
      {"created_fq", "1", "created_fq", "expected true or false"},
      {"dcs", "[\"east\", \"w e s t\"]", "dcs[1]", "not a DC name"},
      {"dev", "\"eth0\"", "dev", "attached to no interface"},
      {"sysctls", "[{ path = \"/proc/sys/net/ipv4/ip_forward\", before = \"0\" }]", "sysctls",
       "only an attached testbed changes sysctls"},
  };
  for (const auto& c : top) check_error(scratch, with(kTop, c.key, c.value) + kHosts, c.field, c.says);
  const Bad host[] = {
      {"ipv4", "\"10.77.0\"", "hosts[0].ipv4", "not an IPv4 address"},
      {"ipv6", "\"fd77::1::2\"", "hosts[0].ipv6", "not an IPv6 address"},
      {"dc_index", "2", "hosts[0].dc_index", "expected an integer from 0 to 1"},
      {"netns", "\"wanlab-other.east-0\"", "hosts[0].netns", "expected \"wanlab-ut.east-0\""},
      {"core_ifname", "\"eth0\"", "hosts[0].core_ifname", "expected \"wanlabh0\""},
  };
  for (const auto& c : host) check_error(scratch, kTop + with(kHosts.substr(1), c.key, c.value), c.field, c.says);
  // base::TomlReader's wording, as in scenario and experiment files, with a guess when one is close.
  const std::string unknown = error_reading(scratch, kTop + "colour = \"blue\"\n" + kHosts);
  BOOST_TEST(unknown.find(": unknown key \"colour\" in state") != std::string::npos, unknown);
  const std::string close = error_reading(scratch, kTop + "nmae = \"x\"\n" + kHosts);
  BOOST_TEST(close.find("unknown key \"nmae\" in state; did you mean \"name\"?") != std::string::npos, close);
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_toml_is_one_line) {
  Scratch scratch("state-file");
  for (const std::string& text : {std::string("name = \"ut\n"), std::string("[[hosts]\n"), std::string("\x01\x02\n")}) {
    const std::string message = error_reading(scratch, text);
    BOOST_TEST(message.starts_with((scratch.dir / "state.toml").string() + ":"), message);
    BOOST_TEST(wanlab::base::one_line_problem(message).empty(), message);
  }
  check_error(scratch, "", "name", "missing key");
}
