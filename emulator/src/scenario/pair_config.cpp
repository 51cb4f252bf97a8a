// PairParams -> the map value the tc program reads.
#include <algorithm>
#include <cmath>
#include <limits>

#include "wanlab/emulator/scenario.hpp"

namespace wanlab::emulator {
namespace {

static_assert(sizeof(wanlab_pair_config) == 5 * 8 + 6 * 4 + 2 * 8,
              "wanlab_pair_config layout changed; update make_pair_config");

__extension__ using uint128 = unsigned __int128;

constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kNsPerSecond = 1'000'000'000;
// One GSO/TSO burst; a BDP limit below its serialization time would drop
// every large segment on short or fast paths.
constexpr std::uint64_t kBurstBytes = 64 * 1024;

std::uint64_t saturate(uint128 value) { return value > kMaxU64 ? kMaxU64 : static_cast<std::uint64_t>(value); }

std::uint64_t saturate(double value) {
  if (!(value > 0)) return 0;  // also NaN
  if (value >= 18446744073709551615.0) return kMaxU64;
  return static_cast<std::uint64_t>(std::round(value));
}

// Nanoseconds to send `bytes` at `bps`, rounded up; 0 when unlimited.
std::uint64_t transmit_time_ns(std::uint64_t bytes, std::uint64_t bps) {
  if (bps == 0) return 0;
  uint128 bit_ns = static_cast<uint128>(bytes) * 8 * kNsPerSecond;
  return saturate((bit_ns + bps - 1) / bps);
}

// The rate a backlog drains at: the link's, or the per-flow cap's when the
// link itself is unlimited.
std::uint64_t draining_rate(const PairParams& params) {
  return params.rate_bps != 0 ? params.rate_bps : params.flow_rate_bps;
}

std::uint64_t uncapped_queue_limit_ns(const PairParams& params, std::uint64_t rtt_ns) {
  const QueueLimit& queue = params.queue;
  std::uint64_t rate = draining_rate(params);
  switch (queue.kind) {
    case QueueLimit::Kind::time: return saturate(queue.value);
    case QueueLimit::Kind::bytes: return transmit_time_ns(saturate(queue.value), rate);
    case QueueLimit::Kind::bdp: break;
  }
  std::uint64_t bdp_ns = saturate(queue.value * static_cast<double>(rtt_ns));
  return std::max(bdp_ns, transmit_time_ns(kBurstBytes, rate));
}

// A size at a low rate or a large BDP multiple can ask for hours of backlog;
// the release paths hold a packet only so long (kMaxHoldPartNs).
std::uint64_t queue_limit_ns(const PairParams& params, std::uint64_t rtt_ns) {
  return std::min(uncapped_queue_limit_ns(params, rtt_ns), kMaxHoldPartNs);
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint32_t probability_p32(double probability) {
  if (!(probability > 0)) return 0;  // also NaN
  double scaled = std::round(probability * 4294967296.0);
  if (scaled >= 4294967295.0) return 0xffffffffu;
  return static_cast<std::uint32_t>(scaled);
}

wanlab_pair_config make_pair_config(const PairParams& params, std::uint64_t rtt_ns, std::uint64_t seed,
                                    std::uint32_t pair_index) {
  wanlab_pair_config config{};
  config.rate_bps = params.rate_bps;
  config.flow_rate_bps = params.flow_rate_bps;
  config.delay_ns = params.delay_ns;
  config.jitter_ns = params.jitter_ns;
  config.queue_limit_ns = queue_limit_ns(params, rtt_ns);
  config.loss_model =
      params.loss_model == LossModel::gilbert_elliott ? WANLAB_LOSS_GILBERT_ELLIOTT : WANLAB_LOSS_BERNOULLI;
  config.loss_p32 = probability_p32(params.loss);
  config.ge_r32 = probability_p32(params.ge_r);
  config.ge_bad_loss32 = probability_p32(params.ge_bad_loss);
  config.ge_good_loss32 = probability_p32(params.ge_good_loss);
  config.flags = WANLAB_PAIR_ENABLED | (params.reorder ? WANLAB_PAIR_REORDER : 0u);
  // Hashing the seed before mixing in the index keeps (seed 1, pair 0) and
  // (seed 0, pair 1) apart; xorshift64* needs a nonzero state.
  std::uint64_t pair_seed = splitmix64(splitmix64(seed) ^ pair_index);
  config.seed = pair_seed != 0 ? pair_seed : 0x9e3779b97f4a7c15ULL;
  config.generation = 1;
  return config;
}

}  // namespace wanlab::emulator
