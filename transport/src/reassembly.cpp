#include "wanlab/transport/reassembly.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <utility>

#include "wanlab/transport/crc32c.hpp"
#include "wanlab/transport/error.hpp"

namespace wanlab::transport {
namespace {

// Ids further ahead than this are garbage, not a busy honest sender.
constexpr std::uint64_t kMaxIdsAhead = 1ull << 32;

[[noreturn]] void violation(const std::string& what) { throw TransportError(Errc::protocol_error, what); }

}  // namespace

Reassembler::Reassembler(ReceiveLimits limits, unsigned connections)
    : limits_(limits),
      own_budget_(limits.budget ? nullptr : std::make_unique<MemoryBudget>(UINT64_MAX)),
      budget_(limits.budget ? limits.budget : own_budget_.get()),
      max_ids_ahead_(kMaxIdsAhead),
      last_chunk_(connections),
      goodbye_seen_(connections, false) {
  budget_->reserve_headroom(charge(limits_.max_message_size));
}

Reassembler::~Reassembler() {
  for (const auto& [id, pending] : pending_) budget_->release(pending.charge);
  for (const auto& ready : ready_) budget_->release(charge(ready.message.size()));
}

void Reassembler::check_header(unsigned connection, const wire::ChunkHeader& header) const {
  const auto id = header.message_id;
  if (goodbye_seen_.at(connection)) violation(fmt::format("message {} arrived after this connection's goodbye", id));
  if (header.message_size > limits_.max_message_size) {
    throw TransportError(Errc::message_too_large, fmt::format("message {} declares {} bytes, above the limit of {}", id,
                                                              header.message_size, limits_.max_message_size));
  }
  if (header.offset % limits_.chunk_size != 0) {
    violation(fmt::format("message {}: chunk offset {} is not a multiple of the chunk size {}", id, header.offset,
                          limits_.chunk_size));
  }
  if (header.offset >= header.message_size && !(header.offset == 0 && header.message_size == 0)) {
    violation(fmt::format("message {}: chunk offset {} is outside the message's {} bytes", id, header.offset,
                          header.message_size));
  }
  const auto expected = wire::chunk_length(header.message_size, header.offset, limits_.chunk_size);
  if (header.length != expected) {
    violation(fmt::format("message {}: chunk at offset {} has length {}, expected {}", id, header.offset, header.length,
                          expected));
  }
  if (id < next_deliver_) violation(fmt::format("message {} was already delivered", id));
  if (id - next_deliver_ > max_ids_ahead_) {
    violation(fmt::format("message id {} is implausibly far ahead of the next expected message {}", id, next_deliver_));
  }
  if (peer_message_count_ && id >= *peer_message_count_) {
    violation(fmt::format("message {} arrived after the peer said goodbye having sent {} messages", id,
                          *peer_message_count_));
  }
  const auto& last = last_chunk_.at(connection);
  if (last.any && (id < last.message_id || (id == last.message_id && header.offset <= last.offset))) {
    violation(fmt::format("message {} offset {} arrived after message {} offset {} on the same connection", id,
                          header.offset, last.message_id, last.offset));
  }
}

Reassembler::Pending* Reassembler::find_or_allocate(const wire::ChunkHeader& header) {
  const auto id = header.message_id;
  if (auto it = pending_.find(id); it != pending_.end()) {
    if (it->second.data.size() != header.message_size) {
      violation(fmt::format("message {}: chunk says the message has {} bytes, an earlier chunk said {}", id,
                            header.message_size, it->second.data.size()));
    }
    return &it->second;
  }
  // The next message in order always gets memory when nothing waits for
  // receive(), or a full budget could wait forever for its own head. In the
  // shared budget it may use the headroom the other messages leave.
  const bool next_in_order = id == next_deliver_ && ready_.empty();
  const auto cost = charge(header.message_size);
  if (buffered_ + cost > limits_.memory_limit && !next_in_order) return nullptr;
  if (!budget_->try_charge(cost, next_in_order)) return nullptr;

  Pending pending;
  pending.charge = cost;
  pending.first_chunk_at = std::chrono::steady_clock::now();
  const auto chunks = wire::chunk_count(header.message_size, limits_.chunk_size);
  try {
    pending.data = Message::for_receiving(header.message_size);
    pending.received.assign(chunks, false);
    if (pending.data.grows_huge_pages()) {
      const auto regions = (header.message_size - 1) / Message::kHugePageRegion + 1;
      pending.region_finished.assign(regions, 0);
      pending.region_decided.assign(regions, 0);
    }
  } catch (const std::bad_alloc&) {
    budget_->release(cost);
    throw TransportError(Errc::message_too_large,
                         fmt::format("message {}: cannot allocate {} bytes", id, header.message_size));
  }
  pending.chunks_left = chunks;
  buffered_ += cost;
  return &pending_.emplace(id, std::move(pending)).first->second;
}

// A peer may put a chunk anywhere in a message it declared, so a sparse peer
// could fault a 2 MiB huge page for every 1 KiB it sends (a 1 GiB message, 532
// KiB sent, 1 GB resident). So a mapped buffer starts with small pages, and the
// first chunk to land in a 2 MiB region decides that region once: huge pages
// if the kLookBackRegions regions before it (fewer near the start) already
// hold at least half their size in finished chunks, counting the deciding
// chunk's own bytes before the region (it writes them first), else 4 KiB
// pages for good.
//
// Why this bounds memory: every huge region needs half of its look-back
// window's bytes, and each finished byte lies in the window of at most
// kLookBackRegions regions, so a message's huge pages stay within 4x its
// finished bytes (2x where windows are whole; the shorter windows near the
// start bring the rest), plus one region per chunk still arriving (the region
// its end lies in, which the next chunk may touch before this one's bytes are
// written; the regions inside a chunk are touched by it alone). Small pages
// cost at most two 4 KiB pages per chunk. A correct sender hands chunks out in
// order; whatever order they arrive in over N connections, a region's
// window is nearly full when its first chunk comes, so nearly every region
// gets a huge page: the 1 GiB message keeps its 512 faults instead of 262144,
// even with a connection lagging far behind. A region judged wrongly costs a
// page fault per 4 KiB, never correctness.
void Reassembler::decide_huge_pages(Pending& pending, const wire::ChunkHeader& header) {
  constexpr std::uint64_t region_size = Message::kHugePageRegion;
  const auto end = header.offset + header.length;
  for (auto region = header.offset / region_size; region * region_size < end; ++region) {
    if (pending.region_decided[region] != 0) continue;
    const auto from = region > kLookBackRegions ? region - kLookBackRegions : 0;
    std::uint64_t vouched = 0;
    for (auto before = from; before < region; ++before) vouched += pending.region_finished[before];
    const auto own_start = std::max(header.offset, from * region_size);
    const auto own_end = std::min(end, region * region_size);
    if (own_end > own_start) vouched += own_end - own_start;
    const bool huge = region > 0 && 2 * vouched >= (region - from) * region_size;
    pending.region_decided[region] = huge ? 1 : 2;
    if (huge) pending.data.allow_huge_pages(region);
  }
}

void Reassembler::count_finished(Pending& pending, const wire::ChunkHeader& header) {
  constexpr std::uint64_t region_size = Message::kHugePageRegion;
  auto offset = header.offset;
  const auto end = header.offset + header.length;
  while (offset < end) {
    const auto region = offset / region_size;
    const auto part = std::min(end, (region + 1) * region_size) - offset;
    pending.region_finished[region] += static_cast<std::uint32_t>(part);
    offset += part;
  }
}

std::optional<std::span<std::byte>> Reassembler::begin_chunk(unsigned connection, const wire::ChunkHeader& header) {
  check_header(connection, header);
  Pending* pending = find_or_allocate(header);
  if (pending == nullptr) return std::nullopt;
  const auto index = header.offset / limits_.chunk_size;
  if (pending->received[index]) {
    violation(fmt::format("message {}: duplicate chunk at offset {}", header.message_id, header.offset));
  }
  pending->received[index] = true;
  last_chunk_[connection] = {header.message_id, header.offset, true};
  if (pending->data.grows_huge_pages()) decide_huge_pages(*pending, header);
  return pending->data.bytes().subspan(header.offset, header.length);
}

void Reassembler::finish_chunk(const wire::ChunkHeader& header) {
  auto it = pending_.find(header.message_id);
  if (it == pending_.end() || it->second.chunks_left == 0) {
    throw std::logic_error(fmt::format("finish_chunk: message {} has no chunk in progress", header.message_id));
  }
  if (it->second.data.grows_huge_pages()) count_finished(it->second, header);
  if (--it->second.chunks_left == 0) {
    ++completed_;
    deliver_in_order();
  }
}

void Reassembler::deliver_in_order() {
  while (!pending_.empty() && pending_.begin()->first == next_deliver_ && pending_.begin()->second.chunks_left == 0) {
    Pending& done = pending_.begin()->second;
    ready_.push_back(Received{std::move(done.data), done.first_chunk_at});
    pending_.erase(pending_.begin());
    ++next_deliver_;
    ++memory_epoch_;
  }
}

Received Reassembler::pop_received() {
  Received ready = std::move(ready_.front());
  ready_.pop_front();
  const auto cost = charge(ready.message.size());
  buffered_ -= cost;
  ++memory_epoch_;
  budget_->release(cost);
  return ready;
}

std::uint64_t Reassembler::resident_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [id, pending] : pending_) total += pending.data.resident_bytes();
  for (const auto& ready : ready_) total += ready.message.resident_bytes();
  return total;
}

