// Writes the seed corpus for the frame decoder fuzzer: valid-* inputs must
// decode cleanly (all messages, all goodbyes), bad-* inputs must be rejected.
// Usage: transport_make_corpus DIR

#include <functional>
#include <iostream>

#include "wanlab/base/files.hpp"
#include "wanlab/transport/crc32c.hpp"
#include "wanlab/transport/fuzz.hpp"

namespace wire = wanlab::transport::wire;
using wanlab::transport::fuzz::Segment;

namespace {

constexpr std::uint32_t kChunk = 1024;

wire::Hello hello(std::uint16_t count) {
  wire::Hello h;
  h.channel_id = 0x1234;
  h.count = count;
  h.chunk_size = kChunk;
  h.max_message_size = 1 << 20;
  return h;
}

std::vector<std::byte> payload(std::size_t size, std::uint8_t seed) {
  std::vector<std::byte> out(size);
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<std::byte>(seed + i * 31);
  return out;
}

std::vector<std::byte> frame(wire::ChunkHeader header, const std::vector<std::byte>& body) {
  const auto head = wire::encode(header);
  std::vector<std::byte> out(head.size() + body.size());
  std::copy(head.begin(), head.end(), out.begin());
  std::copy(body.begin(), body.end(), out.begin() + static_cast<std::ptrdiff_t>(head.size()));
  return out;
}

std::vector<std::byte> goodbye(std::uint64_t messages) {
  wire::ChunkHeader g;
  g.type = wire::FrameType::goodbye;
  g.message_id = messages;
  return frame(g, {});
}

// Chunks of `size`-byte message `id`, dealt round-robin over `connections`.
void add_message(std::vector<Segment>& segments, std::uint64_t id, std::size_t size, unsigned connections,
                 bool checksum) {
  const auto body = payload(size, static_cast<std::uint8_t>(id));
  unsigned next = static_cast<unsigned>(id) % connections;
  std::uint64_t offset = 0;
  do {
    const auto length = wire::chunk_length(size, offset, kChunk);
    std::vector<std::byte> part(body.begin() + offset, body.begin() + offset + length);
    wire::ChunkHeader h;
    h.message_id = id;
    h.message_size = size;
    h.offset = offset;
    h.length = length;
    if (checksum) {
      h.flags = wire::kFlagChecksum;
      h.checksum = wanlab::transport::crc32c(part);
    }
    segments.push_back({next, frame(h, part)});
    next = (next + 1) % connections;
    offset += length;
  } while (offset < size);
}

std::vector<Segment> messages(const std::vector<std::size_t>& sizes, unsigned connections, bool checksum) {
  std::vector<Segment> segments;
  for (std::size_t id = 0; id < sizes.size(); ++id) add_message(segments, id, sizes[id], connections, checksum);
  for (unsigned c = 0; c < connections; ++c) segments.push_back({c, goodbye(sizes.size())});
  return segments;
}

void write(const wanlab::base::OutputDir& dir, const std::string& name, const std::vector<std::uint8_t>& bytes) {
  dir.write(name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: transport_make_corpus DIR\n";
    return 2;
  }
  const auto dir = wanlab::base::OutputDir::open(argv[1]);
  using wanlab::transport::fuzz::make_fuzz_input;
  const std::vector<std::size_t> mixed{0, 1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 7};

  write(dir, "valid-one-connection", make_fuzz_input(hello(1), messages(mixed, 1, false)));
  write(dir, "valid-three-connections", make_fuzz_input(hello(3), messages(mixed, 3, false)));
  write(dir, "valid-checksums", make_fuzz_input(hello(2), messages(mixed, 2, true)));
  write(dir, "valid-no-messages", make_fuzz_input(hello(2), messages({}, 2, false)));
  {
    // Chunks of one message arriving in reverse connection order.
    auto segments = messages({5 * kChunk}, 5, false);
    std::reverse(segments.begin(), segments.begin() + 5);
    write(dir, "valid-out-of-order", make_fuzz_input(hello(5), segments));
  }

  auto bad = [&](const std::string& name, std::function<void(std::vector<Segment>&)> spoil) {
    auto segments = messages(mixed, 2, true);
    spoil(segments);
    write(dir, "bad-" + name, make_fuzz_input(hello(2), segments));
  };
  bad("no-goodbye", [](auto& s) { s.pop_back(); });
  bad("repeated-message", [](auto& s) { s.insert(s.begin() + 3, s[3]); });
  bad("duplicate-chunk", [](auto& s) {  // message 5's first chunk again, on the other connection
    auto copy = s[6];
    copy.connection ^= 1;
    s.insert(s.begin() + 7, copy);
  });
  bad("corrupt-payload", [](auto& s) { s[4].bytes.back() ^= std::byte{1}; });
  bad("header-magic", [](auto& s) { s[2].bytes[0] = std::byte{0}; });
  bad("truncated", [](auto& s) {  // no goodbyes, and the last frame cut short
    s.resize(s.size() - 2);
    s.back().bytes.resize(s.back().bytes.size() - 5);
  });
  bad("goodbye-count", [](auto& s) { s.back() = {s.back().connection, goodbye(99)}; });
  bad("huge-size", [](auto& s) {
    wire::ChunkHeader h;
    h.message_id = 0;
    h.message_size = 1ull << 40;
    h.length = kChunk;
    s.insert(s.begin(), {0, frame(h, payload(kChunk, 1))});
  });
  {
    auto h = hello(2);
    h.version = 7;
    write(dir, "bad-hello-version", make_fuzz_input(h, messages(mixed, 2, false)));
  }
  std::cout << "wrote seeds to " << dir.string() << "\n";
  return 0;
}
