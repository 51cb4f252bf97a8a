// Scenario files: TOML -> Scenario, with every error pointing at file:line:column.
#include "wanlab/emulator/input.hpp"
#include "scenario_reader.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/scenario_toml.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/base/parse.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "wanlab/emulator/units.hpp"

namespace wanlab::emulator {
namespace {

using namespace std::string_view_literals;
using base::describe_value;

constexpr std::array kTopKeys{"name"sv, "seed"sv, "network"sv, "defaults"sv, "intra_dc"sv,
                              "host"sv, "dc"sv,   "link"sv,    "event"sv};
constexpr std::array kNetworkKeys{"pool"sv};
constexpr std::array kHostKeys{"tcp_congestion"sv, "tcp_wmem_max"sv, "tcp_rmem_max"sv, "tcp_slow_start_after_idle"sv};
constexpr std::array kDcKeys{"name"sv, "hosts"sv, "machines"sv, "gateway"sv};
constexpr std::array kLinkTableKeys{"between"sv, "from"sv, "to"sv, "schedule"sv};
constexpr std::array kDefaultsKeys{"schedule"sv};

constexpr std::int64_t kMaxHosts = 254;

std::string join(const std::vector<Dc>& dcs) {
  std::string names;
  for (const Dc& dc : dcs) names += (names.empty() ? "" : ", ") + dc.name;
  return names;
}

// Walks one document; every error goes through fail() with a position.
class Parser : detail::ScenarioReader {
 public:
  Parser(std::string path, ScheduleFiles files) : ScenarioReader(std::move(path)), files_(files) {}

  Scenario parse(std::string_view text) { return parse(parse_toml(text), std::string(text)); }

  Scenario parse(const toml::table& root, std::string source) {
    scenario_.path = path();
    scenario_.source = std::move(source);
    check_known_keys(root, kTopKeys, "the top level");
    read_name(root);
    read_seed(root);
    read_dcs(root);
    read_network(root);
    read_defaults(root);
    read_link_table(root, "intra_dc", scenario_.intra_dc);
    check_machines_fit(root);
    read_host(root);
    read_links(root);
    read_events(root);
    check_every_pair_has_delay();
    check_scheduled_pairs_send();
    return std::move(scenario_);
  }

 private:
  void read_name(const toml::table& root) {
    const toml::node* node = root.get("name");
    if (node == nullptr) fail_at_start(R"(missing required key "name" (e.g. name = "three-dc"))");
    const std::string& name = expect_string(*node, "name", R"(a name like "three-dc")");
    if (!is_valid_testbed_name(name)) {
      fail(node->source(), fmt::format("name: expected {}, got {}", kTestbedNameRule, base::quoted(name)));
    }
    scenario_.name = name;
  }

  void read_seed(const toml::table& root) {
    const toml::node* node = root.get("seed");
    if (node == nullptr) return;
    const auto* seed = node->as_integer();
    if (seed == nullptr || seed->get() < 0) {
      fail(node->source(), fmt::format("seed: expected an integer >= 0, got {}", describe_value(*node)));
    }
    scenario_.seed = static_cast<std::uint64_t>(seed->get());
  }

  void read_network(const toml::table& root) {
    const toml::table* network = optional_table(root, "network");
    if (network == nullptr) return;
    check_known_keys(*network, kNetworkKeys, "[network]");
    const toml::node* pool = network->get("pool");
    if (pool == nullptr) return;
    scenario_.pool =
        parse_string(*pool, "network.pool", R"(an IPv4 prefix like "10.77.0.0/16")", detail::parse_ipv4_prefix);
    const std::string_view unusable = detail::unusable_range(scenario_.pool);
    if (!unusable.empty()) {
      fail(pool->source(), fmt::format(R"(network.pool: {} overlaps {}; no emulation would apply, )"
                                       R"(use a private range like "10.77.0.0/16")",
                                       expect_string(*pool, "network.pool", ""), unusable));
    }
    const int longest = detail::longest_pool_prefix(scenario_.dcs.size());
    if (scenario_.pool.len > longest) {
      fail(pool->source(), fmt::format("network.pool: /{} is too small for {} DCs (each DC takes a /24); use a "
                                       "/{} or shorter prefix",
                                       scenario_.pool.len, scenario_.dcs.size(), longest));
    }
  }

