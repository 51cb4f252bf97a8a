// Handshake steps shared by the connecting and the accepting side.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/ip/tcp.hpp>
#include <string>
#include <string_view>

#include "wanlab/transport/options.hpp"
#include "wanlab/transport/wire.hpp"

namespace wanlab::transport::detail {

/// The hello this side sends (request) or answers with (reply).
wire::Hello make_hello(const ChannelOptions& options, std::uint64_t channel_id, std::uint16_t index,
                       std::uint16_t count);

/// Reads exactly one hello.
asio::awaitable<wire::Hello> read_hello(asio::ip::tcp::socket& socket);
/// Writes a reply: `reply` plus, when it is a refusal, the reason text.
asio::awaitable<void> write_reply(asio::ip::tcp::socket& socket, wire::Hello reply, std::string_view reason);
/// Reads a refusal's reason text (reason_length bytes, at most kMaxReasonLength).
asio::awaitable<std::string> read_reason(asio::ip::tcp::socket& socket, std::uint16_t length);

std::string to_string(const asio::ip::tcp::endpoint& endpoint);

}  // namespace wanlab::transport::detail