void Reassembler::goodbye(unsigned connection, std::uint64_t messages_sent) {
  if (goodbye_seen_.at(connection)) violation("second goodbye on one connection");
  if (peer_message_count_ && *peer_message_count_ != messages_sent) {
    violation(fmt::format("goodbye says {} messages were sent, another connection's goodbye said {}", messages_sent,
                          *peer_message_count_));
  }
  for (const auto& last : last_chunk_) {
    if (last.any && last.message_id >= messages_sent) {
      violation(
          fmt::format("goodbye says {} messages were sent, but message {} arrived", messages_sent, last.message_id));
    }
  }
  peer_message_count_ = messages_sent;
  goodbye_seen_[connection] = true;
  ++goodbyes_;
  if (all_goodbyes() && (next_deliver_ != messages_sent || !pending_.empty())) {
    violation(fmt::format("the peer said goodbye having sent {} messages, but only {} arrived whole", messages_sent,
                          next_deliver_));
  }
}

FrameReader::FrameReader(Reassembler& reassembler, unsigned connection)
    : reassembler_(reassembler), connection_(connection) {}

std::span<std::byte> FrameReader::buffer() {
  switch (state_) {
    case State::header: return std::span<std::byte>(header_bytes_).subspan(filled_);
    case State::payload: return payload_.subspan(filled_);
    case State::blocked: return {};
    case State::after_goodbye: return trailing_;
  }
  return {};
}

