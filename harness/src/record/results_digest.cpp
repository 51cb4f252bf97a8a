// `wanlab compare`'s reading of a results.json (results.hpp's ResultsDigest):
// nlohmann's SAX events, kept where compare reads and dropped elsewhere, so
// that memory follows what the table shows and not the document.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "record/results_fields.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/base/suggest.hpp"
#include "wanlab/harness/record/results.hpp"

namespace wanlab::harness {
namespace {

using detail::Fields;
using detail::Json;

// What is done with a value at a member compare reads.
enum class Role {
  keep,       // kept in the small document the digest is read from
  iteration,  // an iteration: counted; must be an object with "wan_bytes"
  wan_bytes,  // an iteration's bytes per link: summed, never kept
  link_bytes,
  request,       // a row of prefill.request_outcomes: checked, kept if served
  request_cell,  // one of its cells
};

// The members compare reads, by path ("#": any index of an array; a last
// "*": any rest of a key).
struct Member {
  std::string_view path;
  Role role;
};

bool matches(std::string_view member, std::string_view path) {
  if (member.ends_with('*')) return path.starts_with(member.substr(0, member.size() - 1));
  return member == path;
}
constexpr Member kDigestMembers[] = {
    {"/experiment", Role::keep},
    {"/runtime", Role::keep},
    {"/mean_iteration_s", Role::keep},
    {"/mean_gpu_utilization", Role::keep},
    {"/mean_bubble_fraction", Role::keep},
    {"/per_step", Role::keep},
    {"/per_step/steps_per_iteration", Role::keep},
    {"/iterations", Role::keep},
    {"/iterations/#", Role::iteration},
    {"/iterations/#/wan_bytes", Role::wan_bytes},
    {"/configuration", Role::keep},
    {"/configuration/schedule", Role::keep},
    {"/configuration/placement", Role::keep},
    {"/configuration/placement/#", Role::keep},
    {"/configuration/streams", Role::keep},
    {"/configuration/temporal_sharing", Role::keep},
    {"/configuration/scale", Role::keep},
    {"/prefill", Role::keep},
    {"/prefill/mean_gpu_utilization", Role::keep},
    {"/prefill/prefill_tokens_per_s", Role::keep},
    {"/prefill/requests", Role::keep},
    {"/prefill/requests/served", Role::keep},
    {"/prefill/requests/rejected", Role::keep},
    {"/prefill/requests/failed", Role::keep},
    {"/prefill/ttft_s", Role::keep},
    {"/prefill/ttft_s/p50", Role::keep},
    {"/prefill/ttft_s/p99", Role::keep},
    {"/prefill/training_delay_s", Role::keep},
    {"/prefill/bubble_prediction_error_relative", Role::keep},
    {"/prefill/bubble_prediction_error_relative/start_p50", Role::keep},
    {"/prefill/bubble_prediction_error_relative/start_p90", Role::keep},
    {"/prefill/bubble_prediction_error_relative/length_p50", Role::keep},
    {"/prefill/bubble_prediction_error_relative/length_p90", Role::keep},
    {"/prefill/request_outcomes", Role::keep},  // its rows are not kept in the document
    {"/prefill/request_outcomes/#", Role::request},
    {"/configuration/prefill", Role::keep},
    {"/configuration/prefill/ttft_slo_s", Role::keep},
    {"/emulation", Role::keep},
    {"/emulation/kept_up", Role::keep},
    {"/emulation/verdict", Role::keep},
    {"/emulation/wake_late_ms", Role::keep},
    {"/emulation/wake_late_ms/p99", Role::keep},
    {"/emulation/wake_late_share", Role::keep},
    {"/emulation/cpu_busy", Role::keep},
    {"/emulation/cpu_busy/mean", Role::keep},
    {"/emulation/cpu_busy/saturated_share", Role::keep},
    {"/emulation/cpu_busy/stolen_mean", Role::keep},
    {"/emulation/releaser", Role::keep},
    {"/emulation/releaser/verdicts", Role::keep},
    {"/emulation/releaser/limit_ns", Role::keep},
    {"/emulation/releaser/over_*", Role::keep},  // one per bound (base::kLateBoundsNs)
    {"/emulation/releaser/max_ns", Role::keep},
    {"/emulation/releaser/dropped", Role::keep},
    {"/slowdown", Role::keep},
    {"/slowdown/iterations", Role::keep},
    {"/slowdown/iteration_s", Role::keep},
    {"/slowdown/planned_iteration_s", Role::keep},
    {"/slowdown/causes_s", Role::keep},
    {"/slowdown/causes_s/gpu_held_by_prefill", Role::keep},
    {"/slowdown/causes_s/late_wake_ups", Role::keep},
    {"/slowdown/causes_s/link_gate", Role::keep},
    {"/slowdown/causes_s/transfers", Role::keep},
    {"/slowdown/causes_s/other", Role::keep},
    {"/slowdown/op_start_late_ms", Role::keep},
    {"/slowdown/op_start_late_ms/ops", Role::keep},
    {"/slowdown/op_start_late_ms/p50", Role::keep},
    {"/slowdown/op_start_late_ms/p99", Role::keep},
    {"/slowdown/op_start_late_ms/max", Role::keep},
};

// The SAX events of nlohmann's parser, kept where compare reads and dropped
// elsewhere: memory is the members in kDigestMembers and a level per open
// member, however large the document (containers compare does not read are
// only counted, so "[[[[..." costs nothing either).
class DigestReader final : public nlohmann::json_sax<Json> {
 public:
  DigestReader(std::string_view text, const std::string& label) : text_(text), label_(label) {}

