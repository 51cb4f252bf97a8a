// What a peer can make the receiver hold, without sockets: the shared
// MemoryBudget's rules, huge pages only where bytes arrived (checked with
// mincore and /proc/self/smaps), and a fuzz-style run that feeds several
// reassemblers sharing one budget with sparse, oversized and slow input and
// checks the charged and the resident memory after every step.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "unit/transport_support.hpp"
#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/error.hpp"
#include "wanlab/transport/options.hpp"
#include "wanlab/transport/reassembly.hpp"

namespace wt = wanlab::transport;
namespace wire = wt::wire;
using wt::MemoryBudget;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// The chunk at `offset` of a message sent in `chunk_size` chunks.
wire::ChunkHeader chunk_header(std::uint64_t id, std::uint64_t size, std::uint64_t offset, std::uint32_t chunk_size) {
  return transport_test::data(id, size, offset, wire::chunk_length(size, offset, chunk_size));
}

// Begins a chunk and writes its payload, as a FrameReader would.
bool put(wt::Reassembler& r, unsigned connection, const wire::ChunkHeader& h) {
  auto destination = r.begin_chunk(connection, h);
  if (!destination) return false;
  std::memset(destination->data(), 0x5A, destination->size());
  r.finish_chunk(h);
  return true;
}

bool transparent_huge_pages_available() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return !text.empty() && text.find("[never]") == std::string::npos;
}

// AnonHugePages of the mappings that overlap [begin, begin + size), from /proc/self/smaps.
std::uint64_t anon_huge_bytes(const void* begin, std::size_t size) {
  const auto low = reinterpret_cast<std::uintptr_t>(begin);
  const auto high = low + size;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  std::uint64_t total = 0;
  while (std::getline(smaps, line)) {
    std::uintptr_t start = 0, end = 0;
    char dash = 0;
    std::istringstream fields(line);
    if (line.find("AnonHugePages:") == 0) {
      std::uint64_t kib = 0;
      std::string key;
      fields >> key >> kib;
      if (inside) total += kib << 10;
    } else if (fields >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start < high && end > low;
    }
  }
  return total;
}

}  // namespace

BOOST_AUTO_TEST_CASE(budget_charges_whole_messages_and_keeps_headroom_for_the_next_in_order) {
  // A charge is the bytes, a bit per chunk, 8 bytes per 2 MiB and a fixed overhead.
  BOOST_CHECK_EQUAL(MemoryBudget::charge_of(0, 1024), 8u + 8u + 128u);
  BOOST_CHECK_EQUAL(MemoryBudget::charge_of(1ull << 30, 1024), (1ull << 30) + 128 * 1024 + 513 * 8 + 128);
  BOOST_CHECK_EQUAL(MemoryBudget::charge_of(UINT64_MAX, 1024), UINT64_MAX);  // saturates instead of wrapping
  // largest_message() is the inverse, at the smallest chunk size.
  for (const std::uint64_t size : std::initializer_list<std::uint64_t>{1, 1000, 64 * kMiB, 1ull << 30, 1ull << 34}) {
    const auto charge = MemoryBudget::charge_of(size, wt::kMinChunkSize);
    BOOST_CHECK_EQUAL(MemoryBudget::largest_message(charge), size);
    BOOST_CHECK_EQUAL(MemoryBudget::largest_message(charge - 1), size - 1);
  }
  BOOST_CHECK_EQUAL(MemoryBudget::largest_message(100), 0u);
  // The default budget holds two messages of the default largest size.
  BOOST_CHECK_EQUAL(MemoryBudget::largest_message(wt::kDefaultMemoryBudget / 2), wt::kDefaultMaxMessageSize);

  MemoryBudget budget(1000);
  budget.reserve_headroom(400);
  BOOST_CHECK(budget.try_charge(600, false));  // leaves the 400 of headroom
  BOOST_CHECK(!budget.try_charge(1, false));   // would eat into it
  BOOST_CHECK(budget.try_charge(400, true));   // a next-in-order message may use it
  BOOST_CHECK(!budget.try_charge(1, true));    // but never the limit
  BOOST_CHECK_EQUAL(budget.used(), 1000u);
  int woken = 0;
  budget.on_next_release(&woken, [&] { ++woken; });
  budget.on_next_release(&woken, [&] { woken += 10; });  // replaces the first
  const auto epoch = budget.epoch();
  budget.release(400);
  BOOST_CHECK_EQUAL(woken, 10);
  BOOST_CHECK_GT(budget.epoch(), epoch);
  budget.release(100);
  BOOST_CHECK_EQUAL(woken, 10);  // once only
  BOOST_CHECK_EQUAL(budget.used(), 500u);
  BOOST_CHECK_EQUAL(budget.peak(), 1000u);
  BOOST_CHECK_THROW(budget.release(501), std::logic_error);
}