  void read_host(const toml::table& root) {
    const toml::table* host = optional_table(root, "host");
    if (host == nullptr) return;
    check_known_keys(*host, kHostKeys, "[host]");
    if (const toml::node* node = host->get("tcp_congestion")) {
      const std::string& algorithm = expect_string(*node, "host.tcp_congestion", R"("cubic" or "bbr")");
      if (algorithm != "cubic" && algorithm != "bbr") {
        fail(node->source(),
             fmt::format(R"(host.tcp_congestion: expected "cubic" or "bbr", got {})", base::quoted(algorithm)));
      }
      scenario_.host.tcp_congestion = algorithm;
    }
    scenario_.host.tcp_wmem_max = read_buffer_size(*host, "tcp_wmem_max");
    scenario_.host.tcp_rmem_max = read_buffer_size(*host, "tcp_rmem_max");
    if (const toml::node* node = host->get("tcp_slow_start_after_idle")) {
      const auto* flag = node->as_boolean();
      if (flag == nullptr) {
        fail(node->source(),
             fmt::format("host.tcp_slow_start_after_idle: expected true or false, got {}", describe_value(*node)));
      }
      scenario_.host.tcp_slow_start_after_idle = flag->get();
    }
  }

  std::optional<std::uint64_t> read_buffer_size(const toml::table& host, std::string_view key) {
    const toml::node* node = host.get(key);
    if (node == nullptr) return std::nullopt;
    std::string field = fmt::format("host.{}", key);
    std::uint64_t bytes = parse_string(*node, field, R"(a size like "4mb")", units::parse_size);
    if (bytes == 0) fail(node->source(), fmt::format("{}: must be greater than 0", field));
    return bytes;
  }

  void read_dcs(const toml::table& root) {
    std::vector<const toml::table*> tables = array_of_tables(root, "dc");
    if (tables.empty()) fail_at_start("no [[dc]] tables: a scenario needs at least one DC");
    for (const toml::table* table : tables) {
      if (scenario_.dcs.size() == WANLAB_MAX_DCS) {
        fail(table->source(), fmt::format("dc: more than {} DCs", WANLAB_MAX_DCS));
      }
      check_known_keys(*table, kDcKeys, "[[dc]]");
      scenario_.dcs.push_back(Dc{read_dc_name(*table), read_hosts(*table), {}, {}});
      dc_where_.push_back(table->source());
      read_machines(*table, scenario_.dcs.back());
    }
    const auto with_machines =
        std::count_if(scenario_.dcs.begin(), scenario_.dcs.end(), [](const Dc& dc) { return !dc.machines.empty(); });
    if (with_machines != 0 && with_machines != static_cast<std::ptrdiff_t>(scenario_.dcs.size())) {
      for (std::size_t i = 0; i < tables.size(); ++i)
        if (scenario_.dcs[i].machines.empty())
          fail(tables[i]->source(), fmt::format("dc.machines: DC \"{}\" has none; in a scenario over machines every "
                                                "DC names its machines",
                                                scenario_.dcs[i].name));
    }
  }