void FrameReader::commit(std::size_t n) {
  switch (state_) {
    case State::header:
      filled_ += n;
      if (filled_ == header_bytes_.size()) {
        filled_ = 0;
        on_header();
      }
      return;
    case State::payload:
      filled_ += n;
      if (filled_ == payload_.size()) on_payload();
      return;
    case State::blocked: throw std::logic_error("FrameReader::commit while blocked");
    case State::after_goodbye: violation(fmt::format("{} bytes of data after the goodbye", n));
  }
}

void FrameReader::on_header() {
  header_ = wire::decode_chunk_header(header_bytes_);
  if (header_.type == wire::FrameType::goodbye) {
    reassembler_.goodbye(connection_, header_.message_id);
    state_ = State::after_goodbye;
    return;
  }
  state_ = State::blocked;
  retry();
}

bool FrameReader::retry() {
  if (state_ != State::blocked) return true;
  auto destination = reassembler_.begin_chunk(connection_, header_);
  if (!destination) return false;
  payload_ = *destination;
  filled_ = 0;
  state_ = State::payload;
  if (payload_.empty()) on_payload();
  return true;
}

void FrameReader::on_payload() {
  if ((header_.flags & wire::kFlagChecksum) != 0) {
    const auto actual = crc32c(payload_);
    if (actual != header_.checksum) {
      throw TransportError(Errc::checksum_mismatch,
                           fmt::format("message {}: chunk at offset {}: checksum 0x{:08x} in the header, 0x{:08x} "
                                       "computed over the payload",
                                       header_.message_id, header_.offset, header_.checksum, actual));
    }
  }
  reassembler_.finish_chunk(header_);
  ++chunks_;
  payload_bytes_ += payload_.size();
  filled_ = 0;
  state_ = State::header;
}

void FrameReader::end_of_stream() {
  switch (state_) {
    case State::after_goodbye: return;
    case State::header:
      if (filled_ == 0) violation("the peer closed the connection without a goodbye");
      violation(fmt::format("the peer closed the connection {} bytes into a frame header", filled_));
    case State::payload:
    case State::blocked:
      violation(
          fmt::format("the peer closed the connection in the middle of message {} (chunk at offset {}, "
                      "{} of {} payload bytes)",
                      header_.message_id, header_.offset, filled_, header_.length));
  }
}

}  // namespace wanlab::transport