BOOST_AUTO_TEST_CASE(options_refuse_a_budget_that_cannot_hold_one_largest_message) {
  wt::ChannelOptions options;
  BOOST_CHECK_NO_THROW(wt::validate(options));
  options.memory_budget = 64 * kMiB;
  try {
    wt::validate(options);
    BOOST_FAIL("a 64 MiB budget for 1 GiB messages was accepted");
  } catch (const wt::TransportError& e) {
    BOOST_CHECK_MESSAGE(std::string(e.what()).find("memory_budget: 67108864 bytes cannot hold one message of "
                                                   "max_message_size 1073741824") != std::string::npos,
                        e.what());
  }
  options.shared_memory_budget = std::make_shared<MemoryBudget>(2ull << 30);
  BOOST_CHECK_NO_THROW(wt::validate(options));  // the shared budget's limit counts, not memory_budget
  options.idle_timeout = std::chrono::milliseconds(-1);
  BOOST_CHECK_THROW(wt::validate(options), wt::TransportError);
}

BOOST_AUTO_TEST_CASE(reassemblers_sharing_a_budget_stay_within_it_and_give_it_back) {
  constexpr std::uint32_t chunk = 4096;
  constexpr std::uint64_t size = 100'000;
  const auto one = MemoryBudget::charge_of(size, chunk);
  MemoryBudget budget(3 * one);
  auto a = std::make_unique<wt::Reassembler>(wt::ReceiveLimits{chunk, size, 1ull << 30, &budget}, 1);
  auto b = std::make_unique<wt::Reassembler>(wt::ReceiveLimits{chunk, size, 1ull << 30, &budget}, 1);
  BOOST_CHECK_EQUAL(budget.headroom(), one);
  // Channel a's next message, then one more: the second leaves the headroom free.
  BOOST_CHECK(put(*a, 0, chunk_header(0, size, 0, chunk)));
  BOOST_CHECK(put(*a, 0, chunk_header(1, size, 0, chunk)));
  BOOST_CHECK_EQUAL(budget.used(), 2 * one);
  BOOST_CHECK(!a->begin_chunk(0, chunk_header(2, size, 0, chunk)).has_value());  // would take b's headroom
  // Channel b's next message may use the headroom...
  BOOST_CHECK(put(*b, 0, chunk_header(0, size, 0, chunk)));
  BOOST_CHECK_EQUAL(budget.used(), 3 * one);
  // ...and then nothing fits, next in order or not, until something is released.
  BOOST_CHECK(!b->begin_chunk(0, chunk_header(1, size, 0, chunk)).has_value());
  const auto epoch = budget.epoch();
  a.reset();  // a channel that ends gives back what it held
  BOOST_CHECK_EQUAL(budget.used(), one);
  BOOST_CHECK_GT(budget.epoch(), epoch);
  BOOST_CHECK(put(*b, 0, chunk_header(1, size, 0, chunk)));
  BOOST_CHECK_EQUAL(budget.used(), 2 * one);
  BOOST_CHECK_EQUAL(budget.peak(), 3 * one);
  b.reset();
  BOOST_CHECK_EQUAL(budget.used(), 0u);
}

BOOST_AUTO_TEST_CASE(sparse_chunks_commit_small_pages_and_in_order_chunks_huge_ones) {
  constexpr std::uint32_t chunk = 1024;
  constexpr std::uint64_t size = 256 * kMiB;
  wt::Reassembler r({chunk, size, 1ull << 30, nullptr}, 1);
  // The huge-page attack: 1 KiB chunks 2 MiB apart, each would fault a huge page.
  std::uint64_t received = 0;
  for (std::uint64_t offset = 0; offset < size; offset += 2 * kMiB) {
    BOOST_REQUIRE(put(r, 0, chunk_header(0, size, offset, chunk)));
    received += chunk;
  }
  const auto resident = r.resident_bytes();
  BOOST_TEST_MESSAGE("sparse: " << received << " bytes received, " << resident << " resident");
  BOOST_CHECK_LE(resident, 4 * received);  // one 4 KiB page per 1 KiB chunk (was 2 MiB each)

  // The same buffer size filled in order over 4 connections gets huge pages.
  if (!transparent_huge_pages_available()) {
    BOOST_TEST_MESSAGE("transparent huge pages are off here: the in-order half is not checked");
    return;
  }
  constexpr std::uint32_t big_chunk = 256 * 1024;
  wt::Reassembler in_order({big_chunk, size, 1ull << 30, nullptr}, 4);
  unsigned connection = 0;
  for (std::uint64_t offset = 0; offset < size; offset += big_chunk) {
    BOOST_REQUIRE(put(in_order, connection, chunk_header(0, size, offset, big_chunk)));
    connection = (connection + 1) % 4;
  }
  BOOST_REQUIRE(in_order.has_ready());
  const auto message = in_order.pop_ready();
  const auto huge = anon_huge_bytes(message.data(), message.size());
  BOOST_TEST_MESSAGE("in order: " << huge << " of " << size << " bytes in huge pages");
  BOOST_CHECK_GE(huge, size / 2);  // 254 of 256 MiB when the kernel has free huge pages
}

