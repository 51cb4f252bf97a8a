#include "protocol/control_auth.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>

namespace wanlab::harness::run_detail {
namespace {

constexpr std::uint8_t kHelloMagic[4] = {'W', 'L', 'C', '1'};

// HMAC-SHA256(key, the pieces one after the other), without copying them
// together (a frame may be megabytes).
AuthKey hmac(const AuthKey& key, std::initializer_list<std::span<const std::uint8_t>> pieces) {
  struct Free {
    void operator()(EVP_MAC* mac) const { EVP_MAC_free(mac); }
    void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
  };
  const std::unique_ptr<EVP_MAC, Free> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  const std::unique_ptr<EVP_MAC_CTX, Free> ctx(mac ? EVP_MAC_CTX_new(mac.get()) : nullptr);
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  bool ok = ctx && EVP_MAC_init(ctx.get(), key.data(), key.size(), params) == 1;
  for (const auto& piece : pieces) ok = ok && EVP_MAC_update(ctx.get(), piece.data(), piece.size()) == 1;
  AuthKey out{};
  std::size_t length = 0;
  if (!ok || EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) != 1 || length != out.size())
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
  return out;
}

std::span<const std::uint8_t> bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}
std::span<const std::uint8_t> bytes_of(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()};
}

// In constant time: whether `given` is `expected` cut to its length (a tag) or whole.
bool same(std::span<const std::uint8_t> given, std::span<const std::uint8_t> expected) {
  return !given.empty() && given.size() <= expected.size() &&
         CRYPTO_memcmp(given.data(), expected.data(), given.size()) == 0;
}

