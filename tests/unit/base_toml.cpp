// base::TomlReader, the skeleton every TOML reader shares: positions
// (file:line:column) of syntax errors, unknown keys and bad values; the known
// key an unknown one is closest to; a reader's own error type.
#include <boost/test/unit_test.hpp>

#include <array>
#include <chrono>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "wanlab/base/suggest.hpp"
#include "wanlab/base/toml.hpp"

using wanlab::base::TomlReader;
using namespace std::string_view_literals;

namespace {

class MyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A reader that throws its own error, as the scenario and experiment parsers do.
class Reader : public TomlReader {
 public:
  using TomlReader::TomlReader;

 protected:
  [[noreturn]] void raise(const std::string& message) const override { throw MyError(message); }
};

constexpr std::array kKeys{"delay"sv, "rate"sv, "loss"sv};

template <typename Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const MyError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_unknown_key_near_a_known_one_says_did_you_mean) {
  const Reader reader("t.toml");
  const toml::table root = reader.parse_toml("rate = \"1gbit\"\n\n  dealy = \"5ms\"\n");
  BOOST_TEST(error_of([&] { reader.check_known_keys(root, kKeys, "[defaults]"); }) ==
             R"(t.toml:3:3: unknown key "dealy" in [defaults]; did you mean "delay"?)");
  // Nothing close: no guess.
  const toml::table far = reader.parse_toml("mtu = 9000\n");
  BOOST_TEST(error_of([&] { reader.check_known_keys(far, kKeys, "[defaults]"); }) ==
             R"(t.toml:1:1: unknown key "mtu" in [defaults])");
  // The second list counts as known, and is suggested from too.
  constexpr std::array kMore{"flow_rate"sv};
  const toml::table more = reader.parse_toml("flow-rate = 1\n");
  BOOST_TEST(error_of([&] { reader.check_known_keys(more, kKeys, "[x]", kMore); }) ==
             R"(t.toml:1:1: unknown key "flow-rate" in [x]; did you mean "flow_rate"?)");
  BOOST_TEST(error_of([&] { reader.check_known_keys(root, kKeys, "[x]", std::array{"dealy"sv}); }) == "(no error)");
}

BOOST_AUTO_TEST_CASE(the_first_unknown_key_in_the_file_is_named) {
  const Reader reader("t.toml");
  // toml++ keeps keys sorted; the error must still be the first one written.
  const toml::table root = reader.parse_toml("zz = 1\naa = 2\n");
  BOOST_TEST(error_of([&] { reader.check_known_keys(root, kKeys, "the top level"); }) ==
             R"(t.toml:1:1: unknown key "zz" in the top level)");
}

BOOST_AUTO_TEST_CASE(positions_are_line_and_column_of_the_value) {
  const Reader reader("dir/e.toml");
  const toml::table root = reader.parse_toml("[model]\nlayers = 4\nname =   42\nlist = 5\n");
  const toml::table* model = reader.optional_table(root, "model");
  BOOST_REQUIRE(model != nullptr);
  BOOST_TEST(error_of([&] { reader.expect_string(*model->get("name"), "model.name", "a name"); }) ==
             "dir/e.toml:3:10: model.name: expected a name, got 42");
  BOOST_TEST(error_of([&] { reader.fail(*model->get("layers"), "model.layers", "too many"); }) ==
             "dir/e.toml:2:10: model.layers: too many");
  BOOST_TEST(error_of([&] { reader.array_of_tables(*model, "list"); }) ==
             "dir/e.toml:4:8: list: expected an array of tables ([[list]]), got 5");
  BOOST_TEST(error_of([&] { reader.optional_table(*model, "layers"); }) ==
             "dir/e.toml:2:10: layers: expected a table ([layers]), got 4");
  BOOST_TEST(error_of([&] { reader.fail_at_start("missing required key \"name\""); }) ==
             "dir/e.toml:1:1: missing required key \"name\"");
}

