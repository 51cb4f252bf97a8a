#include "protocol/data_header.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace wanlab::harness::run_detail {
namespace {

void put(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint32_t get(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint32_t>(at[i]) << (8 * i);
  return v;
}
int get_int(const std::byte* at) { return static_cast<int>(static_cast<std::int32_t>(get(at))); }

}  // namespace

std::array<std::byte, kDataHeaderBytes> encode_header(const DataHeader& header) {
  std::array<std::byte, kDataHeaderBytes> bytes{};
  put(&bytes[0], kDataMagic);
  put(&bytes[4], static_cast<std::uint32_t>(header.iteration));
  put(&bytes[8], static_cast<std::uint32_t>(header.sender));
  put(&bytes[12], static_cast<std::uint32_t>(header.microbatch));
  put(&bytes[16], static_cast<std::uint32_t>(header.step));
  put(&bytes[20], static_cast<std::uint32_t>(header.sender_op));
  put(&bytes[24], static_cast<std::uint32_t>(header.modelled_bytes));
  put(&bytes[28], static_cast<std::uint32_t>(header.modelled_bytes >> 32));
  return bytes;
}

DataHeader decode_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kDataHeaderBytes)
    throw std::runtime_error(
        fmt::format("data message of {} bytes, shorter than its {}-byte header", bytes.size(), kDataHeaderBytes));
  if (get(&bytes[0]) != kDataMagic)
    throw std::runtime_error(fmt::format("data message with bad magic {:#x}", get(&bytes[0])));
  DataHeader header{get_int(&bytes[4]),  get_int(&bytes[8]),  get_int(&bytes[12]),
                    get_int(&bytes[16]), get_int(&bytes[20]), get(&bytes[24]) | std::uint64_t{get(&bytes[28])} << 32};
  if (header.iteration < 0 || header.sender < 0 || header.sender_op < 0 || header.microbatch < -1 || header.step < -1 ||
      (header.microbatch < 0) == (header.step < 0))
    throw std::runtime_error(
        fmt::format("data message with a bad header (iteration {}, sender {}, microbatch {}, step {}, op {})",
                    header.iteration, header.sender, header.microbatch, header.step, header.sender_op));
  if (header.modelled_bytes > 0 && bytes.size() != kDataHeaderBytes)
    throw std::runtime_error(fmt::format("data message standing for {} bytes also carries {}", header.modelled_bytes,
                                         bytes.size() - kDataHeaderBytes));
  return header;
}

std::array<std::byte, kKvHeaderBytes> encode_kv_header(const KvHeader& header) {
  std::array<std::byte, kKvHeaderBytes> bytes{};
  put(&bytes[0], kKvMagic);
  put(&bytes[4], static_cast<std::uint32_t>(header.worker));
  put(&bytes[8], static_cast<std::uint32_t>(header.batch));
  put(&bytes[12], static_cast<std::uint32_t>(header.piece));
  put(&bytes[16], static_cast<std::uint32_t>(header.pieces));
  put(&bytes[20], static_cast<std::uint32_t>(header.modelled_bytes));
  put(&bytes[24], static_cast<std::uint32_t>(header.modelled_bytes >> 32));
  return bytes;
}

KvHeader decode_kv_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kKvHeaderBytes)
    throw std::runtime_error(
        fmt::format("KV message of {} bytes, shorter than its {}-byte header", bytes.size(), kKvHeaderBytes));
  if (get(&bytes[0]) != kKvMagic)
    throw std::runtime_error(fmt::format("KV message with bad magic {:#x}", get(&bytes[0])));
  const KvHeader header{get_int(&bytes[4]), get_int(&bytes[8]), get_int(&bytes[12]), get_int(&bytes[16]),
                        get(&bytes[20]) | std::uint64_t{get(&bytes[24])} << 32};
  if (header.worker < 0 || header.batch < 0 || header.piece < 0 || header.pieces < 1 || header.piece >= header.pieces)
    throw std::runtime_error(fmt::format("KV message with a bad header (worker {}, batch {}, piece {} of {})",
                                         header.worker, header.batch, header.piece, header.pieces));
  if (header.modelled_bytes > 0 && bytes.size() != kKvHeaderBytes)
    throw std::runtime_error(fmt::format("KV message standing for {} bytes also carries {}", header.modelled_bytes,
                                         bytes.size() - kKvHeaderBytes));
  return header;
}

std::array<std::byte, 8> encode_identity(int worker) {
  std::array<std::byte, 8> bytes{};
  put(&bytes[0], kIdentityMagic);
  put(&bytes[4], static_cast<std::uint32_t>(worker));
  return bytes;
}

std::optional<int> decode_identity(std::span<const std::byte> bytes) {
  if (bytes.size() != 8 || get(&bytes[0]) != kIdentityMagic || get_int(&bytes[4]) < 0) return std::nullopt;
  return get_int(&bytes[4]);
}

}  // namespace wanlab::harness::run_detail