AuthKey proof_of(const RunSecret& secret, std::string_view who, const Nonce& nonce_c, const Nonce& nonce_w) {
  return hmac(secret.key, {bytes_of(who), nonce_c, nonce_w});
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

RunSecret RunSecret::generate() {
  RunSecret secret;
  if (RAND_bytes(secret.key.data(), static_cast<int>(secret.key.size())) != 1)
    throw std::runtime_error("making the run's secret: the random generator failed (OpenSSL RAND_bytes)");
  return secret;
}

RunSecret RunSecret::from_hex(std::string_view hex) {
  RunSecret secret;
  if (hex.size() != 2 * secret.key.size())
    throw std::runtime_error(std::string(kRunSecretVariable) + ": expected 64 hex digits, got " +
                             std::to_string(hex.size()) + " characters");
  for (std::size_t i = 0; i < secret.key.size(); ++i) {
    const int high = hex_digit(hex[2 * i]), low = hex_digit(hex[2 * i + 1]);
    if (high < 0 || low < 0) throw std::runtime_error(std::string(kRunSecretVariable) + ": not hex digits");
    secret.key[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return secret;
}

std::string RunSecret::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t byte : key) {
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

RunSecret take_run_secret() {
  const char* text = std::getenv(kRunSecretVariable);
  if (text == nullptr)
    throw std::runtime_error(std::string("a control channel over TCP needs the run's secret in ") + kRunSecretVariable +
                             ", which the coordinator gives the processes it starts");
  const std::string copy = text;
  ::unsetenv(kRunSecretVariable);
  return RunSecret::from_hex(copy);
}

Nonce random_nonce() { return RunSecret::generate().key; }

namespace {
std::array<std::uint8_t, 8> ids(int from, int to) {
  std::array<std::uint8_t, 8> out{};
  for (int i = 0; i < 4; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(static_cast<std::uint32_t>(from) >> (8 * i));
    out[static_cast<std::size_t>(4 + i)] = static_cast<std::uint8_t>(static_cast<std::uint32_t>(to) >> (8 * i));
  }
  return out;
}
}  // namespace

namespace {
AuthKey channel_proof(const char* label, const RunSecret& secret, const Nonce& nonce, int from, int to) {
  return hmac(secret.key, {bytes_of(label), nonce, ids(from, to)});
}
bool check_channel_proof(const char* label, const RunSecret& secret, const Nonce& nonce, int from, int to,
                         std::span<const std::byte> proof) {
  return proof.size() == sizeof(AuthKey) && same(bytes_of(proof), channel_proof(label, secret, nonce, from, to));
}
constexpr const char* kDataLabel = "wanlab data";
constexpr const char* kKvLabel = "wanlab kv";
}  // namespace

AuthKey data_channel_proof(const RunSecret& secret, const Nonce& nonce, int from, int to) {
  return channel_proof(kDataLabel, secret, nonce, from, to);
}

bool check_data_channel_proof(const RunSecret& secret, const Nonce& nonce, int from, int to,
                              std::span<const std::byte> proof) {
  return check_channel_proof(kDataLabel, secret, nonce, from, to, proof);
}

AuthKey kv_channel_proof(const RunSecret& secret, const Nonce& nonce, int worker, int sink) {
  return channel_proof(kKvLabel, secret, nonce, worker, sink);
}

bool check_kv_channel_proof(const RunSecret& secret, const Nonce& nonce, int worker, int sink,
                            std::span<const std::byte> proof) {
  return check_channel_proof(kKvLabel, secret, nonce, worker, sink, proof);
}

std::array<std::uint8_t, kHandshakeHelloBytes> handshake_hello(const Nonce& nonce_c) {
  std::array<std::uint8_t, kHandshakeHelloBytes> out{};
  std::memcpy(out.data(), kHelloMagic, 4);
  std::memcpy(out.data() + 4, nonce_c.data(), nonce_c.size());
  return out;
}

Nonce read_handshake_hello(std::span<const std::uint8_t, kHandshakeHelloBytes> hello) {
  if (std::memcmp(hello.data(), kHelloMagic, 4) != 0)
    throw std::runtime_error("the control connection did not start with wanlab's handshake");
  Nonce nonce_c{};
  std::memcpy(nonce_c.data(), hello.data() + 4, nonce_c.size());
  return nonce_c;
}

std::array<std::uint8_t, kHandshakeProofBytes> handshake_proof(const RunSecret& secret, const Nonce& nonce_c,
                                                               const Nonce& nonce_w) {
  std::array<std::uint8_t, kHandshakeProofBytes> out{};
  std::memcpy(out.data(), nonce_w.data(), nonce_w.size());
  const AuthKey proof = proof_of(secret, "wanlab worker", nonce_c, nonce_w);
  std::memcpy(out.data() + 32, proof.data(), proof.size());
  return out;
}

Nonce check_handshake_proof(const RunSecret& secret, const Nonce& nonce_c,
                            std::span<const std::uint8_t, kHandshakeProofBytes> proof) {
  Nonce nonce_w{};
  std::memcpy(nonce_w.data(), proof.data(), nonce_w.size());
  if (nonce_w == nonce_c) throw std::runtime_error("the peer echoed the coordinator's nonce");
  if (!same(proof.subspan(32), proof_of(secret, "wanlab worker", nonce_c, nonce_w)))
    throw std::runtime_error("the peer does not know the run's secret");
  return nonce_w;
}

std::array<std::uint8_t, kHandshakeAnswerBytes> handshake_answer(const RunSecret& secret, const Nonce& nonce_c,
                                                                 const Nonce& nonce_w) {
  return proof_of(secret, "wanlab coordinator", nonce_c, nonce_w);
}

void check_handshake_answer(const RunSecret& secret, const Nonce& nonce_c, const Nonce& nonce_w,
                            std::span<const std::uint8_t, kHandshakeAnswerBytes> answer) {
  if (!same(answer, proof_of(secret, "wanlab coordinator", nonce_c, nonce_w)))
    throw std::runtime_error("the coordinator does not know the run's secret");
}

FrameTags::FrameTags(const RunSecret& secret, const Nonce& nonce_c, const Nonce& nonce_w, Side side) {
  const AuthKey to_worker = hmac(secret.key, {bytes_of("c2w"), nonce_c, nonce_w});
  const AuthKey to_coordinator = hmac(secret.key, {bytes_of("w2c"), nonce_c, nonce_w});
  send_key_ = side == Side::coordinator ? to_worker : to_coordinator;
  receive_key_ = side == Side::coordinator ? to_coordinator : to_worker;
}

namespace {
AuthKey frame_mac(const AuthKey& key, std::uint64_t sequence, std::span<const std::byte> frame) {
  std::uint8_t number[8];
  for (int i = 0; i < 8; ++i) number[i] = static_cast<std::uint8_t>(sequence >> (8 * i));
  return hmac(key, {number, bytes_of(frame)});
}
}  // namespace

std::array<std::byte, kFrameTagBytes> FrameTags::sign(std::span<const std::byte> frame) {
  const AuthKey mac = frame_mac(send_key_, sent_++, frame);
  std::array<std::byte, kFrameTagBytes> tag{};
  std::memcpy(tag.data(), mac.data(), tag.size());
  return tag;
}

bool FrameTags::verify(std::span<const std::byte> frame, std::span<const std::byte> tag) {
  const AuthKey mac = frame_mac(receive_key_, received_++, frame);
  return tag.size() == kFrameTagBytes && same(bytes_of(tag), mac);
}

}  // namespace wanlab::harness::run_detail
