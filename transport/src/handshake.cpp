#include "handshake.hpp"

#include <fmt/format.h>

#include <array>
#include <asio/read.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

namespace wanlab::transport::detail {

wire::Hello make_hello(const ChannelOptions& options, std::uint64_t channel_id, std::uint16_t index,
                       std::uint16_t count) {
  wire::Hello hello;
  hello.channel_id = channel_id;
  hello.index = index;
  hello.count = count;
  hello.chunk_size = options.chunk_size;
  hello.max_message_size = options.max_message_size;
  return hello;
}

asio::awaitable<wire::Hello> read_hello(asio::ip::tcp::socket& socket) {
  wire::HelloBytes bytes;
  co_await asio::async_read(socket, asio::buffer(bytes), asio::use_awaitable);
  co_return wire::decode_hello(bytes);
}

asio::awaitable<void> write_reply(asio::ip::tcp::socket& socket, wire::Hello reply, std::string_view reason) {
  const std::string text(reason.substr(0, wire::kMaxReasonLength));
  reply.reason_length = reply.status == wire::HelloStatus::ok ? 0 : static_cast<std::uint16_t>(text.size());
  const auto bytes = wire::encode(reply);
  std::array<asio::const_buffer, 2> buffers{asio::buffer(bytes), asio::buffer(text.data(), reply.reason_length)};
  co_await asio::async_write(socket, buffers, asio::use_awaitable);
}

asio::awaitable<std::string> read_reason(asio::ip::tcp::socket& socket, std::uint16_t length) {
  std::string reason(std::min<std::size_t>(length, wire::kMaxReasonLength), '\0');
  co_await asio::async_read(socket, asio::buffer(reason), asio::use_awaitable);
  for (auto& c : reason) {
    if (c < 0x20 && c != '\t') c = '?';  // keep it one printable line
  }
  co_return reason;
}

std::string to_string(const asio::ip::tcp::endpoint& endpoint) {
  if (endpoint.address().is_v6()) return fmt::format("[{}]:{}", endpoint.address().to_string(), endpoint.port());
  return fmt::format("{}:{}", endpoint.address().to_string(), endpoint.port());
}

}  // namespace wanlab::transport::detail