BOOST_AUTO_TEST_CASE(a_chunk_far_ahead_of_a_gap_gets_huge_pages_when_the_bytes_before_it_arrived) {
  // A correct sender's stalled connection leaves one gap; what follows still fills densely.
  constexpr std::uint32_t chunk = 256 * 1024;
  constexpr std::uint64_t size = 64 * kMiB;
  wt::Reassembler r({chunk, size, 1ull << 30, nullptr}, 2);
  for (std::uint64_t offset = chunk; offset < size; offset += chunk) {
    BOOST_REQUIRE(put(r, 1, chunk_header(0, size, offset, chunk)));
  }
  BOOST_REQUIRE(put(r, 0, chunk_header(0, size, 0, chunk)));  // the stalled connection's chunk, last
  BOOST_REQUIRE(r.has_ready());
  const auto message = r.pop_ready();
  if (transparent_huge_pages_available()) BOOST_CHECK_GE(anon_huge_bytes(message.data(), size), size / 2);
  BOOST_CHECK_EQUAL(message.resident_bytes(), size);
}

namespace {

// One receiving channel of the fuzz run, and what its lying peer sent so far.
struct Receiver {
  struct Position {
    std::uint64_t id = 0, offset = 0;
    bool any = false;
  };
  Receiver(const wt::ReceiveLimits& limits, unsigned connections)
      : chunk_size(limits.chunk_size),
        reassembler(std::make_unique<wt::Reassembler>(limits, connections)),
        last(connections) {
    for (unsigned i = 0; i < connections; ++i) readers.emplace_back(*reassembler, i);
  }
  std::uint32_t chunk_size;
  std::unique_ptr<wt::Reassembler> reassembler;
  std::vector<wt::FrameReader> readers;
  std::vector<Position> last;                    // per connection: its last frame, so the next one follows it
  std::map<std::uint64_t, std::uint64_t> sizes;  // declared size of each message id
  std::uint64_t written = 0;                     // bytes the peer got into us
  std::uint64_t frames = 0;                      // frames begun (each may be a short last chunk on a page of its own)
};

// A peer that lies within what one connection's order allows: chunks anywhere
// in messages declared up to and over the limit, dense runs and sparse jumps,
// several messages at once, the odd false length, and bytes dribbled in
// slices of any length.
class Liar {
 public:
  Liar(std::uint64_t seed, std::uint64_t max_message) : random_(seed), max_message_(max_message) {}

  std::vector<std::byte> next_frame(Receiver& receiver, unsigned connection) {
    const auto chunk_size = receiver.chunk_size;
    auto& last = receiver.last[connection];
    auto id = std::max(last.id, receiver.reassembler->next_message_id()) + below(3);
    auto& size = receiver.sizes.try_emplace(id, declared_size(chunk_size)).first->second;
    const auto chunks = wire::chunk_count(size, chunk_size);
    auto index = below(chunks);
    if (last.any && id == last.id) {
      const auto after = last.offset / chunk_size + 1;
      if (after >= chunks) return next_frame_after(receiver, connection);
      // Half the time the next chunk (dense runs earn huge pages), else anywhere after it.
      index = below(2) == 0 ? after : after + below(chunks - after);
    }
    auto header = chunk_header(id, size, chunk_size * index, chunk_size);
    if (below(100) == 0) header.length += 1;  // a lie about the length
    last = {id, header.offset, true};
    const auto head = wire::encode(header);
    std::vector<std::byte> frame(head.begin(), head.end());
    frame.resize(frame.size() + header.length, std::byte{0x33});
    return frame;
  }
  std::size_t slice(std::size_t left) { return 1 + below(std::min<std::uint64_t>(left, below(2) ? 7 : 70000)); }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : random_() % n; }

