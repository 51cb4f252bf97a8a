#include "wanlab/transport/error.hpp"

namespace wanlab::transport {
namespace {

class Category : public std::error_category {
 public:
  const char* name() const noexcept override { return "wanlab.transport"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::protocol_error: return "protocol error";
      case Errc::checksum_mismatch: return "checksum mismatch";
      case Errc::handshake_refused: return "handshake refused";
      case Errc::connection_failed: return "connection failed";
      case Errc::timed_out: return "timed out";
      case Errc::message_too_large: return "message too large";
      case Errc::invalid_argument: return "invalid argument";
      case Errc::closed: return "channel closed";
    }
    return "unknown transport error";
  }
};

}  // namespace

const std::error_category& transport_category() noexcept {
  static const Category category;
  return category;
}

std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), transport_category()}; }

}  // namespace wanlab::transport
