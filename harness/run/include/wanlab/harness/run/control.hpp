// The control protocol between the coordinator (`wanlab train`) and its
// workers (`wanlab worker`): small length-prefixed binary frames over a Unix
// domain socket in the run directory, unshaped by the emulated WAN; across
// machines (`--runtime slurm`) over TCP, each frame with an authentication
// tag after a handshake on the run's secret (protocol/control_auth.hpp).
//
// Frame: u32 length (little-endian, of what follows, 1..kMaxFrameBytes), then
// one type byte and the message's fields, little-endian, fixed layouts;
// strings and lists carry a u32 count first. Decoding checks every count
// against the bytes left, every enum value and that nothing is left over; a
// bad frame throws ControlError saying what was wrong and where.
//
// A run, seen from one worker:
//   W->C hello        its id and pid
//   C->W clock_probe / W->C clock_reply   (workers on other machines) the
//                     worker's CLOCK_MONOTONIC against the coordinator's
//   C->W assign       its plan, its data addresses, its peers' addresses
//   W->C listening    its data port accepts channels
//   C->W connect      every worker listens: open channels to peers
//   W->C ready        channels to every peer are open
//   C->W start        iteration i begins (a barrier per iteration)
//   W->C gate_request / C->W gate_grant / W->C gate_release  (temporal sharing)
//   W->C report       iteration i's events, the arrival times of what it received
//                     and what its cross-DC sends did (times, streams, cwnd, srtt)
//   C->W stop         the run is over: close channels and exit 0
//   W->C failed       the worker gives up, with the reason (then exits non-zero)
//
// With [prefill] (BubbleTea), two more kinds of process connect:
//   S->C sink_hello      the decode sink (on a host of the decode DC) and its pid
//   C->S sink_assign     where to accept prefill workers' KV channels
//   S->C listening       it accepts them
//   P->C prefill_hello   a prefill worker: the training worker whose GPU it borrows, its pid
//   C->P prefill_assign  the GPU lease file, the sink's address, how to send KV
//   P->C ready           its KV channel to the sink is open
//   C->P prefill_task    a chunk of a batch's prefill, at a time (absolute CLOCK_MONOTONIC),
//                        and the latest it may start if training holds the GPU then
//   P->C prefill_done / prefill_missed   it held the GPU then / the GPU was busy
//   P->C kv_gate_request / C->P kv_gate_grant / P->C kv_gate_release  (temporal sharing)
//   P->C kv_sent         a batch's KV cache is written to its sockets
//   S->C kv_arrived      a batch's KV cache has fully arrived at the decode host
// and both get stop, and may send failed, as the workers do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "wanlab/harness/plan/plan.hpp"
#include "wanlab/harness/record/record.hpp"

