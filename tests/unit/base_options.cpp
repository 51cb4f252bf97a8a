// The table parser of command lines (base/options.hpp) that `wanlab` and the
// benchmarks share: every mistake a UsageError naming the option.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "wanlab/base/options.hpp"

namespace b = wanlab::base;
using Takes = b::OptionSpec::Takes;

namespace {

const b::OptionSpecs kSpecs = {{"seconds", Takes::value, "N", "how long"},
                               {"rates", Takes::value, "LIST", "rates, comma-separated"},
                               {"quick", Takes::nothing, "", "fewer points"},
                               {"verify", Takes::optional_value, "rtt|rate", "measure after"},
                               {"markdown", Takes::value, "FILE", "write the table there"}};

b::Options parse(const std::vector<std::string>& args) { return b::Options(args, kSpecs); }

// The UsageError's message, "" if none was thrown.
template <typename Body>
std::string usage_error(Body body) {
  try {
    body();
  } catch (const b::UsageError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(values_flags_positionals_and_the_rest) {
  const auto options = parse({"--seconds", "30", "--rates=1gbit,5gbit", "--quick", "file", "--", "--not-an-option"});
  BOOST_TEST(options.get("seconds").value() == "30");
  BOOST_TEST(options.get("rates").value() == "1gbit,5gbit");
  BOOST_TEST(options.flag("quick"));
  BOOST_TEST(!options.flag("verify"));
  BOOST_TEST(!options.get("markdown").has_value());
  BOOST_TEST(options.positionals() == std::vector<std::string>{"file"});
  BOOST_TEST(options.rest() == std::vector<std::string>{"--not-an-option"});
  BOOST_TEST(options.ordered().size() == 2u);
  BOOST_TEST(options.ordered()[0].first == "seconds");
}

BOOST_AUTO_TEST_CASE(every_mistake_names_the_option) {
  BOOST_TEST(usage_error([] { parse({"--bogus", "1"}); }) == "unknown option \"--bogus\"");
  BOOST_TEST(usage_error([] { parse({"-x"}); }) == "unknown option \"-x\"");
  BOOST_TEST(usage_error([] { parse({"--seconds"}); }) == "--seconds needs a value");
  BOOST_TEST(usage_error([] { parse({"--quick=yes"}); }) == "--quick takes no value");
  BOOST_CHECK_THROW(parse({"--seconds", "1", "--help"}), b::HelpRequested);
  BOOST_CHECK_THROW(parse({"-h"}), b::HelpRequested);
}

BOOST_AUTO_TEST_CASE(numbers_are_read_strictly_and_name_their_option) {
  BOOST_TEST(parse({"--seconds", "30"}).integer<int>("seconds", 20, 100).value() == 30);
  BOOST_TEST(parse({"--seconds", "2.5"}).decimal("seconds", 1, 10).value() == 2.5);
  BOOST_TEST(!parse({}).decimal("seconds", 1, 10).has_value());
  const std::string below = usage_error([] { parse({"--seconds", "5"}).integer<int>("seconds", 20, 100); });
  BOOST_TEST(below.starts_with("--seconds: "), below);
  const std::string text = usage_error([] { parse({"--seconds", "1abc"}).decimal("seconds", 1, 10); });
  BOOST_TEST(text.starts_with("--seconds: "), text);
}

BOOST_AUTO_TEST_CASE(a_parser_s_invalid_argument_becomes_a_usage_error) {
  const auto options = parse({"--rates", "fast"});
  const std::string message = usage_error([&] {
    b::parsed_option(options, "rates", [](const std::string& text) -> int {
      throw std::invalid_argument("expected a rate, got \"" + text + "\"");
    });
  });
  BOOST_TEST(message == "--rates: expected a rate, got \"fast\"");
  BOOST_TEST(b::parsed_option(options, "rates", [](const std::string& text) { return text.size(); }).value() == 4u);
  BOOST_TEST(!b::parsed_option(options, "seconds", [](const std::string& text) { return text; }).has_value());
}

BOOST_AUTO_TEST_CASE(an_output_file_is_checked_before_the_work) {
  const auto dir = std::filesystem::temp_directory_path() / "wanlab-base-options";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "table.md").string();
  BOOST_TEST(b::output_file_option(parse({"--markdown", good}), "markdown").value() == good);
  BOOST_TEST(!b::output_file_option(parse({}), "markdown").has_value());
  const std::string missing_dir = usage_error([&] {
    b::output_file_option(parse({"--markdown", (dir / "no/such/dir/x.md").string()}), "markdown");
  });
  BOOST_TEST(missing_dir.starts_with("--markdown: "), missing_dir);
  BOOST_TEST(usage_error([] { b::output_file_option(parse({"--markdown="}), "markdown"); }) ==
             "--markdown: expected a file");
  const std::string a_directory = usage_error([&] {
    b::output_file_option(parse({"--markdown", dir.string()}), "markdown");
  });
  BOOST_TEST(a_directory.starts_with("--markdown: "), a_directory);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(usage_and_help_are_made_from_the_table) {
  BOOST_TEST(b::usage_of(kSpecs[0]) == "[--seconds N]");
  BOOST_TEST(b::usage_of(kSpecs[2]) == "[--quick]");
  BOOST_TEST(b::usage_of(kSpecs[3]) == "[--verify[=rtt|rate]]");
  const std::string help = b::options_help({kSpecs[0], kSpecs[2]});
  BOOST_TEST(help == "  --seconds N" + std::string(23, ' ') + " how long\n  --quick" + std::string(27, ' ') +
                         " fewer points\n");
  // A name too long for the column: the help on a line of its own.
  const std::string long_help =
      b::options_help({{"a-very-long-option-name", Takes::value, "SOMETHING-LONG", "what it does"}});
  BOOST_TEST(long_help == "  --a-very-long-option-name SOMETHING-LONG\n" + std::string(37, ' ') + "what it does\n");
}