 private:
  std::uint64_t declared_size(std::uint32_t chunk_size) {
    const auto pick = below(100);
    if (pick < 5) return max_message_ + 1 + below(max_message_);   // over the limit
    if (pick < 60) return max_message_ - below(max_message_ / 2);  // mapped, up to the limit
    return below(4 * chunk_size);                                  // small
  }
  std::vector<std::byte> next_frame_after(Receiver& receiver, unsigned connection) {
    receiver.last[connection].offset = 0;
    ++receiver.last[connection].id;  // the next message on this connection
    receiver.last[connection].any = false;
    return next_frame(receiver, connection);
  }

  std::mt19937_64 random_;
  std::uint64_t max_message_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(sparse_oversized_and_slow_input_never_exceeds_the_budget_or_the_resident_bound) {
  constexpr std::uint64_t max_message = 24 * kMiB;
  constexpr unsigned connections = 3;
  const auto one = MemoryBudget::charge_of(max_message, wt::kMinChunkSize);
  MemoryBudget budget(3 * one);
  // 1 KiB chunks as in the huge-page attack; larger ones fill regions densely enough for huge pages.
  std::vector<std::unique_ptr<Receiver>> receivers;
  for (const std::uint32_t chunk : {1024u, 16384u, 65536u}) {
    receivers.push_back(
        std::make_unique<Receiver>(wt::ReceiveLimits{chunk, max_message, 2 * one, &budget}, connections));
  }
  const auto restart = [&](Receiver& receiver) {
    receiver = Receiver({receiver.chunk_size, max_message, 2 * one, &budget}, connections);
  };
  Liar liar(20261122, max_message);
  std::uint64_t slices = 0, violations = 0, held_back = 0, timeouts = 0, most_resident = 0;

  auto check = [&](bool resident_too) {
    BOOST_REQUIRE_LE(budget.used(), budget.limit());
    std::uint64_t charged = 0;
    for (const auto& receiver : receivers) {
      charged += receiver->reassembler->buffered_bytes();
      if (!resident_too) continue;
      const auto resident = receiver->reassembler->resident_bytes();
      // Huge pages: 4x the bytes that arrived, plus a 2 MiB region per chunk in
      // progress; small pages: 4x, plus two pages for a short chunk.
      const auto bound = 8 * receiver->written + receiver->frames * 8192 + (connections + 1) * 2 * kMiB;
      BOOST_REQUIRE_LE(resident, bound);
      most_resident = std::max(most_resident, resident);
    }
    BOOST_REQUIRE_EQUAL(charged, budget.used());
  };

  // One round: a connection of some channel reads what its peer sends next.
  auto play = [&](Receiver& receiver, unsigned connection) {
    auto& reader = receiver.readers[connection];
    if (reader.blocked() && !reader.retry()) {
      ++held_back;  // no memory for its chunk: like a socket nobody reads, it waits...
      if (liar.below(8) == 0) {
        ++timeouts;  // ...until the idle timeout ends the channel
        restart(receiver);
      }
      return;
    }
    const auto frame = liar.next_frame(receiver, connection);
    ++receiver.frames;
    std::span<const std::byte> rest(frame);
    while (!rest.empty() && !reader.blocked()) {
      const auto target = reader.buffer();
      const auto n = std::min(liar.slice(rest.size()), target.size());
      std::memcpy(target.data(), rest.data(), n);
      reader.commit(n);
      receiver.written += n;
      rest = rest.subspan(n);
      check(++slices % 32 == 0);
    }
    if (!rest.empty()) receiver.last[connection].any = false;  // the rest is dropped with the frame
    if (liar.below(4) == 0) {
      while (receiver.reassembler->has_ready()) receiver.reassembler->pop_ready();
    }
  };
  for (int round = 0; round < 20000; ++round) {
    auto& receiver = *receivers[liar.below(receivers.size())];
    try {
      play(receiver, static_cast<unsigned>(liar.below(connections)));
    } catch (const wt::TransportError&) {
      ++violations;  // the channel ends: what it held goes back to the budget
      restart(receiver);
    }
    check(round % 16 == 0);
  }
  BOOST_TEST_MESSAGE(slices << " slices, " << violations << " channels ended by a violation, " << held_back
                            << " reads held back, " << timeouts << " channels timed out; budget peak " << budget.peak()
                            << " of " << budget.limit() << ", most resident " << most_resident);
  BOOST_CHECK_GT(violations, 10u);  // the liar was caught...
  BOOST_CHECK_GT(held_back, 0u);    // ...and pushed against the budget
  BOOST_CHECK_GT(budget.peak(), budget.limit() / 2);
  receivers.clear();
  BOOST_CHECK_EQUAL(budget.used(), 0u);
}