  // `machines = [...]`: host names, addresses or address ranges, each in one
  // DC only; `gateway` one of them (or an address in a range), by default the
  // first, which must then be one machine.
  void read_machines(const toml::table& table, Dc& dc) {
    const toml::node* node = table.get("machines");
    if (node == nullptr) {
      if (const toml::node* gateway = table.get("gateway"))
        fail(gateway->source(), "dc.gateway: only a DC of machines has one; add dc.machines");
      return;
    }
    if (const toml::node* hosts = table.get("hosts"))
      fail(hosts->source(), "dc.hosts: a DC of machines has no emulated hosts; remove hosts or machines");
    const toml::array* list = node->as_array();
    if (list == nullptr || list->empty())
      fail(node->source(), fmt::format(R"(dc.machines: expected a list of host names or addresses like ["node1", )"
                                       R"("10.0.0.0/28"], got {})",
                                       describe_value(*node)));
    for (const toml::node& entry : *list) {
      const std::string& text = expect_string(entry, "dc.machines", R"(a host name or an address like "10.0.0.7")");
      Machine machine{text, parse_machine_address(text)};
      if (!machine.prefix && !is_valid_machine_name(text))
        fail(entry.source(), fmt::format("dc.machines: {} is neither an IPv4 address or range (\"10.0.0.0/28\") nor "
                                         "a host name (letters, digits, '-' and '.', at most 253)",
                                         base::quoted(text)));
      if (machine.prefix && !detail::unusable_range(*machine.prefix).empty())
        fail(entry.source(),
             fmt::format("dc.machines: {} overlaps {}", base::quoted(text), detail::unusable_range(*machine.prefix)));
      check_machine_unique(machine, entry);
      machines_seen_.push_back({scenario_.dcs.size() - 1, machine, entry.source()});
      dc.machines.push_back(std::move(machine));
    }
    read_gateway(table, dc);
  }

  static std::optional<Ipv4Prefix> parse_machine_address(const std::string& text) {
    const std::string with_length = text.find('/') == std::string::npos ? text + "/32" : text;
    try {
      return detail::parse_ipv4_prefix(with_length);
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    }
  }

  // The same name, or ranges that overlap, in two places: a machine would
  // be in two DCs (or listed twice).
  void check_machine_unique(const Machine& machine, const toml::node& entry) const {
    for (const SeenMachine& seen : machines_seen_) {
      const Machine& other = seen.machine;
      const bool same = machine.prefix && other.prefix ? machine.prefix->contains(other.prefix->addr) ||
                                                             other.prefix->contains(machine.prefix->addr)
                                                       : machine.text == other.text;
      if (same)
        fail(entry.source(), fmt::format("dc.machines: {} is also in DC \"{}\" ({} at {})", base::quoted(machine.text),
                                         scenario_.dcs[seen.dc].name, base::quoted(other.text), where(seen.where)));
    }
  }

  void read_gateway(const toml::table& table, Dc& dc) const {
    const toml::node* node = table.get("gateway");
    if (node == nullptr) {
      if (!dc.machines.front().is_single())
        fail(table.get("machines")->source(),
             fmt::format("dc.gateway: missing; the first of DC \"{}\"'s machines is a range ({}), so name the machine "
                         "that carries its traffic to other DCs (gateway = \"10.0.0.1\")",
                         dc.name, dc.machines.front().text));
      dc.gateway = dc.machines.front().text;
      return;
    }
    const std::string& gateway = expect_string(*node, "dc.gateway", R"(one of the DC's machines, like "node1")");
    const auto address = parse_machine_address(gateway);
    const bool listed = std::any_of(dc.machines.begin(), dc.machines.end(), [&](const Machine& machine) {
      return machine.text == gateway ||
             (address && address->len == 32 && machine.prefix && machine.prefix->contains(address->addr));
    });
    if (!listed || (address && address->len != 32))
      fail(node->source(),
           fmt::format("dc.gateway: {} is not one machine of DC \"{}\"'s machines", base::quoted(gateway), dc.name));
    dc.gateway = gateway;
  }

