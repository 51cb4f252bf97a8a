// Link settings: their keys and values, layering, and the command-line form.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <strings.h>
#include <vector>

#include "wanlab/base/parse.hpp"
#include "wanlab/emulator/input.hpp"
#include "wanlab/emulator/scenario.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::emulator {
namespace {

constexpr std::string_view kQueueExpected = R"(a queue limit like "50ms", "4mb" or "2bdp")";

[[noreturn]] void fail_queue(std::string_view text, std::string_view why) {
  throw std::invalid_argument(fmt::format("expected {}, got {} ({})", kQueueExpected, base::quoted(text), why));
}

bool ends_with_ignoring_case(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         strncasecmp(text.data() + text.size() - suffix.size(), suffix.data(), suffix.size()) == 0;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

double parse_bdp_multiple(std::string_view text, std::string_view number) {
  double multiple = 0;
  const char* end = number.data() + number.size();
  auto [stop, error] = std::from_chars(number.data(), end, multiple);
  if (number.empty() || error != std::errc{} || stop != end || !std::isfinite(multiple)) {
    fail_queue(text, "the number of BDPs must be a number, as in \"0.5bdp\"");
  }
  return multiple;
}

QueueLimit parse_time_or_size(std::string_view text) {
  try {
    return {QueueLimit::Kind::time, static_cast<double>(units::parse_time(text))};
  } catch (const std::invalid_argument&) {
  }
  try {
    return {QueueLimit::Kind::bytes, static_cast<double>(units::parse_size(text))};
  } catch (const std::invalid_argument&) {
  }
  fail_queue(text,
             "use a time (s, ms, us, ns), a size (b, kb, mb, gb) or a multiple of the "
             "bandwidth-delay product (bdp)");
}

void set_rate(LinkParams& params, std::string_view text) { params.rate_bps = units::parse_rate(text); }
void set_flow_rate(LinkParams& params, std::string_view text) { params.flow_rate_bps = units::parse_rate(text); }
std::uint64_t parse_hold_part(std::string_view text) {
  const std::uint64_t ns = units::parse_time(text);
  if (ns > kMaxHoldPartNs)
    throw std::invalid_argument(
        fmt::format("{} is too long: at most 20s (a packet is held at most 60 s)", base::quoted(text)));
  return ns;
}

void set_delay(LinkParams& params, std::string_view text) { params.delay_ns = parse_hold_part(text); }
void set_jitter(LinkParams& params, std::string_view text) { params.jitter_ns = parse_hold_part(text); }
void set_queue(LinkParams& params, std::string_view text) { params.queue = parse_queue(text); }
void set_loss(LinkParams& params, std::string_view text) { params.loss = units::parse_percent(text); }
void set_ge_r(LinkParams& params, std::string_view text) { params.ge_r = units::parse_percent(text); }
void set_ge_bad_loss(LinkParams& params, std::string_view text) { params.ge_bad_loss = units::parse_percent(text); }
void set_ge_good_loss(LinkParams& params, std::string_view text) { params.ge_good_loss = units::parse_percent(text); }

void set_loss_model(LinkParams& params, std::string_view text) {
  if (text == "bernoulli") {
    params.loss_model = LossModel::bernoulli;
  } else if (text == "gilbert-elliott") {
    params.loss_model = LossModel::gilbert_elliott;
  } else {
    throw std::invalid_argument(
        fmt::format(R"(expected "bernoulli" or "gilbert-elliott", got {})", base::quoted(text)));
  }
}

// Only the command line gives `reorder` as text; the file uses a TOML boolean.
void set_reorder(LinkParams& params, std::string_view text) {
  if (text == "on" || text == "true") {
    params.reorder = true;
  } else if (text == "off" || text == "false") {
    params.reorder = false;
  } else {
    throw std::invalid_argument(fmt::format("expected on or off, got {}", base::quoted(text)));
  }
}

constexpr std::string_view kRateExpected = R"(a rate like "100mbit")";
constexpr std::string_view kTimeExpected = R"(a time like "35ms")";
constexpr std::string_view kPercentExpected = R"(a percentage like "0.1%")";

constexpr std::array kLinkKeys{
    LinkKey{"rate", kRateExpected, "RATE", false, set_rate},
    LinkKey{"flow_rate", kRateExpected, "RATE", false, set_flow_rate},
    LinkKey{"delay", kTimeExpected, "TIME", false, set_delay},
    LinkKey{"jitter", kTimeExpected, "TIME", false, set_jitter},
    LinkKey{"queue", kQueueExpected, "QUEUE", false, set_queue},
    LinkKey{"loss", kPercentExpected, "P%", false, set_loss},
    LinkKey{"loss_model", R"("bernoulli" or "gilbert-elliott")", "bernoulli|gilbert-elliott", false, set_loss_model},
    LinkKey{"ge_r", kPercentExpected, "P%", false, set_ge_r},
    LinkKey{"ge_bad_loss", kPercentExpected, "P%", false, set_ge_bad_loss},
    LinkKey{"ge_good_loss", kPercentExpected, "P%", false, set_ge_good_loss},
    LinkKey{"reorder", "true or false", "on|off", true, set_reorder},
};

template <typename T>
void replace_if_set(std::optional<T>& field, const std::optional<T>& over) {
  if (over) field = over;
}

template <typename T>
void assign_if_set(T& field, const std::optional<T>& over) {
  if (over) field = *over;
}

// Calls visit(to.field, from.field) for every link key's field: the one list
// of them that overlay and apply share.
template <typename To, typename Visit>
void each_link_field(To& to, const LinkParams& from, Visit visit) {
  visit(to.rate_bps, from.rate_bps);
  visit(to.flow_rate_bps, from.flow_rate_bps);
  visit(to.delay_ns, from.delay_ns);
  visit(to.jitter_ns, from.jitter_ns);
  visit(to.queue, from.queue);
  visit(to.loss, from.loss);
  visit(to.loss_model, from.loss_model);
  visit(to.ge_r, from.ge_r);
  visit(to.ge_bad_loss, from.ge_bad_loss);
  visit(to.ge_good_loss, from.ge_good_loss);
  visit(to.reorder, from.reorder);
}

}  // namespace

std::span<const LinkKey> link_keys() { return kLinkKeys; }

const LinkKey* find_link_key(std::string_view name) {
  auto found = std::find_if(kLinkKeys.begin(), kLinkKeys.end(), [&](const LinkKey& key) { return key.name == name; });
  return found == kLinkKeys.end() ? nullptr : &*found;
}

std::string link_option_name(std::string_view key) {
  std::string option = "--" + std::string(key);
  std::replace(option.begin(), option.end(), '_', '-');
  return option;
}

QueueLimit parse_queue(std::string_view text) {
  std::string_view value = trim(text);
  if (!value.empty() && value.front() == '-') fail_queue(text, "negative values are not allowed");
  QueueLimit queue;
  if (ends_with_ignoring_case(value, "bdp")) {
    std::string_view number = trim(value.substr(0, value.size() - 3));
    queue = {QueueLimit::Kind::bdp, parse_bdp_multiple(text, number)};
  } else {
    queue = parse_time_or_size(value);
  }
  if (!(queue.value > 0)) fail_queue(text, "must be greater than 0");
  if (queue.kind == QueueLimit::Kind::time && queue.value > static_cast<double>(kMaxHoldPartNs))
    fail_queue(text, "at most 20s of backlog (a packet is held at most 60 s)");
  return queue;
}

std::string format_queue(const QueueLimit& queue) {
  switch (queue.kind) {
    case QueueLimit::Kind::time: return units::format_time(static_cast<std::uint64_t>(std::llround(queue.value)));
    case QueueLimit::Kind::bytes: return units::format_size(static_cast<std::uint64_t>(std::llround(queue.value)));
    case QueueLimit::Kind::bdp: break;
  }
  return fmt::format("{}bdp", queue.value);
}

void LinkParams::overlay(const LinkParams& over) {
  each_link_field(*this, over, [](auto& field, const auto& value) { replace_if_set(field, value); });
}

void PairParams::apply(const LinkParams& change) {
  each_link_field(*this, change, [](auto& field, const auto& value) { assign_if_set(field, value); });
}

bool LinkSpec::matches(std::string_view src, std::string_view dst) const {
  return (from == src && to == dst) || (symmetric && from == dst && to == src);
}

LinkParams parse_link_option(LinkParams params, std::string_view field, std::string_view value) {
  std::string key(field.starts_with("--") ? field.substr(2) : field);
  std::replace(key.begin(), key.end(), '-', '_');
  const LinkKey* link_key = find_link_key(key);
  if (link_key == nullptr) {
    std::vector<std::string_view> names;
    for (const LinkKey& known : link_keys()) names.push_back(known.name);
    std::string closest = closest_name(key, names);
    const std::string shown = link_option_name(base::escaped(key));  // from a file too: cut, escaped
    throw ScenarioError(
        closest.empty() ? fmt::format("{}: unknown link setting", shown)
                        : fmt::format("{}: unknown link setting; did you mean {}?", shown, link_option_name(closest)));
  }
  try {
    link_key->set(params, value);
  } catch (const std::invalid_argument& error) {
    throw ScenarioError(fmt::format("{}: {}", link_option_name(key), error.what()));
  }
  return params;
}

}  // namespace wanlab::emulator
