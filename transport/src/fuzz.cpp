#include "wanlab/transport/fuzz.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "wanlab/transport/error.hpp"
#include "wanlab/transport/options.hpp"
#include "wanlab/transport/reassembly.hpp"

namespace wanlab::transport::fuzz {
namespace {

class Harness {
 public:
  Harness(const wire::Hello& hello) : reassembler_({hello.chunk_size, kFuzzMaxMessage, kFuzzMemoryLimit}, hello.count) {
    for (unsigned i = 0; i < hello.count; ++i) readers_.push_back(std::make_unique<FrameReader>(reassembler_, i));
  }

  void feed(unsigned connection, std::span<const std::uint8_t> bytes) {
    auto& reader = *readers_[connection];
    received_ += bytes.size();
    while (!bytes.empty()) {
      if (reader.blocked() && !reader.retry()) return;  // a paused socket: the rest is never read
      const auto target = reader.buffer();
      const auto n = std::min(target.size(), bytes.size());
      std::memcpy(target.data(), bytes.data(), n);
      reader.commit(n);
      bytes = bytes.subspan(n);
      consume_ready();
    }
  }

  void end() {
    for (auto& reader : readers_) reader->end_of_stream();
    outcome_.finished = reassembler_.all_goodbyes();
  }

  DecodeOutcome& outcome() { return outcome_; }

 private:
  void consume_ready() {
    // The memory limit may be exceeded by the one next-in-order message only.
    const auto ceiling = kFuzzMemoryLimit + MemoryBudget::charge_of(kFuzzMaxMessage, kMinChunkSize);
    if (reassembler_.buffered_bytes() > ceiling) {
      throw std::logic_error(
          fmt::format("reassembler holds {} bytes, above {}", reassembler_.buffered_bytes(), ceiling));
    }
    while (reassembler_.has_ready()) {
      const auto message = reassembler_.pop_ready();
      ++outcome_.messages;
      outcome_.bytes += message.size();
      outcome_.content_hash = fnv1a(message.bytes(), outcome_.content_hash);
    }
    if (outcome_.bytes > received_) {
      throw std::logic_error(fmt::format("delivered {} bytes from {} received", outcome_.bytes, received_));
    }
  }

  Reassembler reassembler_;
  std::vector<std::unique_ptr<FrameReader>> readers_;
  std::uint64_t received_ = 0;
  DecodeOutcome outcome_;
};

}  // namespace

std::uint64_t fnv1a(std::span<const std::byte> bytes, std::uint64_t hash) {
  for (const auto b : bytes) hash = (hash ^ std::to_integer<std::uint64_t>(b)) * 0x100000001b3ull;
  return hash;
}

DecodeOutcome decode_fuzz_input(std::span<const std::uint8_t> input) {
  DecodeOutcome rejected;
  if (input.size() < wire::kHelloSize) {
    rejected.error = fmt::format("input of {} bytes is shorter than a hello", input.size());
    return rejected;
  }
  const auto hello = wire::decode_hello(std::as_bytes(input.first<wire::kHelloSize>()));
  if (const auto verdict = wire::check(hello, true); !verdict.ok()) {
    rejected.error = verdict.reason;
    return rejected;
  }
  Harness harness(hello);
  try {
    auto rest = input.subspan(wire::kHelloSize);
    while (rest.size() >= 3) {
      const unsigned connection = rest[0] % hello.count;
      const std::size_t length = std::min<std::size_t>((rest[1] << 8) | rest[2], rest.size() - 3);
      harness.feed(connection, rest.subspan(3, length));
      rest = rest.subspan(3 + length);
    }
    harness.end();
  } catch (const TransportError& e) {
    harness.outcome().error = e.what();
  }
  return harness.outcome();
}

std::vector<std::uint8_t> make_fuzz_input(const wire::Hello& hello, const std::vector<Segment>& segments) {
  const auto head = wire::encode(hello);
  std::vector<std::uint8_t> out;
  for (const auto b : head) out.push_back(std::to_integer<std::uint8_t>(b));
  for (const auto& segment : segments) {
    std::span<const std::byte> rest = segment.bytes;
    do {
      const auto length = std::min<std::size_t>(rest.size(), 0xFFFF);
      out.push_back(static_cast<std::uint8_t>(segment.connection));
      out.push_back(static_cast<std::uint8_t>(length >> 8));
      out.push_back(static_cast<std::uint8_t>(length & 0xFF));
      for (const auto b : rest.first(length)) out.push_back(std::to_integer<std::uint8_t>(b));
      rest = rest.subspan(length);
    } while (!rest.empty());
  }
  return out;
}

}  // namespace wanlab::transport::fuzz