  // What has no meaning across machines: the pool (addresses are the
  // machines') and [intra_dc] (a DC's machines talk over the cluster's own
  // network, unshaped).
  void check_machines_fit(const toml::table& root) const {
    if (!scenario_.over_machines()) return;
    if (const toml::table* network = optional_table(root, "network"); network && network->get("pool"))
      fail(network->get("pool")->source(),
           "network.pool: a scenario over machines takes each DC's addresses from its machines; remove the pool");
    if (const toml::table* intra = optional_table(root, "intra_dc"))
      fail(intra->source(),
           "[intra_dc]: a DC of machines talks over the cluster's own network, which wanlab does not "
           "shape; remove [intra_dc]");
  }

  std::string read_dc_name(const toml::table& table) const {
    const toml::node* node = table.get("name");
    if (node == nullptr) fail(table.source(), R"(dc.name: missing; every [[dc]] needs name = "...")");
    const std::string& name = expect_string(*node, "dc.name", R"(a DC name like "east")");
    if (!is_valid_dc_name(name)) {
      fail(node->source(), fmt::format("dc.name: expected 1 to 15 characters from [a-z0-9] starting with a "
                                       "letter (hosts are named <dc>-<index>), got {}",
                                       base::quoted(name)));
    }
    int existing = scenario_.dc_index(name);
    if (existing >= 0) {
      fail(node->source(), fmt::format("dc.name: duplicate DC \"{}\" (first at {})", name,
                                       where(dc_where_[static_cast<std::size_t>(existing)])));
    }
    return name;
  }

  int read_hosts(const toml::table& table) const {
    const toml::node* node = table.get("hosts");
    if (node == nullptr) return 1;
    const auto* hosts = node->as_integer();
    if (hosts == nullptr || hosts->get() < 1 || hosts->get() > kMaxHosts) {
      fail(node->source(),
           fmt::format("dc.hosts: expected a number of hosts from 1 to {}, got {}", kMaxHosts, describe_value(*node)));
    }
    return static_cast<int>(hosts->get());
  }

  void read_defaults(const toml::table& root) {
    const toml::table* table = optional_table(root, "defaults");
    if (table == nullptr) return;
    check_known_keys(*table, kDefaultsKeys, "[defaults]", link_key_names());
    scenario_.defaults = read_link_params(*table, "defaults");
    scenario_.defaults_schedule = read_schedule(*table, "defaults");
  }

  // ---- schedules: scenario_schedule.cpp ----

  // Equal schedules are one object (the data plane gives their pairs one
  // map), and the distinct ones stay within the testbed's total.
  std::shared_ptr<const Schedule> read_schedule(const toml::table& parent, std::string_view owner) {
    std::shared_ptr<const Schedule> schedule = detail::read_schedule_table(*this, parent, owner, files_);
    if (!schedule) return nullptr;
    for (const auto& known : schedules_)
      if (known->same_steps(*schedule)) return known;
    schedule_steps_ += schedule->steps.size();
    try {
      check_schedule_total(schedule_steps_);
    } catch (const std::invalid_argument& error) {
      fail(parent.get("schedule")->source(), fmt::format("{}.schedule: {}", owner, error.what()));
    }
    schedules_.push_back(schedule);
    return schedule;
  }

  // Every scheduled pair sends at each rate it will have: its own and each
  // one an [[event]] gives it (a schedule without a rate column shares the
  // pair's rate).
  void check_scheduled_pairs_send() const {
    std::set<std::pair<const Schedule*, std::uint64_t>> checked;
    const int n = static_cast<int>(scenario_.dcs.size());
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        const std::shared_ptr<const Schedule> schedule = src == dst ? nullptr : scenario_.schedule(src, dst);
        if (!schedule || !shares_pair_rate(schedule->columns)) continue;  // finish_schedule checked the others
        PairParams pair = scenario_.pair(src, dst);
        if (checked.emplace(schedule.get(), pair.rate_bps).second)
          check_pair_sends(*schedule, src, dst, pair, schedule->where + ": schedule");
        for (const Event& event : scenario_.events) {
          if (!event.link.params.rate_bps || !event.link.matches(dc_name(src), dc_name(dst))) continue;
          pair.rate_bps = *event.link.params.rate_bps;
          if (checked.emplace(schedule.get(), pair.rate_bps).second)
            check_pair_sends(*schedule, src, dst, pair,
                             fmt::format("{}: event.rate: the schedule of {}", event.link.where, schedule->where));
        }
      }
    }
  }