// "a\u0000b" is a std::string whose c_str() is "a": the file opened would be another.
BOOST_AUTO_TEST_CASE(file_names_are_strings_without_control_characters) {
  const Reader reader("t.toml");
  const toml::table root =
      reader.parse_toml("a = \"x\\u0000y\"\nb = \"\"\nc = \"x\\u001b[2J\"\nd = 3\ne = \"ok.csv\"\n");
  auto error = [&](std::string_view key) {
    return error_of([&] { reader.expect_file_name(*root.get(key), key, "a file name"); });
  };
  BOOST_TEST(error("a") == R"(t.toml:1:5: a: a file name with a control character: "x\x00y")");
  BOOST_TEST(error("b") == "t.toml:2:5: b: must not be empty");
  BOOST_TEST(error("c") == R"(t.toml:3:5: c: a file name with a control character: "x\x1b[2J")");
  BOOST_TEST(error("d") == "t.toml:4:5: d: expected a file name, got 3");
  BOOST_TEST(reader.expect_file_name(*root.get("e"), "e", "a file name") == "ok.csv");
}

BOOST_AUTO_TEST_CASE(syntax_errors_are_positioned_and_one_line) {
  const Reader reader("t.toml");
  const std::string message = error_of([&] { reader.parse_toml("a = 1\nb = = 2\n"); });
  BOOST_TEST(message.rfind("t.toml:2:", 0) == 0, message);
  BOOST_TEST(message.find('\n') == std::string::npos, message);
  // The default reader throws std::runtime_error.
  const TomlReader plain("p.toml");
  BOOST_CHECK_THROW(plain.parse_toml("x = \n"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(suggestions_follow_edit_distance) {
  BOOST_TEST(wanlab::base::edit_distance("dealy", "delay") == 1u);  // a transposition is one step
  BOOST_TEST(wanlab::base::edit_distance("", "abc") == 3u);
  BOOST_TEST(wanlab::base::closest_name("ppp", std::array{"pp"sv, "dp"sv}) == "pp");
  BOOST_TEST(wanlab::base::closest_name("xyz", std::array{"pp"sv, "dp"sv}).empty());
  BOOST_TEST(wanlab::base::did_you_mean("wset", std::array{"west"sv, "east"sv}) == "; did you mean \"west\"?");
  BOOST_TEST(wanlab::base::did_you_mean("north", std::array{"west"sv}, "; DCs are west") == "; DCs are west");
}

namespace {

// The whole (n+1) x (m+1) table, as the distance was first written: what the
// rows and the limit must agree with.
std::size_t full_table_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_distance_in_rows_agrees_with_the_whole_table_and_stops_past_its_limit) {
  std::mt19937 random(29);
  auto word = [&] {
    std::string text(random() % 9, ' ');
    for (char& c : text) c = "abcd"[random() % 4];  // few letters: many near misses and transpositions
    return text;
  };
  for (int i = 0; i < 3000; ++i) {
    const std::string a = word(), b = word();
    const std::size_t full = full_table_distance(a, b);
    BOOST_TEST_REQUIRE(wanlab::base::edit_distance(a, b) == full, a << " " << b);
    for (std::size_t limit = 0; limit <= 4; ++limit)
      BOOST_TEST_REQUIRE(wanlab::base::edit_distance(a, b, limit) == std::min(full, limit + 1), a << " " << b);
  }
}

// A 4 MiB unknown name once took 5 s and 370 MB (a whole table per candidate);
// a 6 MiB scenario key ran past 25 s at 860 MB. The bound is loose for a
// loaded 2-core machine: the fix takes milliseconds.
BOOST_AUTO_TEST_CASE(a_long_unknown_name_costs_neither_time_nor_memory) {
  const std::string huge(4u << 20, 'x');
  auto start = std::chrono::steady_clock::now();
  BOOST_TEST(wanlab::base::edit_distance(huge, "delay") == huge.size());  // rows of the shorter: 6 entries
  BOOST_TEST(wanlab::base::edit_distance(huge, "delay", 2) == 3u);        // the lengths differ by more than 2
  BOOST_TEST(wanlab::base::closest_name(huge, kKeys).empty());
  BOOST_TEST(seconds_since(start) < 1.0);
  // Past kMaxSuggestedName no suggestion, however close.
  const std::string long_delay = std::string(wanlab::base::kMaxSuggestedName, 'd') + "elay";
  BOOST_TEST(wanlab::base::closest_name(long_delay, std::array{std::string_view(long_delay).substr(1)}).empty());
  BOOST_TEST(wanlab::base::closest_name(long_delay.substr(5), std::array{std::string_view(long_delay).substr(4)}) ==
             long_delay.substr(4));

  const Reader reader("t.toml");
  const toml::table root = reader.parse_toml(huge + " = 1\n");
  start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] { reader.check_known_keys(root, kKeys, "[defaults]"); });
  BOOST_TEST(seconds_since(start) < 1.0);
  BOOST_TEST(message == "t.toml:1:1: unknown key \"" + std::string(64, 'x') + "...\" in [defaults]");
}
