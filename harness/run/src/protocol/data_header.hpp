// The first bytes of every data message between workers: which iteration,
// which sender and what it is, so the receiver files it under the op that
// waits for it, whatever order messages of different peers arrive in.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace wanlab::harness::run_detail {

inline constexpr std::uint32_t kDataMagic = 0x504c4457;      // "WDLP"
inline constexpr std::uint32_t kIdentityMagic = 0x44494c57;  // "WLID"
inline constexpr std::size_t kDataHeaderBytes = 32;

struct DataHeader {
  int iteration = 0;
  int sender = 0;
  int microbatch = -1;  // point-to-point: the microbatch; -1 for allreduce
  int step = -1;        // allreduce: the ring step; -1 for point-to-point
  int sender_op = 0;    // the sender's op index
  // Payload bytes the message stands for but does not carry: messages between
  // workers on one host (GPUs of one server, NVLink) are modelled as free, as
  // in the simulator, instead of pushing them through loopback TCP.
  std::uint64_t modelled_bytes = 0;
};

std::array<std::byte, kDataHeaderBytes> encode_header(const DataHeader& header);
// Throws std::runtime_error saying what is wrong.
DataHeader decode_header(std::span<const std::byte> bytes);

// BubbleTea: a piece of a batch's KV cache from a prefill worker to the
// decode sink, followed by its zeros. A batch's pieces come in order on the
// worker's one channel; the last one completes the batch.
inline constexpr std::uint32_t kKvMagic = 0x43564b57;  // "WKVC"
inline constexpr std::size_t kKvHeaderBytes = 28;

struct KvHeader {
  int worker = 0;
  int batch = 0;
  int piece = 0;
  int pieces = 1;
  // > 0: a cache timed at its NVLink's rate, not sent (PrefillAssign::intra_host_bps):
  // the header alone stands for this many bytes.
  std::uint64_t modelled_bytes = 0;
};

std::array<std::byte, kKvHeaderBytes> encode_kv_header(const KvHeader& header);
// Throws std::runtime_error saying what is wrong.
KvHeader decode_kv_header(std::span<const std::byte> bytes);

// The first message on a channel names the connecting worker.
std::array<std::byte, 8> encode_identity(int worker);
std::optional<int> decode_identity(std::span<const std::byte> bytes);

}  // namespace wanlab::harness::run_detail
