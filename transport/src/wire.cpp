#include "wanlab/transport/wire.hpp"

#include <fmt/format.h>

#include "wanlab/transport/error.hpp"
#include "wanlab/transport/options.hpp"

namespace wanlab::transport::wire {
namespace {

template <typename T>
void store(std::byte* at, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    at[i] = static_cast<std::byte>((value >> (8 * (sizeof(T) - 1 - i))) & 0xFF);
  }
}

template <typename T>
T load(const std::byte* at) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value = static_cast<T>((value << 8) | std::to_integer<T>(at[i]));
  return value;
}

[[noreturn]] void malformed(const std::string& what) { throw TransportError(Errc::protocol_error, what); }

}  // namespace

const char* to_string(HelloStatus status) {
  switch (status) {
    case HelloStatus::ok: return "ok";
    case HelloStatus::bad_magic: return "bad magic";
    case HelloStatus::bad_version: return "unsupported protocol version";
    case HelloStatus::bad_count: return "bad connection count";
    case HelloStatus::bad_index: return "bad connection index";
    case HelloStatus::bad_chunk_size: return "bad chunk size";
    case HelloStatus::bad_field: return "bad field";
    case HelloStatus::group_mismatch: return "mismatch with the channel's other connections";
    case HelloStatus::duplicate_index: return "duplicate connection index";
    case HelloStatus::busy: return "busy";
  }
  return "unknown status";
}

HelloBytes encode(const Hello& hello) {
  HelloBytes out{};
  store(&out[0], hello.magic);
  store(&out[4], hello.version);
  store(&out[6], hello.flags);
  store(&out[8], hello.channel_id);
  store(&out[16], hello.index);
  store(&out[18], hello.count);
  store(&out[20], hello.chunk_size);
  store(&out[24], hello.max_message_size);
  store(&out[32], static_cast<std::uint16_t>(hello.status));
  store(&out[34], hello.reason_length);
  store(&out[36], hello.reserved);
  return out;
}

Hello decode_hello(std::span<const std::byte, kHelloSize> bytes) {
  Hello hello;
  hello.magic = load<std::uint32_t>(&bytes[0]);
  hello.version = load<std::uint16_t>(&bytes[4]);
  hello.flags = load<std::uint16_t>(&bytes[6]);
  hello.channel_id = load<std::uint64_t>(&bytes[8]);
  hello.index = load<std::uint16_t>(&bytes[16]);
  hello.count = load<std::uint16_t>(&bytes[18]);
  hello.chunk_size = load<std::uint32_t>(&bytes[20]);
  hello.max_message_size = load<std::uint64_t>(&bytes[24]);
  hello.status = static_cast<HelloStatus>(load<std::uint16_t>(&bytes[32]));
  hello.reason_length = load<std::uint16_t>(&bytes[34]);
  hello.reserved = load<std::uint32_t>(&bytes[36]);
  return hello;
}

HelloVerdict check(const Hello& hello, bool request) {
  if (hello.magic != kHelloMagic) {
    return {HelloStatus::bad_magic, fmt::format("bad magic 0x{:08x} (expected 0x{:08x}): not a wanlab transport peer",
                                                hello.magic, kHelloMagic)};
  }
  if (hello.version != kProtocolVersion) {
    return {HelloStatus::bad_version,
            fmt::format("protocol version {} is not supported (this side speaks {})", hello.version, kProtocolVersion)};
  }
  if (hello.count < 1 || hello.count > kMaxConnections) {
    return {HelloStatus::bad_count,
            fmt::format("connection count {} is out of range (1..{})", hello.count, kMaxConnections)};
  }
  if (hello.index >= hello.count) {
    return {HelloStatus::bad_index,
            fmt::format("connection index {} is not below the connection count {}", hello.index, hello.count)};
  }
  if (hello.chunk_size < kMinChunkSize || hello.chunk_size > kMaxChunkSize) {
    return {HelloStatus::bad_chunk_size,
            fmt::format("chunk size {} is out of range ({}..{})", hello.chunk_size, kMinChunkSize, kMaxChunkSize)};
  }
  if (hello.max_message_size == 0) return {HelloStatus::bad_field, "max message size is 0"};
  if (hello.flags != 0 || hello.reserved != 0) {
    return {HelloStatus::bad_field, fmt::format("reserved fields are not zero (flags 0x{:04x}, reserved 0x{:08x})",
                                                hello.flags, hello.reserved)};
  }
  if (request && (hello.status != HelloStatus::ok || hello.reason_length != 0)) {
    return {HelloStatus::bad_field, fmt::format("a request carries status {} and reason length {}",
                                                static_cast<unsigned>(hello.status), hello.reason_length)};
  }
  return {};
}

ChunkHeaderBytes encode(const ChunkHeader& header) {
  ChunkHeaderBytes out{};
  store(&out[0], kChunkMagic);
  out[4] = static_cast<std::byte>(header.type);
  out[5] = static_cast<std::byte>(header.flags);
  store(&out[6], std::uint16_t{0});
  store(&out[8], header.length);
  store(&out[12], header.checksum);
  store(&out[16], header.message_id);
  store(&out[24], header.message_size);
  store(&out[32], header.offset);
  return out;
}

ChunkHeader decode_chunk_header(std::span<const std::byte, kChunkHeaderSize> bytes) {
  const auto magic = load<std::uint32_t>(&bytes[0]);
  if (magic != kChunkMagic) {
    malformed(
        fmt::format("frame header has bad magic 0x{:08x} (expected 0x{:08x}): stream out of sync", magic, kChunkMagic));
  }
  ChunkHeader header;
  const auto type = std::to_integer<std::uint8_t>(bytes[4]);
  if (type != static_cast<std::uint8_t>(FrameType::data) && type != static_cast<std::uint8_t>(FrameType::goodbye)) {
    malformed(fmt::format("frame header has unknown type {}", type));
  }
  header.type = static_cast<FrameType>(type);
  header.flags = std::to_integer<std::uint8_t>(bytes[5]);
  if ((header.flags & ~kFlagChecksum) != 0)
    malformed(fmt::format("frame header has unknown flags 0x{:02x}", header.flags));
  if (const auto reserved = load<std::uint16_t>(&bytes[6]); reserved != 0) {
    malformed(fmt::format("frame header has reserved field 0x{:04x}, expected 0", reserved));
  }
  header.length = load<std::uint32_t>(&bytes[8]);
  header.checksum = load<std::uint32_t>(&bytes[12]);
  header.message_id = load<std::uint64_t>(&bytes[16]);
  header.message_size = load<std::uint64_t>(&bytes[24]);
  header.offset = load<std::uint64_t>(&bytes[32]);
  if (header.type == FrameType::goodbye &&
      (header.length != 0 || header.message_size != 0 || header.offset != 0 || header.flags != 0)) {
    malformed(fmt::format("goodbye frame carries length {}, size {}, offset {}, flags {} (all must be 0)",
                          header.length, header.message_size, header.offset, header.flags));
  }
  return header;
}

std::uint32_t chunk_length(std::uint64_t message_size, std::uint64_t offset, std::uint32_t chunk_size) {
  if (offset >= message_size) return 0;
  const auto left = message_size - offset;
  return left < chunk_size ? static_cast<std::uint32_t>(left) : chunk_size;
}

std::uint64_t chunk_count(std::uint64_t message_size, std::uint32_t chunk_size) {
  if (message_size == 0) return 1;
  return message_size / chunk_size + (message_size % chunk_size != 0 ? 1 : 0);
}

}  // namespace wanlab::transport::wire
