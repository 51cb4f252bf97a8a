// CRC32C (Castagnoli), as used for optional per-chunk checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace wanlab::transport {

/// CRC32C of `data`, continuing from `crc` (0 to start). Uses SSE4.2 when the
/// CPU has it. crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;
/// The portable table-driven implementation (exposed so tests can compare).
std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

}  // namespace wanlab::transport