namespace wanlab::harness::control {

class ControlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::uint32_t kMaxFrameBytes = 64u << 20;

struct Hello {
  int worker = 0;
  int pid = 0;  // as the worker sees itself (1 in a container's PID namespace)
};

struct PeerAddress {
  int worker = 0;
  std::uint32_t ipv4 = 0;  // host byte order
  std::uint16_t port = 0;  // the peer's port for this kind (intra- or cross-DC) of channel
  bool cross_dc = false;
  // Bytes/s at most per connection of the channel to this peer for what this
  // worker sends (SO_MAX_PACING_RATE; 0: unpaced): the directed pair's rate
  // over the streams, so that a window goes onto the WAN spread over its
  // round trip instead of as a burst its queue drops (docs/RUNTIME.md, "Pacing").
  std::uint64_t pacing_rate = 0;
};

// One kind of data channel: where this worker accepts it and how its sends
// are cut (transport chunk size, TCP_NOTSENT_LOWAT).
struct ChannelTuning {
  std::uint16_t port = 0;
  std::uint32_t chunk_size = 0;
  std::uint32_t not_sent_lowat = 0;
};

// Channels that move bulk (intra-DC, and KV caches on no gated WAN link):
// the transport's default chunks and this much unsent in each socket, so
// few wake-ups (a chunk costs a wake-up and a write: about 50 us on a loaded
// two-core machine). Those on a gated WAN link take kCrossDcChunkBytes
// (tcp_model.hpp) for both, so that a gated send's "all written" comes when
// nearly all of its bytes have left.
inline constexpr std::uint32_t kBulkUnsentLowat = 256u << 10;

struct Assign {
  WorkerPlan plan;
  std::uint32_t ipv4 = 0;  // where this worker listens (host byte order)
  ChannelTuning intra_dc;
  ChannelTuning cross_dc;
  std::vector<PeerAddress> peers;  // every worker it exchanges data with
  int cross_dc_streams = 1;        // TCP connections per cross-DC channel (intra-DC: 1)
  int iterations = 0;
  // The GPU lease file shared with this worker's prefill worker; empty: none.
  std::string gpu_lease;
  // The worker makes the lease file (on its own machine, where the
  // coordinator cannot) before it listens, and removes it when it ends.
  bool make_gpu_lease = false;
  // Send ops that announce their link to the coordinator (LinkGate::announced:
  // with BubbleTea, sends between hosts of one DC), ascending.
  std::vector<int> announced_ops;
  // How long before the compute they follow ends they are announced
  // (announce_lead_ns in kv_routes.hpp).
  std::uint64_t announce_lead_ns = 0;
};

struct Listening {};
struct Connect {};
struct Ready {};
struct Start {
  int iteration = 0;
};
// Temporal sharing: the sender of a gated send op (link_slot >= 0) asks, is
// granted, and releases the link once every byte is written to its sockets.
struct GateRequest {
  int iteration = 0;
  int op_index = 0;
};
struct GateGrant {
  int iteration = 0;
  int op_index = 0;
};
struct GateRelease {
  int iteration = 0;
  int op_index = 0;
};
// When a message from `sender`'s op `sender_op` began to arrive here (its
// first chunk) and had fully arrived.
struct Arrival {
  int sender = 0;
  int sender_op = 0;
  std::int64_t arrival_ns = 0;     // CLOCK_MONOTONIC
  std::int64_t first_byte_ns = 0;  // <= arrival_ns
};
// The sender's side of one cross-DC message (send op `op_index`): the op was
// reached (queued), its first and last byte handed to a socket, and the
// streams that carried it with their cwnd and srtt at its first chunk.
struct SendRecord {
  int op_index = 0;
  std::int64_t queued_ns = 0;  // CLOCK_MONOTONIC
  std::int64_t first_sent_ns = 0;
  std::int64_t last_sent_ns = 0;
  std::vector<StreamAtStart> streams;
};
// Times are CLOCK_MONOTONIC nanoseconds; the coordinator moves them to the run's origin.
struct Report {
  int iteration = 0;
  std::vector<Event> events;
  std::vector<Arrival> arrivals;
  std::vector<SendRecord> sends;  // its cross-DC send ops
};
struct Stop {};
// Across machines each has its own CLOCK_MONOTONIC: the coordinator sends its
// time and the worker answers with its own, so that its reports' times can
// be moved to the coordinator's clock (the probe with the shortest round trip).
struct ClockProbe {
  int sequence = 0;
  std::int64_t coordinator_ns = 0;
};
struct ClockReply {
  int sequence = 0;
  std::int64_t coordinator_ns = 0;  // the probe's, echoed
  std::int64_t worker_ns = 0;
};
struct Failed {
  std::string reason;
};

// ---- BubbleTea's processes ----------------------------------------------------

struct PrefillHello {
  int worker = 0;  // the training worker whose GPU it borrows
  int pid = 0;
};
struct SinkHello {
  int sink = 0;  // which decode sink: one per decode DC
  int pid = 0;
};
struct SinkAssign {
  std::uint32_t ipv4 = 0;  // host byte order
  std::uint16_t port = 0;
  std::uint32_t chunk_size = 0;
  std::uint64_t max_message_bytes = 0;  // the largest KV message a prefill worker sends
  int senders = 0;                      // prefill workers that will connect
};
struct PrefillAssign {
  int worker = 0;
  std::string gpu_lease;
  int sink = 0;  // its decode sink's id (across machines, in the KV channel's proof)
  std::uint32_t sink_ipv4 = 0;
  std::uint16_t sink_port = 0;
  int streams = 1;  // TCP connections of its KV channel
  std::uint32_t chunk_size = 0;
  std::uint32_t not_sent_lowat = 0;
  // Temporal sharing: the KV goes in pieces of piece_bytes, each after a grant.
  bool gated = false;
  std::uint64_t piece_bytes = 0;
  std::uint64_t max_kv_bytes = 0;
  // From a worker on its decode host itself (not gated): the cache is not
  // sent but timed at this rate (bits/s; the route's NVLink), then its header
  // goes alone, standing for its bytes. 0: its bytes go over the channel.
  std::uint64_t intra_host_bps = 0;
  // The GPU time prefill holds at once (the experiment's guard, at least
  // 1 ms): training that wants the GPU back waits at most this long.
  std::uint64_t step_ns = 0;
};
// One chunk: a time slot from start_ns for layers [first_layer, end_layer) of
// batch `batch`, duration_ns long as placed (`guard` before the predicted end
// of its bubble). It runs the batch's work up to end_layer in steps that each
// end by end_by_ns, the bubble's predicted end: a bubble that began late uses
// the guard, and what it could still not run carries over to the batch's next
// chunk. The last chunk (kv_bytes > 0: the batch's KV cache, sent after it)
// finishes what is left in any free GPU time until give_up_ns, after which
// its requests could no longer meet their TTFT SLO.
struct PrefillTask {
  int batch = 0;
  int chunk = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_by_ns = 0;
  std::int64_t give_up_ns = 0;
  std::uint64_t duration_ns = 0;
  int first_layer = 0;
  int end_layer = 0;
  int tokens = 0;
  std::uint64_t kv_bytes = 0;
};
// Layers [first_layer, end_layer) of a batch ran in [start_ns, end_ns), in
// the slot of chunk `chunk`: its layers and any carried over from the
// batch's earlier chunks, or the part before training took the GPU back
// (then more parts follow, or a PrefillMissed).
struct PrefillDone {
  int batch = 0;
  int chunk = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int first_layer = 0;
  int end_layer = 0;
};
// The batch's last chunk could not finish its layers by give_up_ns: the GPU
// was busy (until busy_until_ns) at at_ns.
struct PrefillMissed {
  int batch = 0;
  int chunk = 0;
  std::int64_t at_ns = 0;
  std::int64_t busy_until_ns = 0;
};
struct KvGateRequest {
  int batch = 0;
  int piece = 0;
};
struct KvGateGrant {
  int batch = 0;
  int piece = 0;
};
struct KvGateRelease {
  int batch = 0;
  int piece = 0;
};
struct KvSent {
  int batch = 0;
  std::int64_t start_ns = 0;    // its first byte was handed to the channel
  std::int64_t written_ns = 0;  // its last byte was written to a socket
};
struct KvArrived {
  int batch = 0;
  int worker = 0;  // whose prefill worker sent it
  std::uint64_t bytes = 0;
  std::int64_t at_ns = 0;
};

// BubbleTea: a compute of a worker whose GPU prefill shares ended, told as it
// happens (the iteration's report comes at its end): the coordinator moves
// that GPU's predicted bubbles by how far the schedule has drifted.
struct ComputeDone {
  int iteration = 0;
  int op_index = 0;
  std::int64_t end_ns = 0;  // CLOCK_MONOTONIC
};

using Message =
    std::variant<Hello, Assign, Listening, Connect, Ready, Start, GateRequest, GateGrant, GateRelease, Report, Stop,
                 Failed, PrefillHello, SinkHello, SinkAssign, PrefillAssign, PrefillTask, PrefillDone, PrefillMissed,
                 KvGateRequest, KvGateGrant, KvGateRelease, KvSent, KvArrived, ClockProbe, ClockReply, ComputeDone>;

// "hello", "assign", ... for messages in errors.
std::string type_name(const Message& message);

// The whole frame: length prefix, type byte, fields.
std::vector<std::byte> encode(const Message& message);
// One frame's body (what follows the length prefix). Throws ControlError.
Message decode(std::span<const std::byte> body);

// Reassembles frames from a byte stream (whatever the reads return).
class FrameReader {
 public:
  void feed(std::span<const std::byte> bytes);
  // The next complete message, if one is buffered. Throws ControlError for a
  // length outside 1..kMaxFrameBytes or a malformed body.
  std::optional<Message> next();
  // Bytes of an incomplete frame buffered (non-zero at EOF: a truncated frame).
  std::size_t pending() const { return buffer_.size() - consumed_; }

  // From now on every frame is followed by a tag of `tag_bytes`, which
  // `check(frame, tag)` must accept (a control channel over TCP:
  // control_auth.hpp); a frame it refuses throws ControlError.
  using TagCheck = std::function<bool(std::span<const std::byte> frame, std::span<const std::byte> tag)>;
  void require_tags(std::size_t tag_bytes, TagCheck check);

 private:
  std::vector<std::byte> buffer_;
  std::size_t consumed_ = 0;
  std::size_t tag_bytes_ = 0;
  TagCheck check_tag_;
  std::uint64_t frames_ = 0;
};

}  // namespace wanlab::harness::control
