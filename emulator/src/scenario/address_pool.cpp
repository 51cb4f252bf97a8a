// A scenario's address pool ([network] pool): the prefix's syntax and the
// ranges it must stay out of.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <stdexcept>

#include "scenario_reader.hpp"
#include "wanlab/base/parse.hpp"

namespace wanlab::emulator::detail {
namespace {

// Ranges the kernel never routes between hosts as it does a unicast pool:
// a testbed there would come up and emulate nothing.
struct SpecialRange {
  std::uint32_t addr;
  int len;
  std::string_view what;
};
constexpr std::array kUnusableRanges{
    SpecialRange{0x00000000, 8, "0.0.0.0/8 (\"this network\")"},
    SpecialRange{0x7f000000, 8, "127.0.0.0/8 (loopback: packets never leave a host)"},
    SpecialRange{0xa9fe0000, 16, "169.254.0.0/16 (link-local; wanlab's core routers use 169.254.0.1)"},
    SpecialRange{0xe0000000, 3, "224.0.0.0/3 (multicast, reserved and broadcast)"},
};

bool overlaps(const Ipv4Prefix& pool, const SpecialRange& range) {
  const int len = std::min(pool.len, range.len);  // the shorter prefix decides
  const std::uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);
  return (pool.addr & mask) == (range.addr & mask);
}

int bits_for(std::size_t count) {
  int bits = 0;
  while ((std::size_t{1} << bits) < count) ++bits;
  return bits;
}

}  // namespace

// "10.77.0.0/16"; throws std::invalid_argument.
Ipv4Prefix parse_ipv4_prefix(std::string_view text) {
  auto fail = [&](std::string_view why) -> Ipv4Prefix {
    throw std::invalid_argument(
        fmt::format(R"(expected an IPv4 prefix like "10.77.0.0/16", got {} ({}))", base::quoted(text), why));
  };
  Ipv4Prefix prefix;
  const char* cursor = text.data();
  const char* end = text.data() + text.size();
  for (int octet = 0; octet < 4; ++octet) {
    unsigned value = 0;
    auto [stop, error] = std::from_chars(cursor, end, value);
    if (error != std::errc{} || value > 255) return fail("bad address");
    prefix.addr = (prefix.addr << 8) | value;
    char separator = octet < 3 ? '.' : '/';
    if (stop == end || *stop != separator) return fail(octet < 3 ? "bad address" : "missing /length");
    cursor = stop + 1;
  }
  auto [stop, error] = std::from_chars(cursor, end, prefix.len);
  if (error != std::errc{} || stop != end || prefix.len < 0 || prefix.len > 32) {
    return fail("bad prefix length");
  }
  // (A shift by 32 is undefined: /32 has no host bits.)
  const std::uint32_t host_mask = prefix.len == 32 ? 0 : 0xffffffffu >> prefix.len;
  if ((prefix.addr & host_mask) != 0) return fail("host bits are set");
  return prefix;
}

std::string_view unusable_range(const Ipv4Prefix& pool) {
  for (const SpecialRange& range : kUnusableRanges)
    if (overlaps(pool, range)) return range.what;
  return {};
}

int longest_pool_prefix(std::size_t dcs) { return 24 - bits_for(dcs); }

}  // namespace wanlab::emulator::detail