  void check_pair_sends(const Schedule& schedule, int src, int dst, const PairParams& pair,
                        const std::string& where) const {
    try {
      // Only the config's rate reaches a schedule's steps.
      check_link_sends(schedule, make_pair_config(pair, 0, scenario_.seed, 0));
    } catch (const std::invalid_argument& error) {
      throw ScenarioError(fmt::format("{}: {} -> {}: {}", where, dc_name(src), dc_name(dst), error.what()));
    }
  }

  const std::string& dc_name(int dc) const { return scenario_.dcs[static_cast<std::size_t>(dc)].name; }

  void read_link_table(const toml::table& root, std::string_view key, LinkParams& params) {
    const toml::table* table = optional_table(root, key);
    if (table == nullptr) return;
    check_known_keys(*table, std::array<std::string_view, 0>{}, fmt::format("[{}]", key), link_key_names());
    params = read_link_params(*table, key);
  }

  static std::span<const std::string_view> link_key_names() {
    static const std::vector<std::string_view> names = [] {
      std::vector<std::string_view> list;
      for (const LinkKey& key : link_keys()) list.push_back(key.name);
      return list;
    }();
    return names;
  }

  LinkParams read_link_params(const toml::table& table, std::string_view table_name) const {
    LinkParams params;
    for (const LinkKey& key : link_keys()) {
      const toml::node* node = table.get(key.name);
      if (node == nullptr) continue;
      std::string field = fmt::format("{}.{}", table_name, key.name);
      if (key.is_bool) {
        read_bool(*node, field, key, params);
      } else {
        parse_string(*node, field, key.expected, [&](const std::string& text) {
          key.set(params, text);
          return 0;
        });
      }
    }
    check_ge_needs_model(table, table_name, params);
    return params;
  }

  void read_bool(const toml::node& node, std::string_view field, const LinkKey& key, LinkParams& params) const {
    const auto* flag = node.as_boolean();
    if (flag == nullptr) {
      fail(node.source(), fmt::format("{}: expected {}, got {}", field, key.expected, describe_value(node)));
    }
    key.set(params, flag->get() ? "true" : "false");
  }

  // Gilbert-Elliott parameters next to an explicit Bernoulli model would be
  // silently ignored; say so instead.
  void check_ge_needs_model(const toml::table& table, std::string_view table_name, const LinkParams& params) const {
    if (params.loss_model != LossModel::bernoulli) return;
    for (std::string_view key : {"ge_r"sv, "ge_bad_loss"sv, "ge_good_loss"sv}) {
      if (const toml::node* node = table.get(key)) {
        fail(node->source(), fmt::format(R"({}.{}: only used with loss_model = "gilbert-elliott")", table_name, key));
      }
    }
  }

  void read_links(const toml::table& root) {
    std::map<std::pair<std::string, std::string>, std::string> first_link;
    for (const toml::table* table : array_of_tables(root, "link")) {
      check_known_keys(*table, kLinkTableKeys, "[[link]]", link_key_names());
      LinkSpec link = read_selection(*table, "link");
      link.params = read_link_params(*table, "link");
      link.schedule = read_schedule(*table, "link");
      link.gives_schedule = table->contains("schedule");
      check_not_duplicate(link, *table, first_link);
      scenario_.links.push_back(std::move(link));
    }
  }

  void check_not_duplicate(const LinkSpec& link, const toml::table& table,
                           std::map<std::pair<std::string, std::string>, std::string>& first_link) const {
    std::vector<std::pair<std::string, std::string>> directions{{link.from, link.to}};
    if (link.symmetric) directions.emplace_back(link.to, link.from);
    for (const auto& direction : directions) {
      auto [existing, inserted] = first_link.emplace(direction, link.where);
      if (!inserted) {
        fail(table.source(), fmt::format("link: a second [[link]] for {} -> {} (first at {})", direction.first,
                                         direction.second, existing->second));
      }
    }
  }

