// The simulator of simulate.hpp, in two rooms: simulate.cpp runs the
// workers (ops, messages, ring all-reduce steps, the event loop's iteration),
// simulate_wire.cpp moves bits (links, channels, TCP rounds, sharing,
// time stepping). Internal to the harness library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/simulate_internal.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/tcp_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace wanlab::harness::detail::sim {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kDoneBits = 1e-3;  // rounding left over when a transfer's last bit is sent

struct LinkState : LinkRate {
  bool tcp_rounds = true;                // false inside a [fabric] (RDMA): steady rate, no slow start
  double ring_stream_pacing_bps = kInf;  // of a ring all-reduce's streams (ring_stream_pacing_bps)
  std::vector<int> on_wire;              // transfer ids
  // Temporal sharing (link_gate.hpp): the link's turns in link_slot order,
  // each slot's sends together. slot_sizes: sends per slot, from the plan.
  std::vector<int> slot_sizes;
  std::multimap<int, int> slotted;  // link_slot -> transfer id, issued and not yet on the wire
  int current_slot = 0;             // whose turn it is
  int current_left = 0;             // sends of current_slot not yet wholly sent
  bool unbalanced = false;          // its transfers on the wire changed since their rates were set
  double queue_limit_bits = kInf;   // what its drop-tail queue holds
  double backlog_bits = 0;          // what its senders pushed and it has not carried yet
  int reverse = -1;                 // a WAN link: the link back, which carries its ACKs
  double acks_bps = 0;              // of its capacity, what the ACKs of the data on `reverse` take
  // A drop-tail FIFO serves what reaches it at one instant one after
  // another (Simulator::served_after_tie): the latest instant a transfer's
  // first round reached it, and how many others reached it then.
  double first_round_at = -1;
  int tied = 0;
  double data_capacity_bps() const { return std::max(0.0, capacity_bps - acks_bps); }
  double queue_wait_s() const;
};

// A TCP channel's state between its rounds and messages.
struct ChannelTcp {
  TcpChannelState state;
  double last_sent = -1;  // when its last bit was sent; -1: never
  double recovering_until = -1;  // a loss before then is of the same window: cwnd fell once
  // The channel's latest round (docs/SIMULATOR.md, "Messages back to back"):
  // until its ACKs are back, a message queued behind the one that sent it
  // has only the window that round left free, and slow start counts the
  // round whole.
  double round_ends = -1;            // when the round's ACKs are back; -1: no round to join
  double round_in_flight_bytes = 0;  // per stream, what the round has in flight
  TcpChannelState before_round;      // the state the round began from
};

// A channel's transfers not yet sent, in order: a list through
// Transfer::next_queued, so that a channel allocates nothing.
struct ChannelQueue {
  int head = -1;  // transfer ids; -1: none
  int tail = -1;
};

struct Transfer {
  int link = 0;
  int streams = 1;
  double effective_streams = 1;  // tcp_model.hpp: the streams its chunks keep busy to its end
  double bits_left = 0;          // of the whole transfer
  double round_bits = 0;         // put on the wire in the current round
  double round_bits_left = 0;    // of those, not yet sent
  double round_ends = 0;         // the next round begins no earlier
  double window_bits = 0;        // what its streams may have in flight (its cwnds, at most the ceiling)
  bool on_wire_before = false;   // its first round has begun
  bool joins_round = false;      // its current round is the rest of its channel's round
  bool tie_served = false;       // its first round reached a FIFO together with another's; waited its turn
  double cap_bps = kInf;
  double rate_bps = 0;
  int slot = -1;
  int message = -1;             // index into messages_, or
  int collective = -1;          // index into collectives_: the all-reduce whose ring step this is
  int ring_member = -1;         // of such a step: the receiver's position in the ring
  std::pair<int, int> channel;  // (sender, receiver): one transport channel, FIFO
  // The channel's entries in channels_ and channel_tcp_, looked up once
  // (an unordered_map's elements stay where they are).
  ChannelQueue* queue = nullptr;
  ChannelTcp* tcp = nullptr;
  int next_queued = -1;       // the transfer after it on its channel
  int record = -1;            // index into the record's transfers: a cross-DC message
  double extra_delay_ns = 0;  // a pipelined ring's later steps, after its last bit arrives
  // A segment it lost to a full queue arrives, resent, no earlier than this.
  double resent_arrives = -1;
};

