// [egress]: the price of WAN bytes per DC pair, for the planner's cost per
// iteration ("file:line:column: egress.field: ..." like every field).
#include "experiment/egress_config.hpp"

#include <array>
#include <map>
#include <optional>
#include <string_view>

#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/base/toml.hpp"

namespace wanlab::harness::detail {
namespace {

using namespace std::string_view_literals;

constexpr std::array kEgressKeys{"price_per_gb"sv, "pairs"sv};
constexpr double kMaxPricePerGb = 1000;

// "a-b" -> {"a", "b"} sorted: DC names have no '-' (emulator/names.hpp).
std::optional<std::pair<std::string, std::string>> split_pair(std::string_view key) {
  const auto dash = key.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::string a(key.substr(0, dash));
  std::string b(key.substr(dash + 1));
  if (!emulator::is_valid_dc_name(a) || !emulator::is_valid_dc_name(b) || a == b) return std::nullopt;
  return a < b ? std::pair{a, b} : std::pair{b, a};
}

// A price may be 0 (traffic inside one provider's region can be free).
double read_price(FieldReader& reader, const toml::node& node, const std::string& field) {
  std::optional<double> price;
  if (const auto* floating = node.as_floating_point()) price = floating->get();
  if (const auto* integer = node.as_integer()) price = static_cast<double>(integer->get());
  if (!price || !(*price >= 0) || *price > kMaxPricePerGb) {
    reader.fail(node.source(), fmt::format("{}: expected a price in USD per GB from 0 to {:g}, got {}", field,
                                           kMaxPricePerGb, base::describe_value(node)));
  }
  reader.remember(field, node);
  return *price;
}

// A price covers both directions: "a-b" and "b-a" both priced is a mistake,
// named at the later of the two in the file (toml++ keeps keys sorted).
void check_one_price_per_pair(FieldReader& reader, const toml::key& key, const toml::key*& priced) {
  if (priced == nullptr) {
    priced = &key;
    return;
  }
  const auto [first, second] =
      base::TomlReader::comes_before(*priced, key) ? std::pair{priced, &key} : std::pair{&key, priced};
  reader.fail(second->source(), fmt::format("egress.pairs.{}: {} is priced already, at {}; one price covers both "
                                            "directions",
                                            second->str(), first->str(), reader.where(first->source())));
}

void read_pairs(FieldReader& reader, const toml::table& pairs, Egress& egress) {
  std::map<std::pair<std::string, std::string>, const toml::key*> priced;
  for (auto&& [key, node] : pairs) {
    const std::string field = fmt::format("egress.pairs.{}", key.str());
    const auto pair = split_pair(key.str());
    if (!pair) {
      reader.fail(key.source(),
                  fmt::format(R"(egress.pairs: expected a key "dc-dc" naming two DCs like "east-west", got {})",
                              base::quoted(key.str())));
    }
    check_one_price_per_pair(reader, key, priced[*pair]);
    egress.pairs[*pair] = read_price(reader, node, field);
  }
}

}  // namespace

void read_egress(FieldReader& reader, const toml::table& root) {
  const toml::table* section = reader.optional_table(root, "egress");
  if (section == nullptr) return;
  reader.check_known_keys(*section, kEgressKeys, "[egress]");
  reader.remember("egress", *section);
  Egress& egress = reader.experiment().egress;
  if (const toml::node* price = section->get("price_per_gb"))
    egress.price_per_gb = read_price(reader, *price, "egress.price_per_gb");
  if (const toml::table* pairs = reader.optional_table(*section, "pairs")) read_pairs(reader, *pairs, egress);
}

void check_egress_dcs(const Experiment& experiment, const emulator::Scenario& scenario) {
  for (const auto& [pair, price] : experiment.egress.pairs) {
    for (const std::string& dc : {pair.first, pair.second}) {
      if (scenario.dc_index(dc) >= 0) continue;
      const std::string key = pair.first + "-" + pair.second;
      const std::string field = "egress.pairs." + key;
      std::string where = experiment.where(field);
      if (where == experiment.path) where = experiment.where("egress.pairs." + pair.second + "-" + pair.first);
      throw ExperimentError(
          fmt::format("{}: {}: no DC {} in testbed {}", where, field, base::quoted(dc), scenario.name));
    }
  }
}

}  // namespace wanlab::harness::detail
