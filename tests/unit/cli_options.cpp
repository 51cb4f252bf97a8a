// The CLI's argv parser (base/options.hpp, as cli/options.hpp uses it): options that are flags or take a
// value after '=' (`--verify`, `--verify=rate`), and verify's settings, each
// bad value a UsageError naming its option.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "options.hpp"

using wanlab::cli::Options;
using wanlab::cli::UsageError;

namespace {

Options parse(const std::vector<std::string>& args) {
  using Takes = wanlab::cli::OptionSpec::Takes;
  return Options(args, {{"verify-tolerance", Takes::value, "P%", ""},
                        {"verify-slack", Takes::value, "TIME", ""},
                        {"verify-attempts", Takes::value, "N", ""},
                        {"name", Takes::value, "NAME", ""},
                        {"quiet", Takes::nothing, "", ""},
                        {"verify", Takes::optional_value, "rtt|rate", ""}});
}

// The UsageError's message, "" if none was thrown.
template <typename Body>
std::string usage_error(Body body) {
  try {
    body();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_optional_value_comes_only_after_the_equals_sign) {
  const auto bare = parse({"--verify", "scenarios/ci.toml", "--", "true"});
  BOOST_TEST(bare.flag("verify"));
  BOOST_TEST(!bare.get("verify").has_value());
  BOOST_TEST(bare.positionals() == std::vector<std::string>{"scenarios/ci.toml"});
  BOOST_TEST(bare.rest() == std::vector<std::string>{"true"});

  const auto valued = parse({"scenarios/ci.toml", "--verify=rate"});
  BOOST_TEST(valued.flag("verify"));
  BOOST_TEST(valued.get("verify").value() == "rate");

  // The next word is never taken as the value.
  const auto next = parse({"--verify", "rate"});
  BOOST_TEST(!next.get("verify").has_value());
  BOOST_TEST(next.positionals() == std::vector<std::string>{"rate"});

  const auto none = parse({"scenarios/ci.toml"});
  BOOST_TEST(!none.flag("verify"));
  // Flags still refuse values.
  BOOST_TEST(usage_error([] { parse({"--quiet=yes"}); }) == "--quiet takes no value");
  BOOST_TEST(usage_error([] { parse({"--verify-tolerance"}); }) == "--verify-tolerance needs a value");
}

BOOST_AUTO_TEST_CASE(verify_settings_are_checked_and_name_their_option) {
  const auto defaults = wanlab::cli::verify_options(parse({}), "verify-tolerance", "verify-slack", "verify-attempts");
  BOOST_TEST(defaults.tolerance == 0.10);
  BOOST_TEST(defaults.slack_ns == 2'000'000u);
  BOOST_TEST(!defaults.goodput);
  BOOST_TEST(defaults.attempts == 3);

  const auto set = wanlab::cli::verify_options(
      parse({"--verify-tolerance", "25%", "--verify-slack=500us", "--verify-attempts", "1"}), "verify-tolerance",
      "verify-slack", "verify-attempts");
  BOOST_TEST(set.tolerance == 0.25);
  BOOST_TEST(set.slack_ns == 500'000u);
  BOOST_TEST(set.attempts == 1);
  for (const char* bad : {"0", "11", "2.5", "three"}) {
    const std::string attempts = usage_error([bad] {
      wanlab::cli::verify_options(parse({"--verify-attempts", bad}), "verify-tolerance", "verify-slack",
                                  "verify-attempts");
    });
    BOOST_TEST(attempts.starts_with("--verify-attempts: expected a whole number from 1 to 10"), attempts);
  }

  const std::string tolerance = usage_error([] {
    wanlab::cli::verify_options(parse({"--verify-tolerance", "10"}), "verify-tolerance", "verify-slack",
                                "verify-attempts");
  });
  BOOST_TEST(tolerance.starts_with("--verify-tolerance: "), tolerance);
  BOOST_TEST(tolerance.find("%") != std::string::npos, tolerance);
  const std::string slack = usage_error([] {
    wanlab::cli::verify_options(parse({"--verify-slack", "1abc"}), "verify-tolerance", "verify-slack",
                                "verify-attempts");
  });
  BOOST_TEST(slack.starts_with("--verify-slack: "), slack);
  const std::string whole = usage_error([] {
    wanlab::cli::verify_options(parse({"--verify-tolerance=100%"}), "verify-tolerance", "verify-slack",
                                "verify-attempts");
  });
  BOOST_TEST(whole.starts_with("--verify-tolerance: "), whole);
}
