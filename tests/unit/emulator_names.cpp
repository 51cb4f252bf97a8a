// The one testbed name rule: names become paths under /run/wanlab,
// namespace names and process matches, so whatever breaks the rule is refused
// before it becomes any of them.
#include <boost/test/unit_test.hpp>

#include <string>

#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/testbed.hpp"

namespace em = wanlab::emulator;

namespace {

// Names from the hostile-input reproductions, and their neighbours.
const char* const kHostile[] = {
    "",      ".",  "..", "../../tmp/v",   "../../tmp/y", "a.x",  "a/b", "/",  "a ", "a UP;$(id)",
    "$(id)", "-a", "A",  "abcdefghijklm", "a\n",         "a\\b", "ä",   "a*", "a+", "wanlab-a.core"};

}  // namespace

BOOST_AUTO_TEST_CASE(good_names_pass) {
  for (const char* name : {"a", "two-dc", "three-dc", "abcdefghijkl", "0", "a-", "run-123456"}) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST(em::is_valid_testbed_name(name));
      BOOST_CHECK_NO_THROW(em::check_testbed_name(name, "--name"));
    }
  }
}

BOOST_AUTO_TEST_CASE(hostile_names_are_refused_with_where_they_came_from) {
  for (const char* name : kHostile) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST(!em::is_valid_testbed_name(name));
      try {
        em::check_testbed_name(name, "--name");
        BOOST_FAIL("accepted");
      } catch (const em::InvalidName& error) {
        const std::string message = error.what();
        BOOST_TEST(message.starts_with("--name: testbed name \""));
        BOOST_TEST(message.find("expected 1 to 12 characters from [a-z0-9-]") != std::string::npos);
        BOOST_TEST(message.find('\n') == std::string::npos);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_huge_name_gives_a_short_message) {
  const std::string huge(50'000'000, 'n');
  try {
    em::check_testbed_name(huge, "--name");
    BOOST_FAIL("accepted");
  } catch (const em::InvalidName& error) {
    BOOST_TEST(std::string(error.what()).size() < 200u);
  }
}

// Every path and namespace builder checks the name itself, so a caller that
// forgot to cannot make a path outside the run root.
BOOST_AUTO_TEST_CASE(paths_and_namespaces_are_built_only_from_good_names) {
  for (const char* name : kHostile) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_CHECK_THROW(em::run_dir(name), em::InvalidName);
      BOOST_CHECK_THROW(em::bpffs_dir(name), em::InvalidName);
      BOOST_CHECK_THROW(em::core_netns(name), em::InvalidName);
      BOOST_CHECK_THROW(em::host_netns(name, "east-0"), em::InvalidName);
      BOOST_CHECK_THROW(em::testbed_down(name), em::InvalidName);
      BOOST_CHECK_THROW(em::load_state(name), em::InvalidName);
    }
  }
  BOOST_TEST(em::run_dir("two-dc") == "/run/wanlab/two-dc");
  BOOST_TEST(em::host_netns("two-dc", "east-0") == "wanlab-two-dc.east-0");
  BOOST_CHECK_THROW(em::host_netns("two-dc", "../x"), em::InvalidName);
}

BOOST_AUTO_TEST_CASE(host_dc_and_interface_names) {
  BOOST_TEST(em::is_valid_host_name("east-0"));
  BOOST_TEST(em::is_valid_host_name("dc12-253"));
  for (const char* bad : {"east", "east-", "-0", "east-01", "east-1000", "East-0", "east.x-0", "east-0/"})
    BOOST_TEST(!em::is_valid_host_name(bad), bad);
  BOOST_TEST(em::is_valid_dc_name("east"));
  BOOST_TEST(!em::is_valid_dc_name("9east"));
  BOOST_TEST(em::is_valid_interface_name("h1-eth0"));
  BOOST_TEST(em::is_valid_interface_name("veth@if3"));
  for (const char* bad : {"", "eth+", "a b", "0123456789abcdef", "eth0;id"})
    BOOST_TEST(!em::is_valid_interface_name(bad), bad);
}
