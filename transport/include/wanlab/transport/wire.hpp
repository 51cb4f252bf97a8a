// The wire format of a channel. All integers are big-endian.
//
// Handshake: the connecting side sends a Hello on each of its N connections;
// the accepting side answers each with a Hello whose status says whether it
// accepted; a refusal is followed by reason_length bytes of UTF-8 text.
//
//   offset size field
//        0    4 magic "WLTP" (0x574C5450)
//        4    2 version (kProtocolVersion)
//        6    2 flags (0; reserved)
//        8    8 channel id (random, chosen by the connecting side)
//       16    2 connection index, 0..count-1
//       18    2 connection count, 1..64
//       20    4 chunk size the sender of this hello uses
//       24    8 largest message the sender of this hello accepts
//       32    2 status (HelloStatus; 0 in requests)
//       34    2 reason length (0 unless a refusal)
//       36    4 reserved (0)
//
// Then each connection carries frames in both directions: a 40-byte header,
// followed by `length` payload bytes.
//
//        0    4 magic "WLCK" (0x574C434B)
//        4    1 type (1 data, 2 goodbye)
//        5    1 flags (bit 0: checksum holds CRC32C of the payload)
//        6    2 reserved (0)
//        8    4 payload length
//       12    4 checksum
//       16    8 message id (data) / number of messages sent (goodbye)
//       24    8 message size
//       32    8 offset of this chunk in the message
//
// A message of size S is cut into ceil(S / chunk size) chunks (one empty chunk
// if S == 0); chunk k starts at k * chunk size. Each connection carries chunks
// in increasing (message id, offset) order; message ids count up from 0. A
// goodbye ends a connection's frames: the sender will send nothing more.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace wanlab::transport::wire {

inline constexpr std::uint32_t kHelloMagic = 0x574C5450;  // "WLTP"
inline constexpr std::uint32_t kChunkMagic = 0x574C434B;  // "WLCK"
inline constexpr std::uint16_t kProtocolVersion = 1;
inline constexpr std::size_t kHelloSize = 40;
inline constexpr std::size_t kChunkHeaderSize = 40;
inline constexpr std::size_t kMaxReasonLength = 512;

enum class HelloStatus : std::uint16_t {
  ok = 0,
  bad_magic = 1,
  bad_version = 2,
  bad_count = 3,
  bad_index = 4,
  bad_chunk_size = 5,
  bad_field = 6,       ///< a reserved field or flag is not zero, or a limit is 0
  group_mismatch = 7,  ///< differs from earlier connections of the same channel id
  duplicate_index = 8,
  busy = 9,  ///< too many handshakes in progress
};

const char* to_string(HelloStatus status);

struct Hello {
  std::uint32_t magic = kHelloMagic;
  std::uint16_t version = kProtocolVersion;
  std::uint16_t flags = 0;
  std::uint64_t channel_id = 0;
  std::uint16_t index = 0;
  std::uint16_t count = 0;
  std::uint32_t chunk_size = 0;
  std::uint64_t max_message_size = 0;
  HelloStatus status = HelloStatus::ok;
  std::uint16_t reason_length = 0;
  std::uint32_t reserved = 0;
};

using HelloBytes = std::array<std::byte, kHelloSize>;
HelloBytes encode(const Hello& hello);
/// Decodes the fields as they are; check() judges them.
Hello decode_hello(std::span<const std::byte, kHelloSize> bytes);

/// The verdict on a peer's hello: ok, or the status to answer with and a
/// one-line reason ("protocol version 2 is not supported (this side speaks 1)").
struct HelloVerdict {
  HelloStatus status = HelloStatus::ok;
  std::string reason;
  bool ok() const { return status == HelloStatus::ok; }
};
/// Checks magic, version, count, index, chunk size, limits and reserved fields.
/// `request`: a connecting side's hello (status and reason must be 0).
HelloVerdict check(const Hello& hello, bool request);

enum class FrameType : std::uint8_t { data = 1, goodbye = 2 };
inline constexpr std::uint8_t kFlagChecksum = 0x01;

struct ChunkHeader {
  FrameType type = FrameType::data;
  std::uint8_t flags = 0;
  std::uint32_t length = 0;
  std::uint32_t checksum = 0;
  std::uint64_t message_id = 0;
  std::uint64_t message_size = 0;
  std::uint64_t offset = 0;
};

using ChunkHeaderBytes = std::array<std::byte, kChunkHeaderSize>;
ChunkHeaderBytes encode(const ChunkHeader& header);
/// Decodes a header, checking what needs no context: magic, type, flags and
/// reserved bits; and that a goodbye has no payload. Throws
/// TransportError(protocol_error) naming the field.
ChunkHeader decode_chunk_header(std::span<const std::byte, kChunkHeaderSize> bytes);

/// Length of the chunk at `offset` of a message of `message_size` bytes.
std::uint32_t chunk_length(std::uint64_t message_size, std::uint64_t offset, std::uint32_t chunk_size);
/// Number of chunks of a message (1 for an empty message).
std::uint64_t chunk_count(std::uint64_t message_size, std::uint32_t chunk_size);

}  // namespace wanlab::transport::wire
