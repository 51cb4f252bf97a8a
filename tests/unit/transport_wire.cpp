// The wire format, CRC32C, and the receive-side validation in Reassembler and
// FrameReader, without sockets.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <functional>
#include <random>

#include "unit/transport_support.hpp"
#include "wanlab/transport/crc32c.hpp"
#include "wanlab/transport/error.hpp"
#include "wanlab/transport/options.hpp"
#include "wanlab/transport/reassembly.hpp"
#include "wanlab/transport/wire.hpp"

namespace wt = wanlab::transport;
namespace wire = wt::wire;

namespace {

std::vector<std::byte> bytes_of(std::string_view text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const wt::TransportError& e) {
    return e.what();
  }
  return "";
}

using transport_test::contains;
using transport_test::data;

constexpr std::uint32_t kChunk = 1024;

wt::Reassembler make_reassembler(unsigned connections, std::uint64_t memory = 1 << 20) {
  return wt::Reassembler({kChunk, 64 * 1024, memory}, connections);
}

// Begins and finishes a chunk, filling its payload with `fill`.
void put(wt::Reassembler& r, unsigned connection, const wire::ChunkHeader& h, std::byte fill = std::byte{1}) {
  auto destination = r.begin_chunk(connection, h);
  BOOST_REQUIRE(destination.has_value());
  BOOST_REQUIRE_EQUAL(destination->size(), h.length);
  std::fill(destination->begin(), destination->end(), fill);
  r.finish_chunk(h);
}

}  // namespace

BOOST_AUTO_TEST_CASE(crc32c_matches_known_vectors) {
  BOOST_CHECK_EQUAL(wt::crc32c(bytes_of("123456789")), 0xE3069283u);
  BOOST_CHECK_EQUAL(wt::crc32c_portable(bytes_of("123456789")), 0xE3069283u);
  BOOST_CHECK_EQUAL(wt::crc32c({}), 0u);
  std::vector<std::byte> zeros(32, std::byte{0});
  BOOST_CHECK_EQUAL(wt::crc32c(zeros), 0x8A9136AAu);  // RFC 3720 B.4
  std::vector<std::byte> ones(32, std::byte{0xFF});
  BOOST_CHECK_EQUAL(wt::crc32c(ones), 0x62A8AB43u);
}

BOOST_AUTO_TEST_CASE(crc32c_fast_and_portable_agree_and_chain) {
  std::mt19937_64 random(42);
  std::vector<std::byte> buffer(10000);
  for (auto& b : buffer) b = static_cast<std::byte>(random());
  for (std::size_t offset : {0u, 1u, 3u, 7u}) {
    for (std::size_t length : {0u, 1u, 7u, 8u, 9u, 63u, 4096u, 9000u}) {
      const std::span<const std::byte> part(buffer.data() + offset, length);
      BOOST_CHECK_EQUAL(wt::crc32c(part), wt::crc32c_portable(part));
      const auto split = length / 3;
      BOOST_CHECK_EQUAL(wt::crc32c(part.subspan(split), wt::crc32c(part.first(split))), wt::crc32c(part));
    }
  }
}

BOOST_AUTO_TEST_CASE(hello_round_trips_and_is_big_endian) {
  wire::Hello hello;
  hello.channel_id = 0x0102030405060708ull;
  hello.index = 3;
  hello.count = 8;
  hello.chunk_size = 512 * 1024;
  hello.max_message_size = 1ull << 30;
  const auto bytes = wire::encode(hello);
  BOOST_CHECK(bytes[0] == std::byte{'W'} && bytes[1] == std::byte{'L'} && bytes[2] == std::byte{'T'} &&
              bytes[3] == std::byte{'P'});
  BOOST_CHECK(bytes[8] == std::byte{1} && bytes[15] == std::byte{8});
  const auto back = wire::decode_hello(bytes);
  BOOST_CHECK_EQUAL(back.channel_id, hello.channel_id);
  BOOST_CHECK_EQUAL(back.index, 3);
  BOOST_CHECK_EQUAL(back.count, 8);
  BOOST_CHECK_EQUAL(back.chunk_size, hello.chunk_size);
  BOOST_CHECK_EQUAL(back.max_message_size, hello.max_message_size);
  BOOST_CHECK(wire::check(back, true).ok());
}