  ResultsDigest read() {
    Json::sax_parse(text_, this);
    const Fields fields(kept_, label_);
    ResultsDigest digest;
    digest.experiment = fields.text("experiment");
    digest.runtime = fields.text("runtime");
    detail::read_shown_means(fields, digest.run);
    if (fields.has("prefill")) digest.prefill = detail::prefill_shown(fields.object("prefill"));
    digest.iterations = iterations_;
    digest.first_iteration_s = first_iteration_s(fields);
    digest.wan_bytes = wan_bytes_;
    if (fields.has("per_step"))
      digest.steps_per_iteration = fields.object("per_step").whole<int>("steps_per_iteration");
    const Fields configuration = fields.object("configuration");
    digest.configuration = detail::view_of(configuration);
    if (fields.has("emulation")) {
      const Fields emulation = fields.object("emulation");
      digest.emulation_kept_up = emulation.flag("kept_up");
      digest.emulation_verdict = emulation.text("verdict");
      digest.emulation = detail::emulation_figures(emulation);
    }
    if (fields.has("slowdown")) digest.slowdown = detail::slowdown_from(fields.object("slowdown"));
    if (digest.prefill) {
      fields.object("prefill").array("request_outcomes");  // there, and an array: its rows were read
      digest.served = std::move(served_);
      digest.ttft_slo_s = ttft_slo_s(configuration);
    }
    return digest;
  }

  bool null() override { return scalar(nullptr); }
  bool boolean(bool value) override { return scalar(value); }
  bool number_integer(number_integer_t value) override { return scalar(value); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(value); }
  bool number_float(number_float_t value, const string_t&) override { return scalar(value); }
  bool string(string_t& value) override { return unread_ > 0 || scalar(std::move(value)); }
  bool binary(binary_t&) override { return scalar(nullptr); }  // not in JSON text
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool key(string_t& key) override {
    if (unread_ == 0) key_ = key.substr(0, base::kMaxSuggestedName + 1);  // longer matches no member
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error) override {
    throw ResultsError(fmt::format("{}: {}", label_, detail::json_error(text_, position, error)));
  }

 private:
  // An open member: where it is, and what is known of it.
  struct Level {
    std::string path;     // "/iterations/#"
    std::string pointer;  // "/iterations/3"
    bool array = false;
    Role role = Role::keep;
    std::size_t items = 0;  // of an array, so far
    bool has_wan_bytes = false;
  };
  struct Found {
    std::string path, pointer;
    Role role;
  };

  // iterations[0].time_s: of an iteration's members, the one the digest keeps.
  double first_iteration_s(const Fields& root) const {
    const Json& kept = root.array("iterations");
    if (iterations_ == 0) return 0;
    static const Json kNone = Json::object();
    return Fields(kept.empty() ? kNone : kept[0], label_ + ".iterations[0]").number("time_s");
  }

  // The SLO a prefill run had (written with prefill on; absent from older files).
  static std::optional<double> ttft_slo_s(const Fields& configuration) {
    if (!configuration.has("prefill")) return std::nullopt;
    const Fields prefill = configuration.object("prefill");
    if (!prefill.has("ttft_slo_s")) return std::nullopt;
    return prefill.number("ttft_slo_s");
  }

  // The member the next value is, if compare reads it.
  std::optional<Found> next() {
    Level& parent = levels_.back();
    const std::size_t index = parent.items++;
    // An iteration's members and its links, and a request's cells, many in a
    // long run: no path to make.
    if (parent.role == Role::wan_bytes) return Found{"", "", Role::link_bytes};
    if (parent.role == Role::request) return Found{"", "", Role::request_cell};
    if (parent.role == Role::iteration && key_ == "time_s" && iterations_ == 1)
      return Found{parent.path + "/time_s", parent.pointer + "/time_s", Role::keep};
    if (parent.role == Role::iteration && key_ != "wan_bytes") return std::nullopt;
    std::string path = parent.path + "/" + (parent.array ? "#" : key_);
    for (const Member& member : kDigestMembers) {
      if (!matches(member.path, path)) continue;
      std::string pointer = parent.pointer + "/" + (parent.array ? std::to_string(index) : key_);
      return Found{std::move(path), std::move(pointer), member.role};
    }
    return std::nullopt;
  }