struct Message {
  int send_event = -1;
  bool arrived = false;
  int waiting_worker = -1;  // blocked in the recv of this message
};

enum class Status { ready, computing, waiting, collective, done };

struct WorkerState {
  std::size_t next_op = 0;
  Status status = Status::ready;
  double since = 0;  // when the current wait began
};

// One member of a ring all-reduce, as the worker runs it (worker.cpp): on
// joining it sends its first piece, and each piece it receives from its
// predecessor lets it send the next, until it has received them all. The
// members go at their own pace: a member beside fast hops is not held at
// each step for the ring's slowest hop.
struct RingMember {
  bool joined = false;
  bool done = false;
  bool waiting = false;  // its worker is in the allreduce_wait for it
  int arrived = 0;       // pieces in from its predecessor
  int received = 0;      // of those, taken
  double joined_at = 0;
  int op = -1;  // its op index
};

// One all-reduce of an iteration: a ring and a number (Op::microbatch).
struct Collective {
  std::vector<int> ring;
  double chunk_bits = 0;            // what each member sends its successor per ring step
  std::vector<RingMember> members;  // by position in the ring
};

enum class TimedKind { compute, arrival, round };

struct Timed {
  double time;
  std::uint64_t sequence;
  TimedKind kind;
  int index;  // transfer id (arrival, round) or worker id (compute)
  bool operator>(const Timed& other) const { return std::tie(time, sequence) > std::tie(other.time, other.sequence); }
};

inline std::int64_t to_ns(double ns) { return static_cast<std::int64_t>(std::llround(ns)); }

class Simulator {
 public:
  Simulator(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model);
  RunRecord run(int iterations, SimulationStats* stats);

 private:
  // --- workers (simulate.cpp)
  const Worker& worker(int id) const { return plan_.workers[static_cast<std::size_t>(id)].worker; }
  const Op& current_op(int id) const {
    return plan_.workers[static_cast<std::size_t>(id)].ops[states_[static_cast<std::size_t>(id)].next_op];
  }
  double run_iteration(int iteration, double start);
  bool finished() const { return done_workers_ == states_.size() && timed_.empty(); }
  void make_ready(int id);
  // Runs every worker as far as it can go at now_, in id order.
  void advance_workers();
  // op_index -1: the worker's current op.
  Event& add_event(int id, const Op& op, double start, double end, int op_index = -1);
  void start_op(int id);
  void number_messages();
  // collectives_ from the plan's allreduce ops, and each op's collective.
  void make_collectives();
  // Each link's slot_sizes, from the plan's gated sends.
  void count_slots();
  // The message of the worker's current op, a send or recv.
  int message_of(int id) const {
    return message_of_op_[first_op_[static_cast<std::size_t>(id)] + states_[static_cast<std::size_t>(id)].next_op];
  }
  void schedule(Timed timed);
  int collective_of(int id) const {
    return collective_of_op_[first_op_[static_cast<std::size_t>(id)] + states_[static_cast<std::size_t>(id)].next_op];
  }
  // The worker's position in the ring of its current op (an all-reduce or a wait).
  std::size_t place_in(int id) const {
    const auto worker = static_cast<std::size_t>(id);
    return current_op(id).within_dc ? place_in_dc_ring_[worker] : place_in_ring_[worker];
  }
  int ring_pieces(const Collective& collective) const;
  void join_collective(int id);
  void wait_for_collective(int id);
  // The member's next piece to its successor.
  void send_piece(int index, std::size_t position);
  // Takes the member's arrived pieces, sending the next for each, until it has them all.
  void take_pieces(int index, std::size_t position);
  void finish_member(Collective& collective, std::size_t position);
  double longest_hop_delay_ns(const std::vector<int>& ring) const;
  void arrive(int transfer_id);
  [[noreturn]] void fail_too_long() const;
  std::string describe_deadlock() const;