  void read_events(const toml::table& root) {
    static constexpr std::array kEventKeys{"at"sv, "between"sv, "from"sv, "to"sv};
    for (const toml::table* table : array_of_tables(root, "event")) {
      check_known_keys(*table, kEventKeys, "[[event]]", link_key_names());
      Event event;
      event.at_ns = read_event_time(*table);
      event.link = read_selection(*table, "event");
      event.link.params = read_link_params(*table, "event");
      if (!changes_anything(*table)) {
        fail(table->source(),
             "event: changes nothing; set at least one link key (rate, delay, "
             "loss, ...)");
      }
      scenario_.events.push_back(std::move(event));
    }
    std::stable_sort(scenario_.events.begin(), scenario_.events.end(),
                     [](const Event& a, const Event& b) { return a.at_ns < b.at_ns; });
  }

  static bool changes_anything(const toml::table& table) {
    for (const LinkKey& key : link_keys()) {
      if (table.contains(key.name)) return true;
    }
    return false;
  }

  std::uint64_t read_event_time(const toml::table& table) const {
    const toml::node* node = table.get("at");
    if (node == nullptr) {
      fail(table.source(), R"(event.at: missing; every [[event]] needs at = "10s" (seconds after up))");
    }
    return parse_string(*node, "event.at", R"(a time like "10s")", units::parse_time);
  }

  // `between = [a, b]` or `from = a` + `to = b`, naming known, distinct DCs.
  LinkSpec read_selection(const toml::table& table, std::string_view kind) const {
    LinkSpec spec;
    spec.where = where(table.source());
    const toml::node* between = table.get("between");
    const toml::node* from = table.get("from");
    const toml::node* to = table.get("to");
    if (between != nullptr && (from != nullptr || to != nullptr)) {
      fail(between->source(), fmt::format("{}.between: use either between = [a, b] or from/to, not both", kind));
    }
    if (between != nullptr) {
      read_between(*between, kind, spec);
    } else {
      read_from_to(table, from, to, kind, spec);
    }
    return spec;
  }

  void read_between(const toml::node& node, std::string_view kind, LinkSpec& spec) const {
    std::string field = fmt::format("{}.between", kind);
    const toml::array* names = node.as_array();
    if (names == nullptr || names->size() != 2) {
      fail(node.source(),
           fmt::format(R"({}: expected two DC names like ["east", "west"], got {})", field, describe_value(node)));
    }
    spec.from = read_dc_reference((*names)[0], field);
    spec.to = read_dc_reference((*names)[1], field);
    spec.symmetric = true;
    if (spec.from == spec.to) {
      fail(node.source(), fmt::format("{}: both names are \"{}\"; intra-DC settings go in "
                                      "[intra_dc]",
                                      field, spec.from));
    }
  }

  void read_from_to(const toml::table& table, const toml::node* from, const toml::node* to, std::string_view kind,
                    LinkSpec& spec) const {
    if (from == nullptr && to == nullptr) {
      fail(table.source(), fmt::format(R"({}: needs between = ["a", "b"] or from = "a" and )"
                                       R"(to = "b")",
                                       kind));
    }
    if (from == nullptr || to == nullptr) {
      fail((from != nullptr ? from : to)->source(),
           fmt::format("{}: from and to go together; {} is missing", kind, from == nullptr ? "from" : "to"));
    }
    spec.from = read_dc_reference(*from, fmt::format("{}.from", kind));
    spec.to = read_dc_reference(*to, fmt::format("{}.to", kind));
    if (spec.from == spec.to) {
      fail(to->source(), fmt::format("{}: from and to are both \"{}\"; intra-DC settings go in "
                                     "[intra_dc]",
                                     kind, spec.from));
    }
  }

