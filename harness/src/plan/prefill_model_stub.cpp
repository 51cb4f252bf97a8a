// TEMPORARY: minimal definitions of prefill_ns, kv_message_bytes and
// load_requests so that the simulator's side of BubbleTea links and tests
// before the real ones (branch prefill-config) land. Drop this file then.
#include <algorithm>
#include <cmath>
#include <random>

#include "wanlab/harness/experiment.hpp"
#include "wanlab/harness/prefill.hpp"

namespace wanlab::harness {

std::uint64_t prefill_ns(const Experiment& experiment, int tokens) {
  const std::vector<double>& x = experiment.prefill.time_tokens;
  const std::vector<double>& y = experiment.prefill.time_ms;
  if (x.size() < 2 || x.size() != y.size()) return static_cast<std::uint64_t>(tokens) * 100'000;
  std::size_t upper = 1;
  while (upper + 1 < x.size() && x[upper] < tokens) ++upper;
  double slope = (y[upper] - y[upper - 1]) / (x[upper] - x[upper - 1]);
  double ms = y[upper - 1] + slope * (tokens - x[upper - 1]);
  return static_cast<std::uint64_t>(std::llround(std::max(ms, 0.001) * 1e6));
}

std::uint64_t kv_message_bytes(const Experiment& experiment, int tokens) {
  const ServedModel& model = experiment.prefill.model;
  double per_token = 2.0 * model.layers * model.kv_heads * model.head_dim * model.bytes_per_value;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(per_token * tokens * experiment.scale));
}

std::vector<Request> load_requests(const Experiment& experiment, std::int64_t horizon_ns) {
  std::vector<Request> requests;
  const std::optional<ArrivalProcess>& arrivals = experiment.prefill.arrivals;
  if (!arrivals || arrivals->rate_per_s <= 0) return requests;
  std::mt19937_64 random(arrivals->seed != 0 ? arrivals->seed : experiment.seed);
  std::exponential_distribution<double> gap_s(arrivals->rate_per_s);
  double mu = std::log(arrivals->prompt_median);
  double sigma = std::max(0.0, (std::log(arrivals->prompt_p90) - mu) / 1.2816);
  std::lognormal_distribution<double> prompt(mu, sigma);
  double at_s = 0;
  while (requests.size() < PrefillConfig::kMaxRequests) {
    at_s += gap_s(random);
    if (at_s * 1e9 >= static_cast<double>(horizon_ns)) break;
    Request request;
    request.id = static_cast<int>(requests.size());
    request.arrival_ns = static_cast<std::int64_t>(at_s * 1e9);
    request.prompt_tokens = std::max(1, static_cast<int>(std::lround(prompt(random))));
    request.output_tokens = 1;
    requests.push_back(request);
  }
  return requests;
}

}  // namespace wanlab::harness
