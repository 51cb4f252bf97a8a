// The frame decoder's fuzzing entry point, shared by the libFuzzer target
// (transport/fuzz/frame_decoder_fuzz.cpp) and the unit test that replays
// tests/data/transport-corpus/.
//
// Input format: the peer's 40-byte hello, then segments of
//   [u8 connection][u16 length, big-endian][length bytes]
// each fed to connection (byte % hello count) exactly as if read from its
// socket; a truncated last segment carries what is left. The receiver runs
// with max_message_size kFuzzMaxMessage and receive_memory_limit
// kFuzzMemoryLimit, and consumes every message as soon as it is ready.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "wanlab/transport/wire.hpp"

namespace wanlab::transport::fuzz {

inline constexpr std::uint64_t kFuzzMaxMessage = 1u << 20;
inline constexpr std::uint64_t kFuzzMemoryLimit = 4u << 20;
/// FNV-1a 64 offset basis: content_hash of no bytes.
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;

struct DecodeOutcome {
  std::string error;                        ///< the TransportError's text; empty if none
  std::uint64_t messages = 0;               ///< whole messages delivered
  std::uint64_t bytes = 0;                  ///< their payload bytes
  std::uint64_t content_hash = kFnvOffset;  ///< FNV-1a over the delivered bytes, in order
  bool finished = false;                    ///< every connection said goodbye and ended cleanly
};

/// Decodes one input. Protocol violations end up in DecodeOutcome::error;
/// broken invariants of the decoder itself (memory held above the limit plus
/// one message, more payload delivered than received) throw std::logic_error,
/// which the fuzzer reports as a crash.
DecodeOutcome decode_fuzz_input(std::span<const std::uint8_t> input);

struct Segment {
  unsigned connection = 0;
  std::vector<std::byte> bytes;
};
/// Builds an input for decode_fuzz_input (segments longer than 65535 bytes are split).
std::vector<std::uint8_t> make_fuzz_input(const wire::Hello& hello, const std::vector<Segment>& segments);

/// FNV-1a 64 as used for content_hash, continuing from `hash`.
std::uint64_t fnv1a(std::span<const std::byte> bytes, std::uint64_t hash);

}  // namespace wanlab::transport::fuzz
