// Errors of the transport library.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace wanlab::transport {

/// What kind of failure a TransportError reports.
enum class Errc {
  protocol_error = 1,  ///< the peer sent something the wire format does not allow
  checksum_mismatch,   ///< a chunk's CRC32C did not match its payload
  handshake_refused,   ///< one side refused the other's hello (magic, version, count...)
  connection_failed,   ///< a TCP connection failed: reset, timeout, refused, closed early
  timed_out,           ///< connect or handshake did not finish in time
  message_too_large,   ///< a message exceeds the receiver's max_message_size
  invalid_argument,    ///< a bad option or call
  closed,              ///< the channel was closed locally
};

const std::error_category& transport_category() noexcept;
std::error_code make_error_code(Errc e) noexcept;

/// The exception every transport operation throws. what() carries the context
/// ("connection 3 of 8: receiving: Connection reset by peer"), code() the kind.
class TransportError : public std::runtime_error {
 public:
  TransportError(Errc code, const std::string& what) : std::runtime_error(what), code_(make_error_code(code)) {}
  std::error_code code() const noexcept { return code_; }
  bool is(Errc e) const noexcept { return code_ == make_error_code(e); }

 private:
  std::error_code code_;
};

}  // namespace wanlab::transport

template <>
struct std::is_error_code_enum<wanlab::transport::Errc> : std::true_type {};