  // "LABEL.iterations[3]" for the iteration that is open.
  std::string iteration_where() const { return fmt::format("{}.iterations[{}]", label_, levels_[1].items - 1); }
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ResultsError(fmt::format("{}: {}", where, what));
  }

  bool scalar(Json value) {
    if (unread_ > 0) return true;
    if (levels_.empty()) fail(label_, "is not an object");
    const std::optional<Found> found = next();
    if (!found) return true;
    switch (found->role) {
      case Role::keep: kept_[Json::json_pointer(found->pointer)] = std::move(value); break;
      case Role::iteration: fail(iteration_where(), "is not an object");
      case Role::wan_bytes: fail(iteration_where(), "\"wan_bytes\" is not an object");
      case Role::link_bytes: add_bytes(value); break;
      case Role::request: add_request(value); break;  // not a row: request_from says so
      case Role::request_cell: add_cell(std::move(value)); break;
    }
    return true;
  }

  // "LABEL.prefill.request_outcomes[3]" for the row `list`'s last item.
  std::string request_where(const Level& list) const {
    return fmt::format("{}.prefill.request_outcomes[{}]", label_, list.items - 1);
  }

  // A row's cells, up to one more than a row has (request_from then refuses
  // its length): a long row costs no memory.
  void add_cell(Json value) {
    if (row_.size() <= std::size(detail::kRequestColumns)) row_.push_back(std::move(value));
  }

  // A row, checked as results_from_json checks it; a served one kept.
  void add_request(const Json& row) {
    const RequestRow request = detail::request_from(row, request_where(levels_.back()));
    if (request.state == to_string(RequestState::served) && request.ttft_s)
      served_.push_back(ServedRequest{request.arrival_s, *request.ttft_s});
  }

  void add_bytes(const Json& value) {
    const std::string where = iteration_where() + ".wan_bytes";
    if (!value.is_number_integer()) fail(where, fmt::format("{} is not a whole number", base::quoted(key_)));
    if (!value.is_number_unsigned()) fail(where, fmt::format("{} is out of range", base::quoted(key_)));
    wan_bytes_ += static_cast<double>(value.get<std::uint64_t>());
  }

  bool open(bool array) {
    if (unread_ > 0) return skip();
    if (levels_.empty()) {
      if (array) fail(label_, "is not an object");
      levels_.push_back(Level{"", "", false, Role::keep, 0, false});
      return true;
    }
    const std::optional<Found> found = next();
    if (!found) return skip();
    switch (found->role) {
      case Role::keep: kept_[Json::json_pointer(found->pointer)] = array ? Json::array() : Json::object(); break;
      case Role::iteration:
        if (array) fail(iteration_where(), "is not an object");
        ++iterations_;
        break;
      case Role::wan_bytes:
        if (array) fail(iteration_where(), "\"wan_bytes\" is not an object");
        levels_.back().has_wan_bytes = true;
        break;
      case Role::link_bytes:
        fail(iteration_where() + ".wan_bytes", fmt::format("{} is not a whole number", base::quoted(key_)));
      case Role::request:
        if (!array) add_request(Json::object());  // not a row: request_from says so
        row_ = Json::array();
        break;
      case Role::request_cell:  // a cell that is a container: its type, for request_from to refuse
        add_cell(array ? Json::array() : Json::object());
        return skip();
    }
    levels_.push_back(Level{found->path, found->pointer, array, found->role, 0, false});
    return true;
  }

  bool skip() {
    ++unread_;
    return true;
  }

  bool close() {
    if (unread_ > 0) {
      --unread_;
      return true;
    }
    if (levels_.back().role == Role::iteration && !levels_.back().has_wan_bytes)
      fail(iteration_where(), "no \"wan_bytes\"");
    const bool row = levels_.back().role == Role::request;
    levels_.pop_back();
    if (row) add_request(row_);
    return true;
  }

  std::string_view text_;
  const std::string& label_;
  std::vector<Level> levels_;  // the open members, from the document down
  std::size_t unread_ = 0;     // containers open inside one compare does not read
  std::string key_;            // the last key of an open member
  Json kept_ = Json::object();
  std::size_t iterations_ = 0;
  double wan_bytes_ = 0;
  Json row_ = Json::array();  // the request row that is open
  std::vector<ServedRequest> served_;
};

}  // namespace

ResultsDigest results_digest_from_json(std::string_view text, const std::string& label) {
  return DigestReader(text, label).read();
}

ResultsDigest read_results_digest(const std::string& path) {
  const std::string file = detail::results_file(path);
  return results_digest_from_json(detail::read_results_text(file), file);
}

}  // namespace wanlab::harness