BOOST_AUTO_TEST_CASE(chunk_header_round_trips_and_rejects_malformed_fields) {
  auto header = data(7, 3000, 2048, 952);
  header.flags = wire::kFlagChecksum;
  header.checksum = 0xDEADBEEF;
  auto bytes = wire::encode(header);
  const auto back = wire::decode_chunk_header(bytes);
  BOOST_CHECK(back.type == wire::FrameType::data);
  BOOST_CHECK_EQUAL(back.message_id, 7u);
  BOOST_CHECK_EQUAL(back.message_size, 3000u);
  BOOST_CHECK_EQUAL(back.offset, 2048u);
  BOOST_CHECK_EQUAL(back.length, 952u);
  BOOST_CHECK_EQUAL(back.checksum, 0xDEADBEEFu);

  auto spoiled = [&](std::size_t at, std::byte value) {
    auto copy = bytes;
    copy[at] = value;
    return error_of([&] { wire::decode_chunk_header(copy); });
  };
  BOOST_CHECK(contains(spoiled(0, std::byte{'X'}), "bad magic"));
  BOOST_CHECK(contains(spoiled(4, std::byte{3}), "unknown type 3"));
  BOOST_CHECK(contains(spoiled(5, std::byte{0x80}), "unknown flags 0x80"));
  BOOST_CHECK(contains(spoiled(7, std::byte{1}), "reserved field"));
  wire::ChunkHeader goodbye;
  goodbye.type = wire::FrameType::goodbye;
  goodbye.length = 5;
  const auto goodbye_bytes = wire::encode(goodbye);
  BOOST_CHECK(contains(error_of([&] { wire::decode_chunk_header(goodbye_bytes); }), "goodbye frame carries length 5"));
}

BOOST_AUTO_TEST_CASE(chunk_arithmetic) {
  BOOST_CHECK_EQUAL(wire::chunk_count(0, kChunk), 1u);
  BOOST_CHECK_EQUAL(wire::chunk_count(1, kChunk), 1u);
  BOOST_CHECK_EQUAL(wire::chunk_count(kChunk, kChunk), 1u);
  BOOST_CHECK_EQUAL(wire::chunk_count(kChunk + 1, kChunk), 2u);
  BOOST_CHECK_EQUAL(wire::chunk_length(kChunk + 1, kChunk, kChunk), 1u);
  BOOST_CHECK_EQUAL(wire::chunk_length(0, 0, kChunk), 0u);
  BOOST_CHECK_EQUAL(wire::chunk_length(5 * kChunk, 2 * kChunk, kChunk), kChunk);
}

BOOST_AUTO_TEST_CASE(channel_options_are_validated_by_name) {
  wt::ChannelOptions options;
  BOOST_CHECK_NO_THROW(wt::validate(options));
  options.chunk_size = 10;
  BOOST_CHECK(contains(error_of([&] { wt::validate(options); }), "chunk_size: 10 is out of range"));
  options = {};
  options.connections = 0;
  BOOST_CHECK(contains(error_of([&] { wt::validate(options); }), "connections: 0 is out of range (1..64)"));
  options = {};
  options.socket.send_buffer = -1;
  BOOST_CHECK(contains(error_of([&] { wt::validate(options); }), "socket.send_buffer"));
}

BOOST_AUTO_TEST_CASE(reassembler_delivers_in_order_whatever_the_arrival_order) {
  auto r = make_reassembler(4);
  put(r, 2, data(1, 10, 0, 10), std::byte{0xB1});  // message 1 is whole before message 0
  put(r, 1, data(0, 2500, 1024, 1024), std::byte{0xA1});
  put(r, 0, data(0, 2500, 2048, 452), std::byte{0xA2});
  BOOST_CHECK(!r.has_ready());
  put(r, 3, data(0, 2500, 0, 1024), std::byte{0xA0});
  BOOST_REQUIRE(r.has_ready());
  const auto first = r.pop_ready();
  BOOST_REQUIRE_EQUAL(first.size(), 2500u);
  BOOST_CHECK(first.bytes()[0] == std::byte{0xA0} && first.bytes()[1023] == std::byte{0xA0});
  BOOST_CHECK(first.bytes()[1024] == std::byte{0xA1} && first.bytes()[2047] == std::byte{0xA1});
  BOOST_CHECK(first.bytes()[2048] == std::byte{0xA2} && first.bytes()[2499] == std::byte{0xA2});
  BOOST_REQUIRE(r.has_ready());
  const auto second = r.pop_ready();
  BOOST_CHECK_EQUAL(second.size(), 10u);
  BOOST_CHECK(second.bytes()[9] == std::byte{0xB1});
  BOOST_CHECK_EQUAL(r.buffered_bytes(), 0u);
  for (unsigned c = 0; c < 4; ++c) r.goodbye(c, 2);
  BOOST_CHECK(r.all_goodbyes());
}