  std::string read_dc_reference(const toml::node& node, std::string_view field) const {
    const std::string& name = expect_string(node, field, R"(a DC name like "east")");
    if (scenario_.dc_index(name) >= 0) return name;
    std::vector<std::string_view> known;
    for (const Dc& dc : scenario_.dcs) known.push_back(dc.name);
    const std::string hint = base::did_you_mean(name, known, fmt::format("; DCs are {}", join(scenario_.dcs)));
    fail(node.source(), fmt::format("{}: unknown DC {}{}", field, base::quoted(name), hint));
  }

  void check_every_pair_has_delay() const {
    for (std::size_t src = 0; src < scenario_.dcs.size(); ++src) {
      for (std::size_t dst = 0; dst < scenario_.dcs.size(); ++dst) {
        if (src == dst || has_delay(src, dst)) continue;
        fail(dc_where_[src], fmt::format("no delay for {} -> {}: add a [[link]] or a delay in [defaults]",
                                         scenario_.dcs[src].name, scenario_.dcs[dst].name));
      }
    }
  }

  bool has_delay(std::size_t src, std::size_t dst) const {
    if (scenario_.defaults.delay_ns) return true;
    return std::any_of(scenario_.links.begin(), scenario_.links.end(), [&](const LinkSpec& link) {
      return link.params.delay_ns && link.matches(scenario_.dcs[src].name, scenario_.dcs[dst].name);
    });
  }

  ScheduleFiles files_;
  Scenario scenario_;
  std::vector<std::shared_ptr<const Schedule>> schedules_;  // distinct, as read
  std::uint64_t schedule_steps_ = 0;                        // theirs in all
  std::vector<toml::source_region> dc_where_;
  struct SeenMachine {
    std::size_t dc;
    Machine machine;
    toml::source_region where;
  };
  std::vector<SeenMachine> machines_seen_;
};

}  // namespace

bool Ipv4Prefix::contains(std::uint32_t address) const {
  const std::uint32_t mask = len == 0 ? 0 : ~std::uint32_t{0} << (32 - len);
  return (address & mask) == (addr & mask);
}

int Scenario::dc_index(const std::string& dc_name) const {
  for (std::size_t i = 0; i < dcs.size(); ++i) {
    if (dcs[i].name == dc_name) return static_cast<int>(i);
  }
  return -1;
}

PairParams Scenario::pair(int src, int dst) const {
  const Dc& src_dc = dcs.at(static_cast<std::size_t>(src));
  const Dc& dst_dc = dcs.at(static_cast<std::size_t>(dst));
  LinkParams layered = src == dst ? intra_dc : defaults;
  for (const LinkSpec& link : links) {
    if (link.matches(src_dc.name, dst_dc.name)) layered.overlay(link.params);
  }
  PairParams params;
  params.apply(layered);
  return params;
}

std::uint64_t Scenario::rtt_ns(int src, int dst) const { return pair(src, dst).delay_ns + pair(dst, src).delay_ns; }

Ipv4Prefix Scenario::dc_prefix(int dc) const {
  if (dc < 0 || static_cast<std::size_t>(dc) >= dcs.size()) {
    throw std::out_of_range(fmt::format("dc_prefix: no DC {}", dc));
  }
  return Ipv4Prefix{pool.addr + (static_cast<std::uint32_t>(dc) << 8), 24};
}

Scenario parse_scenario(std::string_view toml_text, const std::string& path, ScheduleFiles files) {
  return Parser(path, files).parse(toml_text);
}

Scenario parse_scenario_table(const toml::table& root, const std::string& path, std::string source,
                              ScheduleFiles files) {
  return Parser(path, files).parse(root, std::move(source));
}

Scenario load_scenario(const std::string& path, ScheduleFiles files) {
  return parse_scenario(emulator::read_input_file<ScenarioError>(path, "scenario"), path, files);
}

}  // namespace wanlab::emulator
