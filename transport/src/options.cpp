#include "wanlab/transport/options.hpp"

#include <fmt/format.h>

#include "wanlab/transport/budget.hpp"
#include "wanlab/transport/error.hpp"

namespace wanlab::transport {
namespace {

[[noreturn]] void bad_option(const std::string& what) { throw TransportError(Errc::invalid_argument, what); }

}  // namespace

void validate(const ChannelOptions& options) {
  if (options.connections < 1 || options.connections > kMaxConnections) {
    bad_option(fmt::format("connections: {} is out of range (1..{})", options.connections, kMaxConnections));
  }
  if (options.chunk_size < kMinChunkSize || options.chunk_size > kMaxChunkSize) {
    bad_option(
        fmt::format("chunk_size: {} is out of range ({}..{})", options.chunk_size, kMinChunkSize, kMaxChunkSize));
  }
  if (options.max_message_size == 0) bad_option("max_message_size: must be at least 1");
  if (options.receive_memory_limit == 0) bad_option("receive_memory_limit: must be at least 1");
  const auto budget = options.shared_memory_budget ? options.shared_memory_budget->limit() : options.memory_budget;
  const auto one_message = MemoryBudget::charge_of(options.max_message_size, kMinChunkSize);
  if (one_message > budget) {
    bad_option(fmt::format("{}: {} bytes cannot hold one message of max_message_size {} (it needs {})",
                           options.shared_memory_budget ? "shared_memory_budget" : "memory_budget", budget,
                           options.max_message_size, one_message));
  }
  if (options.idle_timeout.count() < 0) bad_option("idle_timeout: must not be negative");
  if (options.connect_timeout.count() <= 0) bad_option("connect_timeout: must be positive");
  if (options.handshake_timeout.count() <= 0) bad_option("handshake_timeout: must be positive");
  if (options.socket.send_buffer < 0) bad_option("socket.send_buffer: must not be negative");
  if (options.socket.receive_buffer < 0) bad_option("socket.receive_buffer: must not be negative");
  if (options.socket.user_timeout.count() < 0) bad_option("socket.user_timeout: must not be negative");
  if (options.socket.congestion_control.size() >= 16) {
    bad_option(fmt::format("socket.congestion_control: '{}' is too long for a TCP congestion control name",
                           options.socket.congestion_control));
  }
}

}  // namespace wanlab::transport