BOOST_AUTO_TEST_CASE(reassembler_rejects_what_a_correct_sender_never_sends) {
  struct Case {
    const char* name;
    std::function<void(wt::Reassembler&)> action;
    const char* error_part;
  };
  const std::vector<Case> cases{
      {"too large", [](auto& r) { r.begin_chunk(0, data(0, 64 * 1024 + 1, 0, kChunk)); }, "above the limit of 65536"},
      {"misaligned", [](auto& r) { r.begin_chunk(0, data(0, 5000, 1000, kChunk)); },
       "not a multiple of the chunk size"},
      {"outside", [](auto& r) { r.begin_chunk(0, data(0, 5000, 5120, 0)); }, "outside the message's 5000 bytes"},
      {"empty with offset", [](auto& r) { r.begin_chunk(0, data(0, 0, 1024, 0)); }, "outside the message's 0 bytes"},
      {"short chunk", [](auto& r) { r.begin_chunk(0, data(0, 5000, 0, 100)); }, "has length 100, expected 1024"},
      {"long tail", [](auto& r) { r.begin_chunk(0, data(0, 5000, 4096, 1024)); }, "has length 1024, expected 904"},
      {"far ahead", [](auto& r) { r.begin_chunk(0, data(1ull << 40, 1, 0, 1)); }, "implausibly far ahead"},
      {"already delivered",
       [](auto& r) {
         put(r, 0, data(0, 1, 0, 1));
         r.begin_chunk(1, data(0, 1, 0, 1));
       },
       "message 0 was already delivered"},
      {"out of order on a connection",
       [](auto& r) {
         put(r, 0, data(3, 1, 0, 1));
         r.begin_chunk(0, data(2, 1, 0, 1));
       },
       "message 2 offset 0 arrived after message 3 offset 0 on the same connection"},
      {"size changes",
       [](auto& r) {
         put(r, 0, data(0, 3000, 0, kChunk));
         r.begin_chunk(1, data(0, 4000, 1024, kChunk));
       },
       "chunk says the message has 4000 bytes, an earlier chunk said 3000"},
      {"duplicate across connections",
       [](auto& r) {
         put(r, 0, data(0, 3000, 1024, kChunk));
         r.begin_chunk(1, data(0, 3000, 1024, kChunk));
       },
       "duplicate chunk at offset 1024"},
      {"data after goodbye",
       [](auto& r) {
         r.goodbye(0, 5);
         r.begin_chunk(0, data(0, 1, 0, 1));
       },
       "after this connection's goodbye"},
      {"id beyond the goodbye count",
       [](auto& r) {
         r.goodbye(0, 1);
         r.begin_chunk(1, data(1, 1, 0, 1));
       },
       "after the peer said goodbye having sent 1 messages"},
      {"goodbyes disagree",
       [](auto& r) {
         r.goodbye(0, 1);
         r.goodbye(1, 2);
       },
       "another connection's goodbye said 1"},
      {"goodbye below a seen id",
       [](auto& r) {
         put(r, 1, data(4, 1, 0, 1));
         r.goodbye(0, 3);
       },
       "goodbye says 3 messages were sent, but message 4 arrived"},
      {"messages missing at the end",
       [](auto& r) {
         put(r, 0, data(0, 3000, 0, kChunk));
         r.goodbye(0, 1);
         r.goodbye(1, 1);
       },
       "having sent 1 messages, but only 0 arrived whole"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      auto r = make_reassembler(2);
      const auto error = error_of([&] { c.action(r); });
      BOOST_CHECK_MESSAGE(contains(error, c.error_part), "got: '" << error << "'");
    }
  }
}

BOOST_AUTO_TEST_CASE(reassembler_memory_limit_blocks_new_messages_but_not_the_next_in_order) {
  constexpr auto kOverhead = wt::Reassembler::kPerMessageOverhead;
  auto r = make_reassembler(2, 4096);
  auto m0 = data(0, 3000, 0, kChunk);
  BOOST_REQUIRE(r.begin_chunk(0, m0));
  BOOST_CHECK_EQUAL(r.buffered_bytes(), 3000 + 8 + 8 + kOverhead);  // a word of chunk bits, one 2 MiB region
  BOOST_CHECK_EQUAL(r.buffered_bytes(), wt::MemoryBudget::charge_of(3000, kChunk));
  // Message 1 does not fit next to message 0.
  const auto m1 = data(1, 3000, 0, kChunk);
  BOOST_CHECK(!r.begin_chunk(1, m1).has_value());
  // Chunks of a message already held need no memory.
  r.finish_chunk(m0);
  put(r, 0, data(0, 3000, 1024, kChunk));
  put(r, 0, data(0, 3000, 2048, 952));
  BOOST_REQUIRE(r.has_ready());
  // Message 1 is next in order now, but message 0 still waits for receive().
  BOOST_CHECK(!r.begin_chunk(1, m1).has_value());
  const auto epoch = r.memory_epoch();
  r.pop_ready();
  BOOST_CHECK_GT(r.memory_epoch(), epoch);
  BOOST_CHECK(r.begin_chunk(1, m1).has_value());

  // A message larger than the whole limit still passes when it is next in order.
  auto big = make_reassembler(1, 4096);
  BOOST_CHECK(big.begin_chunk(0, data(0, 20000, 0, kChunk)).has_value());
  BOOST_CHECK(!big.begin_chunk(0, data(1, 10, 0, 10)).has_value());
}

