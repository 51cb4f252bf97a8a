// What a peer can make the receiver hold, without sockets: the shared
// MemoryBudget's rules, and reassemblers that share one.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <memory>

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

}  // namespace

BOOST_AUTO_TEST_CASE(budget_charges_whole_messages_and_keeps_headroom_for_the_next_in_order) {
  // A charge is the bytes, a bit per chunk and a fixed overhead.
  BOOST_CHECK_EQUAL(MemoryBudget::charge_of(0, 1024), 8u + 128u);
  BOOST_CHECK_EQUAL(MemoryBudget::charge_of(1ull << 30, 1024), (1ull << 30) + 128 * 1024 + 128);
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
  BOOST_CHECK(budget.try_charge(600, false));   // leaves the 400 of headroom
  BOOST_CHECK(!budget.try_charge(1, false));    // would eat into it
  BOOST_CHECK(budget.try_charge(400, true));    // a next-in-order message may use it
  BOOST_CHECK(!budget.try_charge(1, true));     // but never the limit
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
