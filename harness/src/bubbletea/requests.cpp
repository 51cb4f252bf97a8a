// BubbleTea's requests: a trace file (arrival_s,prompt_tokens,output_tokens)
// or a seeded Poisson process with lognormal prompt lengths.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/harness/experiment/experiment.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/experiment/prefill.hpp"

namespace wanlab::harness {
namespace {

constexpr std::string_view kHeader = "arrival_s,prompt_tokens,output_tokens";
// kMaxRequests rows of about 30 characters, with room for comments.
constexpr std::size_t kMaxTraceBytes = 64u << 20;
constexpr double kMaxArrivalS = 1e9;  // about 32 years: far below where int64 ns wrap
constexpr int kMaxTokens = PrefillConfig::kMaxTokens;
// Output lengths do not matter to prefill; generated requests say 128, the
// output length splitwise-sim's performance model measured prefill with
// (data/perf_model.csv, token_size; REFERENCES.md).
constexpr int kGeneratedOutputTokens = 128;
// The standard normal's 90th percentile: sigma = ln(p90 / median) / z90.
constexpr double kNormalP90 = 1.2815515655446004;

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r";
  std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  while (true) {
    std::size_t comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

// A row that is not a request; the reader adds the file and line.
class RowError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Reads rows in file order; every error is "path:LINE: ...". Until a line has
// been the header or a request the file may be any file (a `requests` naming
// /etc/shadow), so what its first line holds is not shown.
class TraceReader {
 public:
  explicit TraceReader(const std::string& path) : path_(path) {}

  std::vector<Request> read(std::string_view text) {
    for (int line_number = 1; !text.empty() && requests_.size() < PrefillConfig::kMaxRequests; ++line_number) {
      std::size_t end = text.find('\n');
      line_ = line_number;
      read_line(trim(text.substr(0, end)));
      text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    }
    return std::move(requests_);
  }

 private:
  [[noreturn]] void fail(std::string_view message) const {
    throw ExperimentError(fmt::format("{}:{}: {}", path_, line_, message));
  }

  template <typename Parse>
  static auto number(std::string_view column, Parse parse) {
    try {
      return parse();
    } catch (const base::ParseError& error) {
      throw RowError(fmt::format("{}: {}", column, error.what()));
    }
  }

  void read_line(std::string_view line) {
    if (line.empty() || line.front() == '#') return;
    if (line == kHeader && !accepted_) {
      accepted_ = true;  // one header, before the rows
      return;
    }
    try {
      requests_.push_back(row(line));
    } catch (const RowError& error) {
      if (!accepted_)
        fail(fmt::format(R"(not a request trace: expected the header "{}" or a row like "0.5,1469,13")", kHeader));
      fail(error.what());
    }
    accepted_ = true;
  }

  Request row(std::string_view line) const {
    std::vector<std::string_view> fields = split_fields(line);
    if (fields.size() != 3)
      throw RowError(fmt::format("expected 3 fields ({}), got {}: {}", kHeader, fields.size(), base::quoted(line)));
    Request request;
    request.id = static_cast<int>(requests_.size());
    request.arrival_ns = arrival_ns(fields[0]);
    request.prompt_tokens = number("prompt_tokens", [&] { return base::parse_integer(fields[1], 1, kMaxTokens); });
    request.output_tokens = number("output_tokens", [&] { return base::parse_integer(fields[2], 0, kMaxTokens); });
    return request;
  }

  std::int64_t arrival_ns(std::string_view field) const {
    double seconds = number("arrival_s", [&] { return base::parse_decimal(field, 0, kMaxArrivalS); });
    auto ns = static_cast<std::int64_t>(std::llround(seconds * 1e9));
    if (!requests_.empty() && ns < requests_.back().arrival_ns) {
      throw RowError(
          fmt::format("arrival_s: {:.9g} s is before the previous row's {:.9g} s; arrivals must not decrease", seconds,
                      static_cast<double>(requests_.back().arrival_ns) / 1e9));
    }
    return ns;
  }

  const std::string& path_;
  int line_ = 0;
  bool accepted_ = false;  // the header or a request was read
  std::vector<Request> requests_;
};

// Uniform, exponential and normal draws computed here, not by <random>'s
// distributions (whose algorithms each standard library chooses): one seed
// gives the same requests with any compiler.
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : engine_(seed) {}

  // In (0, 1): 53 random bits, centred in their step.
  double uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1p-53; }
  double exponential(double rate) { return -std::log(uniform()) / rate; }
  // Box-Muller, one of the pair.
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform()); }

 private:
  std::mt19937_64 engine_;
};

std::vector<Request> generate(const ArrivalProcess& process, std::uint64_t seed, std::int64_t horizon_ns) {
  Draws draws(seed);
  double mu = std::log(process.prompt_median);
  double sigma = (std::log(process.prompt_p90) - mu) / kNormalP90;
  std::vector<Request> requests;
  double seconds = 0;
  while (requests.size() < PrefillConfig::kMaxRequests) {
    seconds += draws.exponential(process.rate_per_s);
    // Compared before rounding: at 0.0000001/h the first arrival is 3.6e19 ns
    // away, past what llround can hold (it gave INT64_MIN: every request came at once).
    if (seconds * 1e9 >= static_cast<double>(horizon_ns)) break;
    auto arrival_ns = static_cast<std::int64_t>(std::llround(seconds * 1e9));
    double prompt = std::clamp(std::round(std::exp(mu + sigma * draws.normal())), 1.0, double{kMaxTokens});
    requests.push_back(
        {static_cast<int>(requests.size()), arrival_ns, static_cast<int>(prompt), kGeneratedOutputTokens});
  }
  return requests;
}

std::vector<Request> read_trace(const Experiment& experiment, std::int64_t horizon_ns) {
  const std::string& path = experiment.prefill.requests_path;
  std::string text;
  try {
    text = base::read_regular_file(path, base::ReadRules{kMaxTraceBytes, true});
  } catch (const base::FileError& error) {
    throw ExperimentError(fmt::format("{}: prefill.requests: {}", experiment.where("prefill.requests"), error.what()));
  }
  std::vector<Request> requests = parse_request_trace(text, path);
  // Sorted by arrival: the run's requests are a prefix.
  auto late = std::find_if(requests.begin(), requests.end(),
                           [&](const Request& request) { return request.arrival_ns >= horizon_ns; });
  requests.erase(late, requests.end());
  return requests;
}

}  // namespace

std::vector<Request> parse_request_trace(std::string_view text, const std::string& path) {
  return TraceReader(path).read(text);
}

std::vector<Request> load_requests(const Experiment& experiment, std::int64_t horizon_ns) {
  const PrefillConfig& prefill = experiment.prefill;
  if (!prefill.requests_path.empty()) return read_trace(experiment, horizon_ns);
  if (!prefill.arrivals) return {};
  std::uint64_t seed = prefill.arrivals->seed != 0 ? prefill.arrivals->seed : experiment.seed;
  return generate(*prefill.arrivals, seed, horizon_ns);
}

}  // namespace wanlab::harness