namespace {

std::vector<std::byte> stream_of(const std::vector<std::size_t>& sizes, bool checksum) {
  std::vector<std::byte> out;
  for (std::size_t id = 0; id < sizes.size(); ++id) {
    std::uint64_t offset = 0;
    do {
      auto h = data(id, sizes[id], offset, wire::chunk_length(sizes[id], offset, kChunk));
      std::vector<std::byte> payload(h.length, static_cast<std::byte>(id + 1));
      if (checksum) {
        h.flags = wire::kFlagChecksum;
        h.checksum = wt::crc32c(payload);
      }
      const auto head = wire::encode(h);
      out.insert(out.end(), head.begin(), head.end());
      out.insert(out.end(), payload.begin(), payload.end());
      offset += h.length;
    } while (offset < sizes[id]);
  }
  wire::ChunkHeader goodbye;
  goodbye.type = wire::FrameType::goodbye;
  goodbye.message_id = sizes.size();
  const auto head = wire::encode(goodbye);
  out.insert(out.end(), head.begin(), head.end());
  return out;
}

// Feeds `stream` to a one-connection reader in pieces of at most `piece` bytes.
std::vector<wt::Message> feed(const std::vector<std::byte>& stream, std::size_t piece) {
  auto r = make_reassembler(1);
  wt::FrameReader reader(r, 0);
  std::vector<wt::Message> out;
  std::size_t at = 0;
  while (at < stream.size()) {
    const auto target = reader.buffer();
    const auto n = std::min({piece, target.size(), stream.size() - at});
    std::memcpy(target.data(), stream.data() + at, n);
    reader.commit(n);
    at += n;
    while (r.has_ready()) out.push_back(r.pop_ready());
  }
  reader.end_of_stream();
  BOOST_CHECK(reader.said_goodbye());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(frame_reader_handles_any_split_of_the_stream) {
  const std::vector<std::size_t> sizes{0, 1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk};
  const auto stream = stream_of(sizes, true);
  for (std::size_t piece :
       {std::size_t{1}, std::size_t{3}, std::size_t{40}, std::size_t{41}, std::size_t{1000}, stream.size()}) {
    BOOST_TEST_CONTEXT("pieces of " << piece) {
      const auto messages = feed(stream, piece);
      BOOST_REQUIRE_EQUAL(messages.size(), sizes.size());
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        BOOST_CHECK_EQUAL(messages[i].size(), sizes[i]);
        if (sizes[i] > 0) BOOST_CHECK(messages[i].bytes().back() == static_cast<std::byte>(i + 1));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(frame_reader_detects_corruption_and_early_ends) {
  auto stream = stream_of({3 * kChunk}, true);
  stream[wire::kChunkHeaderSize + 5] ^= std::byte{0x10};  // a payload bit flips
  try {
    feed(stream, 4096);
    BOOST_FAIL("corruption not detected");
  } catch (const wt::TransportError& e) {
    BOOST_CHECK(e.is(wt::Errc::checksum_mismatch));
    BOOST_CHECK(contains(e.what(), "message 0: chunk at offset 0: checksum"));
  }

  auto r = make_reassembler(1);
  wt::FrameReader reader(r, 0);
  BOOST_CHECK(contains(error_of([&] { reader.end_of_stream(); }), "without a goodbye"));
  const auto head = wire::encode(data(0, 100, 0, 100));
  std::memcpy(reader.buffer().data(), head.data(), 10);
  reader.commit(10);
  BOOST_CHECK(contains(error_of([&] { reader.end_of_stream(); }), "10 bytes into a frame header"));
  std::memcpy(reader.buffer().data(), head.data() + 10, head.size() - 10);
  reader.commit(head.size() - 10);
  BOOST_CHECK_EQUAL(reader.buffer().size(), 100u);  // the payload goes straight into the message
  reader.commit(60);
  BOOST_CHECK(contains(error_of([&] { reader.end_of_stream(); }), "60 of 100 payload bytes"));
}