  // --- the wire (simulate_wire.cpp)
  void make_links(const emulator::Scenario& scenario);
  // A WAN whose pairs change over time (schedules, [[event]]s): link
  // `link_index` as the testbed has it now (the experiment's wan_start on),
  // and when it changes next.
  void follow_wan(int link_index);
  void apply_wan_changes();
  int link_of(int from, int to) const;
  bool same_server(int a, int b) const;
  // Returns the transfer's id.
  int start_transfer(int from, int to, double bits, int slot, int message, int collective);
  int record_transfer(int from, int to);
  void put_on_wire(LinkState& link, int id);
  bool served_after_tie(LinkState& link, int id);
  bool peer_sending(std::pair<int, int> channel) const;
  double ack_queue_wait_s(const LinkState& link) const;
  void begin_round(const LinkState& link, Transfer& transfer);
  bool join_round(const LinkState& link, Transfer& transfer);
  double data_rate_bps(int link_index) const;
  static double paced_cap_bps(const LinkState& link, const Transfer& transfer, double cap_bps);
  void mark_first_sent(int id, double delay_ns);
  void mark_last_sent(int id, double delay_ns);
  void mark(int id, double delay_ns, std::int64_t TransferRecord::*sent, std::int64_t TransferRecord::*received);
  void admit(int id);
  void start_next_slot(int link_index);
  // A send of the link's current slot is wholly sent.
  void slot_sent(LinkState& link);
  void end_round(const LinkState& link, Transfer& transfer);
  // Marks the link's rates as stale; balance_links sets them, once per link
  // and step however often its transfers changed.
  void rebalance(int link_index);
  void balance_links();
  void share(const LinkState& link, double capacity_bps, std::vector<Transfer*>& transfers) const;
  // Moves time to the next compute completion, arrival or last bit sent.
  void step_time();
  void send_until(double next, int first_done);
  void fill_queue(LinkState& link, double elapsed);
  static double queue_limit_bits(const LinkState& link, const emulator::PairParams& pair, std::uint64_t rtt_ns);
  void take_sent_transfers_off_the_wire();

  const Plan& plan_;
  LinkModel model_;
  int dcs_;
  // The testbed as `wanlab train` brings it up (scale_scenario, with the
  // run's queue floor): its queues are the simulator's.
  emulator::Scenario queues_;
  const emulator::Scenario* timeline_ = nullptr;  // set when the WAN changes over time
  std::vector<double> wan_change_at_;             // per link: when it changes next (kInf: never)
  double next_wan_change_ = kInf;                 // the least of them
  std::optional<FabricLinks> fabric_;             // the experiment's [fabric]
  RunRecord record_;
  std::vector<LinkState> links_;
  std::vector<Collective> collectives_;
  std::vector<WorkerState> states_;
  std::vector<int> ready_;  // made ready since the last advance_workers (may repeat)
  std::size_t done_workers_ = 0;
  std::set<int> wired_links_;          // links with transfers on the wire, by index
  std::vector<int> unbalanced_links_;  // marked by rebalance
  std::vector<int> rounds_sent_;       // links where a round was sent this step (send_until)
  std::vector<Transfer> transfers_;
  // Keyed by channel_key(sender, receiver); looked up, never walked.
  std::unordered_map<std::uint64_t, ChannelQueue> channels_;   // transfers not yet sent, in order
  std::unordered_map<std::uint64_t, ChannelTcp> channel_tcp_;  // from iteration to iteration
  std::vector<Message> messages_;
  std::vector<std::size_t> first_op_;       // per worker, the index of its first op among all workers' ops
  std::vector<int> message_of_op_;          // by op index among all: its message, or -1
  std::vector<int> collective_of_op_;       // by op index among all: its collective (allreduce, allreduce_wait), or -1
  std::vector<std::size_t> place_in_ring_;  // by worker: its position in Worker::allreduce_group
  std::vector<std::size_t> place_in_dc_ring_;  // and in Worker::dc_group
  std::size_t messages_count_ = 0;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
  std::uint64_t sequence_ = 0;
  SimulationStats stats_;
  double now_ = 0;
  int iteration_ = 0;
};

}  // namespace wanlab::harness::detail::sim
