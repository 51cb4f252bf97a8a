// The control channel across machines (`wanlab train --runtime slurm`) is TCP
// on the cluster network, where any process may connect. A per-run secret,
// made by the coordinator and handed to the workers it starts in their
// environment (WANLAB_RUN_SECRET: srun passes it on; never on a command line,
// which every user of a node can read), authenticates both ends and then every
// frame.
//
// Handshake, before any frame (raw bytes):
//   C->W  "WLC1" | nonce_c (32 random bytes)
//   W->C  nonce_w (32) | HMAC-SHA256(secret, "wanlab worker" | nonce_c | nonce_w)
//   C->W  HMAC-SHA256(secret, "wanlab coordinator" | nonce_c | nonce_w)
// Then each frame is followed by a 16-byte tag: HMAC-SHA256, under its
// direction's session key (HMAC(secret, "c2w" or "w2c" | nonce_c | nonce_w)),
// of the frame's sequence number in its direction (u64, little-endian) and its
// bytes, cut to 16 bytes. So a peer without the secret can neither join nor
// answer as a coordinator, and a frame forged, replayed, reordered or moved
// from another connection fails with the connection. Frames are not
// encrypted: plans and reports are not secrets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace wanlab::harness::run_detail {

using AuthKey = std::array<std::uint8_t, 32>;
using Nonce = std::array<std::uint8_t, 32>;

inline constexpr const char* kRunSecretVariable = "WANLAB_RUN_SECRET";

struct RunSecret {
  AuthKey key{};

  // 32 bytes from the system's random generator (OpenSSL's RAND_bytes).
  static RunSecret generate();
  // 64 hex digits; throws std::runtime_error saying what is wrong (never the text itself).
  static RunSecret from_hex(std::string_view hex);
  std::string hex() const;
};

// Reads WANLAB_RUN_SECRET and removes it from this process's environment
// (so that what it starts does not inherit it). Throws std::runtime_error
// when it is missing or malformed.
RunSecret take_run_secret();

Nonce random_nonce();

inline constexpr std::size_t kHandshakeHelloBytes = 4 + 32;   // "WLC1" | nonce_c
inline constexpr std::size_t kHandshakeProofBytes = 32 + 32;  // nonce_w | proof
inline constexpr std::size_t kHandshakeAnswerBytes = 32;      // the coordinator's proof
inline constexpr std::size_t kFrameTagBytes = 16;

// The handshake's three messages and their checks (pure: the sockets are the callers').
std::array<std::uint8_t, kHandshakeHelloBytes> handshake_hello(const Nonce& nonce_c);
// The worker's side: the hello's nonce (throws std::runtime_error if it is not a hello).
Nonce read_handshake_hello(std::span<const std::uint8_t, kHandshakeHelloBytes> hello);
std::array<std::uint8_t, kHandshakeProofBytes> handshake_proof(const RunSecret& secret, const Nonce& nonce_c,
                                                               const Nonce& nonce_w);
// The coordinator's side: nonce_w if the proof is right; throws std::runtime_error otherwise.
Nonce check_handshake_proof(const RunSecret& secret, const Nonce& nonce_c,
                            std::span<const std::uint8_t, kHandshakeProofBytes> proof);
std::array<std::uint8_t, kHandshakeAnswerBytes> handshake_answer(const RunSecret& secret, const Nonce& nonce_c,
                                                                 const Nonce& nonce_w);
// The worker's side; throws std::runtime_error if the answer is wrong.
void check_handshake_answer(const RunSecret& secret, const Nonce& nonce_c, const Nonce& nonce_w,
                            std::span<const std::uint8_t, kHandshakeAnswerBytes> answer);

// The workers' data channels across machines: the accepting worker sends a
// nonce after the connecting one named itself, which answers with
// HMAC-SHA256(secret, "wanlab data" | nonce | from | to) (ids as u32
// little-endian), so that a channel is admitted only from a worker of the run.
AuthKey data_channel_proof(const RunSecret& secret, const Nonce& nonce, int from, int to);
// In constant time.
bool check_data_channel_proof(const RunSecret& secret, const Nonce& nonce, int from, int to,
                              std::span<const std::byte> proof);
// BubbleTea's KV channels across machines: the same exchange between a
// prefill worker and its decode sink under the label "wanlab kv", so that a
// proof for one kind of channel is none for the other.
AuthKey kv_channel_proof(const RunSecret& secret, const Nonce& nonce, int worker, int sink);
bool check_kv_channel_proof(const RunSecret& secret, const Nonce& nonce, int worker, int sink,
                            std::span<const std::byte> proof);

// The tags of one connection's frames, both directions.
class FrameTags {
 public:
  enum class Side { coordinator, worker };
  FrameTags(const RunSecret& secret, const Nonce& nonce_c, const Nonce& nonce_w, Side side);

  // The tag of the next frame this side sends.
  std::array<std::byte, kFrameTagBytes> sign(std::span<const std::byte> frame);
  // Whether `tag` is that of the next frame the other side sends (in constant time).
  bool verify(std::span<const std::byte> frame, std::span<const std::byte> tag);

 private:
  AuthKey send_key_{};
  AuthKey receive_key_{};
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
};

}  // namespace wanlab::harness::run_detail
