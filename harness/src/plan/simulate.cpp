// Discrete-event simulation of a Plan with fluid link sharing: between two
// events every transfer on the wire moves at a constant rate, recomputed
// (max-min fair, per-transfer caps) whenever a link's set of transfers changes.
#include "wanlab/harness/simulate.hpp"

#include "simulate_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <optional>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace wanlab::harness {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kDoneBits = 1e-3;  // rounding left over when a transfer's last bit is sent

struct LinkState : detail::LinkRate {
  bool tcp_rounds = true;            // false inside a [fabric] (RDMA): steady rate, no slow start
  std::vector<int> on_wire;          // transfer ids
  std::map<int, int> slotted;        // link_slot -> transfer id, issued and not yet on the wire
  int next_slot = 0;
  bool slot_on_wire = false;
};

struct Transfer {
  int link = 0;
  int streams = 1;
  double effective_streams = 1;  // tcp_model.hpp: the streams its chunks keep busy to its end
  double bits_left = 0;       // of the whole transfer
  double round_bits = 0;      // put on the wire in the current round
  double round_bits_left = 0; // of those, not yet sent
  double round_ends = 0;      // the next round begins no earlier
  bool on_wire_before = false;  // its first round has begun
  double cap_bps = kInf;
  double rate_bps = 0;
  int slot = -1;
  int message = -1;     // index into messages_, or
  int collective = -1;  // stage whose all-reduce step this belongs to
  std::pair<int, int> channel;  // (sender, receiver): one transport channel, FIFO
  int record = -1;      // index into the record's transfers: a cross-DC message
  double extra_delay_ns = 0;  // a pipelined ring's later steps, after its last bit arrives
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

struct Collective {
  std::vector<int> ring;
  int joined = 0;
  int step = 0;
  int pending = 0;
  std::vector<double> joined_at;  // by worker id
};

// A TCP channel's state between its rounds and messages.
struct ChannelTcp {
  TcpChannelState state;
  double last_sent = -1;  // when its last bit was sent; -1: never
};

enum class TimedKind { compute, arrival, round };

struct Timed {
  double time;
  std::uint64_t sequence;
  TimedKind kind;
  int index;     // transfer id (arrival, round) or worker id (compute)
  bool operator>(const Timed& other) const {
    return std::tie(time, sequence) > std::tie(other.time, other.sequence);
  }
};

std::int64_t to_ns(double ns) { return static_cast<std::int64_t>(std::llround(ns)); }

std::uint64_t channel_key(std::pair<int, int> channel) {
  return (static_cast<std::uint64_t>(channel.first) << 32) | static_cast<std::uint32_t>(channel.second);
}

// Max-min fair shares of `capacity` among transfers with individual caps.
void share_fairly(double capacity, std::vector<Transfer*>& transfers) {
  std::sort(transfers.begin(), transfers.end(),
            [](const Transfer* a, const Transfer* b) { return a->cap_bps < b->cap_bps; });
  double left = capacity;
  std::size_t remaining = transfers.size();
  for (Transfer* transfer : transfers) {
    double share = left / static_cast<double>(remaining);  // inf when the link is unlimited
    transfer->rate_bps = std::min(transfer->cap_bps, share);
    if (std::isfinite(left)) left = std::max(0.0, left - transfer->rate_bps);
    --remaining;
  }
}

class Simulator {
 public:
  Simulator(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model)
      : plan_(plan), model_(model), dcs_(static_cast<int>(scenario.dcs.size())) {
    record_.plan = plan;
    record_.runtime = kSimulatorRuntime;
    if (plan.experiment.fabric) fabric_ = detail::fabric_links(plan, scenario.dcs.size());
    make_links(scenario);
    for (std::size_t stage = 0; stage < static_cast<std::size_t>(plan.experiment.parallel.pp); ++stage) {
      collectives_.push_back(Collective{plan.workers[stage].worker.allreduce_group, 0, 0, 0, {}});
    }
  }

  RunRecord run(int iterations, SimulationStats* stats) {
    // Exactly one event per op and iteration: no growth beyond the plan's size.
    std::size_t ops = 0;
    for (const WorkerPlan& worker_plan : plan_.workers) ops += worker_plan.ops.size();
    record_.events.reserve(ops * static_cast<std::size_t>(std::max(iterations, 0)));
    double start = 0;
    for (int iteration = 0; iteration < iterations; ++iteration) {
      double end = run_iteration(iteration, start);
      record_.iteration_start_ns.push_back(to_ns(start));
      record_.iteration_end_ns.push_back(to_ns(end));
      start = end;
    }
    if (stats != nullptr) *stats = stats_;
    return std::move(record_);
  }

 private:
  void make_links(const emulator::Scenario& scenario) {
    for (int src = 0; src < dcs_; ++src) {
      for (int dst = 0; dst < dcs_; ++dst) {
        LinkState link;
        static_cast<detail::LinkRate&>(link) = detail::link_rate(plan_.experiment, scenario, model_, src, dst);
        links_.push_back(link);
      }
    }
    if (!fabric_) return;
    // Inside DC d: links_[d x DCs + d] between its servers, links_[DCs^2 + d] inside one.
    for (int dc = 0; dc < dcs_; ++dc) {
      LinkState& fabric = links_[static_cast<std::size_t>(dc * dcs_ + dc)];
      fabric = LinkState{};
      static_cast<detail::LinkRate&>(fabric) = fabric_->fabric[static_cast<std::size_t>(dc)];
      fabric.tcp_rounds = false;
    }
    for (int dc = 0; dc < dcs_; ++dc) {
      LinkState nvlink;
      static_cast<detail::LinkRate&>(nvlink) = fabric_->nvlink;
      nvlink.tcp_rounds = false;
      links_.push_back(nvlink);
    }
  }

  const Worker& worker(int id) const { return plan_.workers[static_cast<std::size_t>(id)].worker; }
  const Op& current_op(int id) const {
    return plan_.workers[static_cast<std::size_t>(id)].ops[states_[static_cast<std::size_t>(id)].next_op];
  }

  double run_iteration(int iteration, double start) {
    iteration_ = iteration;
    now_ = start;
    states_.assign(plan_.workers.size(), WorkerState{});
    ready_.resize(plan_.workers.size());
    std::iota(ready_.begin(), ready_.end(), 0);
    done_workers_ = 0;
    messages_.clear();
    message_index_.clear();
    transfers_.clear();
    channels_.clear();
    for (LinkState& link : links_) {
      link.next_slot = 0;
      link.slot_on_wire = false;
    }
    for (Collective& collective : collectives_) {
      collective.joined = collective.step = collective.pending = 0;
      collective.joined_at.assign(plan_.workers.size(), 0);
    }
    std::size_t first_event = record_.events.size();
    while (true) {
      advance_workers();
      if (finished()) break;
      step_time();
    }
    stats_.peak_transfers = std::max(stats_.peak_transfers, transfers_.size());
    double end = start;
    for (std::size_t i = first_event; i < record_.events.size(); ++i) {
      end = std::max(end, static_cast<double>(record_.events[i].end_ns));
    }
    return end;
  }

  bool finished() const { return done_workers_ == states_.size() && timed_.empty(); }

  void make_ready(int id) {
    states_[static_cast<std::size_t>(id)].status = Status::ready;
    ready_.push_back(id);
  }

  // Runs every worker as far as it can go at now_, in id order. Only the
  // workers made ready since the last pass can go: a worker's op never makes
  // another ready at once (arrivals and compute ends are timed).
  void advance_workers() {
    std::vector<int> batch;
    batch.swap(ready_);
    std::sort(batch.begin(), batch.end());
    batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
    for (int id : batch) {
      while (states_[static_cast<std::size_t>(id)].status == Status::ready) start_op(id);
    }
  }

  Event& add_event(int id, const Op& op, double start, double end) {
    Event event;
    event.worker = id;
    event.iteration = iteration_;
    event.op_index = static_cast<int>(states_[static_cast<std::size_t>(id)].next_op);
    event.kind = op.kind;
    event.microbatch = op.microbatch;
    event.peer = op.peer;
    event.bytes = op.bytes;
    event.start_ns = to_ns(start);
    event.end_ns = to_ns(end);
    event.cross_dc = op.cross_dc;
    record_.events.push_back(event);
    return record_.events.back();
  }

  void start_op(int id) {
    WorkerState& state = states_[static_cast<std::size_t>(id)];
    const std::vector<Op>& ops = plan_.workers[static_cast<std::size_t>(id)].ops;
    if (state.next_op == ops.size()) {
      state.status = Status::done;
      ++done_workers_;
      return;
    }
    const Op& op = ops[state.next_op];
    switch (op.kind) {
      case OpKind::forward:
      case OpKind::backward: {
        double end = now_ + static_cast<double>(op.duration_ns);
        add_event(id, op, now_, end);
        state.status = Status::computing;
        schedule({end, 0, TimedKind::compute, id});
        break;
      }
      case OpKind::send: {
        int message = message_for(id, op.peer, op.microbatch);
        messages_[static_cast<std::size_t>(message)].send_event = static_cast<int>(record_.events.size());
        add_event(id, op, now_, now_);
        start_transfer(id, op.peer, static_cast<double>(op.bytes) * 8, op.link_slot, message, -1);
        ++state.next_op;
        break;
      }
      case OpKind::recv: {
        int message = message_for(op.peer, id, op.microbatch);
        const Message& arrived = messages_[static_cast<std::size_t>(message)];
        if (arrived.arrived) {
          add_event(id, op, now_, now_);
          ++state.next_op;
        } else {
          state.status = Status::waiting;
          state.since = now_;
          messages_[static_cast<std::size_t>(message)].waiting_worker = id;
        }
        break;
      }
      case OpKind::allreduce:
        join_collective(id);
        break;
    }
  }

  int message_for(int sender, int receiver, int microbatch) {
    // Worker ids < 2^17 (kMaxSimulatedWorkers) and microbatches < 2^12 ([model]): one 64-bit key.
    const std::uint64_t key = (static_cast<std::uint64_t>(sender) << 32) | (static_cast<std::uint64_t>(receiver) << 12) |
                              static_cast<std::uint64_t>(microbatch);
    auto [found, inserted] = message_index_.try_emplace(key,
                                                        static_cast<int>(messages_.size()));
    if (inserted) messages_.emplace_back();
    return found->second;
  }

  void schedule(Timed timed) {
    timed.sequence = sequence_++;
    timed_.push(timed);
    stats_.peak_pending = std::max(stats_.peak_pending, timed_.size());
  }

  int link_of(int from, int to) const {
    const int src = worker(from).dc;
    const int dst = worker(to).dc;
    if (fabric_ && src == dst && same_server(from, to)) return dcs_ * dcs_ + src;
    return src * dcs_ + dst;
  }
  bool same_server(int a, int b) const {
    return fabric_->server[static_cast<std::size_t>(a)] == fabric_->server[static_cast<std::size_t>(b)];
  }

  // Returns the transfer's id.
  int start_transfer(int from, int to, double bits, int slot, int message, int collective) {
    Transfer transfer;
    transfer.link = link_of(from, to);
    transfer.bits_left = bits;
    transfer.slot = slot;
    transfer.message = message;
    transfer.collective = collective;
    int id = static_cast<int>(transfers_.size());
    LinkState& link = links_[static_cast<std::size_t>(transfer.link)];
    bool cross_dc = worker(from).dc != worker(to).dc;
    transfer.streams = cross_dc ? plan_.experiment.streams : 1;
    transfer.effective_streams = effective_streams(bits / 8, transfer.streams);
    transfer.cap_bps = detail::transfer_cap_bps(link, transfer.effective_streams);
    transfer.channel = {from, to};
    if (message >= 0 && cross_dc) transfer.record = record_transfer(from, to);
    transfers_.push_back(transfer);
    // The emulated testbed's loopback (a [fabric] has NVLink instead).
    if (model_.free_communication || (!fabric_ && worker(from).host == worker(to).host)) {
      if (transfer.record >= 0) {  // no wire time, no delay
        mark_first_sent(id, 0);
        mark_last_sent(id, 0);
      }
      schedule({now_, 0, TimedKind::arrival, id});
      return id;
    }
    std::deque<int>& queue = channels_[channel_key(transfer.channel)];
    queue.push_back(id);
    if (queue.size() == 1) admit(id);
    return id;
  }

  // A cross-DC message's TransferRecord, queued now; the rest is filled in
  // as it goes on the wire and off it.
  int record_transfer(int from, int to) {
    const WorkerState& sender = states_[static_cast<std::size_t>(from)];
    const Op& op = plan_.workers[static_cast<std::size_t>(from)].ops[sender.next_op];
    TransferRecord record;
    record.worker = from;
    record.iteration = iteration_;
    record.op_index = static_cast<int>(sender.next_op);
    record.peer = to;
    record.microbatch = op.microbatch;
    record.bytes = op.bytes;
    record.queued_ns = to_ns(now_);
    record_.transfers.push_back(record);
    return static_cast<int>(record_.transfers.size() - 1);
  }

  // The transfer's next round goes on the wire (its first: the channel's
  // idle time since its last bit counts first).
  void put_on_wire(LinkState& link, int id) {
    Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
    if (!transfer.on_wire_before) {
      transfer.on_wire_before = true;
      mark_first_sent(id, link.delay_ns);
      ChannelTcp& tcp = channel_tcp_[channel_key(transfer.channel)];
      if (tcp.last_sent >= 0) after_idle(link.tcp, tcp.state, (now_ - tcp.last_sent) / 1e9);
    }
    begin_round(link, transfer);
    link.on_wire.push_back(id);
    wired_links_.insert(static_cast<int>(&link - links_.data()));
  }

  // What the transfer sends in its next round (rounds: simulate.hpp). At the
  // window ceiling the full rounds but the last go as one, at the window's
  // rate, so a long transfer costs two rounds, not one per RTT.
  void begin_round(const LinkState& link, Transfer& transfer) {
    transfer.round_bits = transfer.round_bits_left = transfer.bits_left;
    transfer.round_ends = now_;
    if (!model_.tcp_dynamics || !link.tcp_rounds) return;
    const TcpChannelState& state = channel_tcp_[channel_key(transfer.channel)].state;
    const double full_round_bits = round_bytes(link.tcp, state, transfer.effective_streams, kInf) * 8;
    const bool at_ceiling = state.cwnd_bytes >= link.tcp.window_bytes;
    if (at_ceiling && transfer.bits_left > full_round_bits) {
      const double rounds = std::ceil(transfer.bits_left / full_round_bits) - 1;
      transfer.round_bits = rounds * full_round_bits;
      transfer.cap_bps = detail::transfer_cap_bps(link, transfer.effective_streams);  // the window's rate
    } else {
      transfer.round_bits = std::min(transfer.bits_left, full_round_bits);
      transfer.cap_bps = stream_rate_bps(link.tcp, state) * transfer.effective_streams;
      transfer.round_ends = now_ + link.tcp.rtt_s * 1e9;
    }
    transfer.round_bits_left = transfer.round_bits;
  }

  // A cross-DC message's first (or last) bit goes on (or leaves) the wire now
  // and arrives one pair delay later.
  void mark_first_sent(int id, double delay_ns) {
    mark(id, delay_ns, &TransferRecord::first_sent_ns, &TransferRecord::first_received_ns);
  }
  void mark_last_sent(int id, double delay_ns) {
    mark(id, delay_ns, &TransferRecord::last_sent_ns, &TransferRecord::last_received_ns);
  }
  void mark(int id, double delay_ns, std::int64_t TransferRecord::*sent, std::int64_t TransferRecord::*received) {
    const int record = transfers_[static_cast<std::size_t>(id)].record;
    if (record < 0) return;
    TransferRecord& r = record_.transfers[static_cast<std::size_t>(record)];
    r.*sent = to_ns(now_);
    r.*received = to_ns(now_ + delay_ns);
  }

  // The head of its channel goes on the wire, or waits for its slot.
  void admit(int id) {
    const Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
    LinkState& link = links_[static_cast<std::size_t>(transfer.link)];
    if (transfer.slot >= 0) {
      link.slotted[transfer.slot] = id;
      start_next_slot(transfer.link);
    } else {
      put_on_wire(link, id);
      rebalance(transfer.link);
    }
  }

  void start_next_slot(int link_index) {
    LinkState& link = links_[static_cast<std::size_t>(link_index)];
    auto next = link.slotted.find(link.next_slot);
    if (link.slot_on_wire || next == link.slotted.end()) return;
    put_on_wire(link, next->second);
    link.slotted.erase(next);
    link.slot_on_wire = true;
    ++link.next_slot;
    rebalance(link_index);
  }

  // The round's bits have left: slow start counts them, the channel was busy until now.
  void end_round(const LinkState& link, Transfer& transfer) {
    ChannelTcp& tcp = channel_tcp_[channel_key(transfer.channel)];
    if (model_.tcp_dynamics && link.tcp_rounds) after_round(link.tcp, tcp.state, transfer.effective_streams, transfer.round_bits / 8);
    tcp.last_sent = now_;
    transfer.round_bits_left = 0;
    if (transfer.bits_left <= kDoneBits) transfer.bits_left = 0;
  }

  void rebalance(int link_index) {
    LinkState& link = links_[static_cast<std::size_t>(link_index)];
    std::vector<Transfer*> transfers;
    for (int id : link.on_wire) transfers.push_back(&transfers_[static_cast<std::size_t>(id)]);
    share_fairly(link.capacity_bps, transfers);
  }

  void join_collective(int id) {
    WorkerState& state = states_[static_cast<std::size_t>(id)];
    Collective& collective = collectives_[static_cast<std::size_t>(worker(id).stage)];
    state.status = Status::collective;
    collective.joined_at[static_cast<std::size_t>(id)] = now_;
    if (++collective.joined == static_cast<int>(collective.ring.size())) start_ring_step(worker(id).stage);
  }

  // Ring all-reduce, one step at a time: every member sends a 1/R chunk of the
  // stage's gradients to its successor; 2(R-1) steps (reduce-scatter + all-gather).
  // With a [fabric], pipelined as NCCL does: each member streams its 2(R-1)
  // chunks to its successor as one transfer, and the last chunk lands
  // 2(R-1) - 1 hop delays (the ring's longest) after that transfer's end.
  void start_ring_step(int stage) {
    Collective& collective = collectives_[static_cast<std::size_t>(stage)];
    const int members = static_cast<int>(collective.ring.size());
    const int steps = 2 * (members - 1);
    const bool pipelined = fabric_.has_value();
    if (collective.step == (pipelined ? std::min(steps, 1) : steps)) {
      finish_collective(collective);
      return;
    }
    const double chunk_bits = static_cast<double>(plan_.stage_param_bytes) * 8 / members;
    const double extra_delay_ns = pipelined ? (steps - 1) * longest_hop_delay_ns(collective.ring) : 0;
    collective.pending = members;
    for (int i = 0; i < members; ++i) {
      int from = collective.ring[static_cast<std::size_t>(i)];
      int to = collective.ring[static_cast<std::size_t>((i + 1) % members)];
      const int id = start_transfer(from, to, chunk_bits * (pipelined ? steps : 1), -1, -1, stage);
      transfers_[static_cast<std::size_t>(id)].extra_delay_ns = extra_delay_ns;
    }
  }

  double longest_hop_delay_ns(const std::vector<int>& ring) const {
    double longest = 0;
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int link = link_of(ring[i], ring[(i + 1) % ring.size()]);
      longest = std::max(longest, links_[static_cast<std::size_t>(link)].delay_ns);
    }
    return longest;
  }

  void finish_collective(const Collective& collective) {
    for (int id : collective.ring) {
      WorkerState& state = states_[static_cast<std::size_t>(id)];
      add_event(id, current_op(id), collective.joined_at[static_cast<std::size_t>(id)], now_);
      ++state.next_op;
      make_ready(id);
    }
  }

  // Moves time to the next compute completion, arrival or last bit sent.
  void step_time() {
    double next = timed_.empty() ? kInf : timed_.top().time;
    int first_done = -1;
    bool on_wire = false;
    for (int link_index : wired_links_) {
      for (int id : links_[static_cast<std::size_t>(link_index)].on_wire) {
        on_wire = true;
        const Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
        double done = now_ + (transfer.round_bits_left <= 0 ? 0 : transfer.round_bits_left / transfer.rate_bps * 1e9);
        if (done < next) {
          next = done;
          first_done = id;
        }
      }
    }
    if (!std::isfinite(next) && !on_wire) throw std::logic_error(describe_deadlock());
    if (next > kMaxSimulatedNs) fail_too_long();
    double elapsed = next - now_;
    for (int link_index : wired_links_) {
      for (int id : links_[static_cast<std::size_t>(link_index)].on_wire) {
        Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
        if (elapsed > 0) {
          const double sent = std::min(transfer.round_bits_left, transfer.rate_bps * elapsed / 1e9);
          transfer.round_bits_left -= sent;
          transfer.bits_left -= sent;
        }
      }
    }
    now_ = next;
    if (first_done >= 0) {
      Transfer& transfer = transfers_[static_cast<std::size_t>(first_done)];
      transfer.bits_left -= transfer.round_bits_left;
      transfer.round_bits_left = 0;
    }
    take_sent_transfers_off_the_wire();
    while (!timed_.empty() && timed_.top().time <= now_) {
      Timed timed = timed_.top();
      timed_.pop();
      ++stats_.completions;
      if (timed.kind == TimedKind::arrival) {
        arrive(timed.index);
      } else if (timed.kind == TimedKind::round) {
        const int link_index = transfers_[static_cast<std::size_t>(timed.index)].link;
        put_on_wire(links_[static_cast<std::size_t>(link_index)], timed.index);
        rebalance(link_index);
      } else {
        ++states_[static_cast<std::size_t>(timed.index)].next_op;
        make_ready(timed.index);
      }
    }
  }

  // Links without transfers on the wire have nothing to take off; a link's
  // next slot can only have become free where a slotted transfer was sent
  // (admit starts one at once), so only those are looked at afterwards.
  void take_sent_transfers_off_the_wire() {
    std::vector<int> sent;
    std::vector<int> slot_freed;
    const std::vector<int> wired(wired_links_.begin(), wired_links_.end());
    for (int link_index : wired) {
      LinkState& link = links_[static_cast<std::size_t>(link_index)];
      std::size_t before = sent.size();
      std::vector<int> next_round;
      const std::size_t rounds_ended = std::erase_if(link.on_wire, [&](int id) {
        Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
        if (transfer.round_bits_left > kDoneBits) return false;
        end_round(link, transfer);
        if (transfer.bits_left <= kDoneBits) {
          sent.push_back(id);
        } else if (transfer.round_ends <= now_) {
          next_round.push_back(id);
        } else {
          schedule({transfer.round_ends, 0, TimedKind::round, id});
        }
        return true;
      });
      for (std::size_t i = before; i < sent.size(); ++i) {
        mark_last_sent(sent[i], link.delay_ns);
        schedule({now_ + link.delay_ns + transfers_[static_cast<std::size_t>(sent[i])].extra_delay_ns, 0,
                  TimedKind::arrival, sent[i]});
        if (transfers_[static_cast<std::size_t>(sent[i])].slot >= 0) {
          link.slot_on_wire = false;
          slot_freed.push_back(link_index);
        }
      }
      for (int id : next_round) put_on_wire(link, id);
      if (rounds_ended > 0) rebalance(link_index);
      if (link.on_wire.empty()) wired_links_.erase(link_index);
    }
    for (int id : sent) {
      std::deque<int>& queue = channels_[channel_key(transfers_[static_cast<std::size_t>(id)].channel)];
      queue.pop_front();
      if (!queue.empty()) admit(queue.front());
    }
    for (int link_index : slot_freed) start_next_slot(link_index);
  }

  void arrive(int transfer_id) {
    const Transfer& transfer = transfers_[static_cast<std::size_t>(transfer_id)];
    if (transfer.collective >= 0) {
      Collective& collective = collectives_[static_cast<std::size_t>(transfer.collective)];
      if (--collective.pending == 0) {
        ++collective.step;
        start_ring_step(transfer.collective);
      }
      return;
    }
    Message& message = messages_[static_cast<std::size_t>(transfer.message)];
    message.arrived = true;
    record_.events[static_cast<std::size_t>(message.send_event)].end_ns = to_ns(now_);
    if (message.waiting_worker < 0) return;
    int id = message.waiting_worker;
    WorkerState& state = states_[static_cast<std::size_t>(id)];
    add_event(id, current_op(id), state.since, now_);
    ++state.next_op;
    make_ready(id);
  }

  // A transfer on the wire that never ends (its time overflows) or a run
  // beyond kMaxSimulatedNs: int64 nanoseconds would overflow next.
  [[noreturn]] void fail_too_long() const {
    throw ExperimentError(fmt::format("{}: simulate: the simulated time passes {:g} ns (about 31 years) in iteration "
                                      "{}: a link is far too slow for the messages (rates x scale {:g}) or the "
                                      "compute steps too long",
                                      plan_.experiment.path, kMaxSimulatedNs, iteration_, plan_.experiment.scale));
  }

  std::string describe_deadlock() const {
    std::string blocked;
    for (int id = 0; id < static_cast<int>(states_.size()); ++id) {
      const WorkerState& state = states_[static_cast<std::size_t>(id)];
      if (state.status != Status::waiting && state.status != Status::collective) continue;
      const Op& op = current_op(id);
      blocked += fmt::format("; worker {} (stage {} replica {}) in op {} ({} {})", id, worker(id).stage,
                             worker(id).replica, state.next_op, to_string(op.kind),
                             op.kind == OpKind::recv ? fmt::format("from {}", op.peer) : "");
    }
    for (std::size_t index = 0; index < links_.size(); ++index) {
      const LinkState& link = links_[index];
      if (link.slotted.empty()) continue;
      blocked += fmt::format("; link {}->{} holds slot {} waiting for slot {}", plan_.dc_names[index / static_cast<std::size_t>(dcs_)],
                             plan_.dc_names[index % static_cast<std::size_t>(dcs_)], link.slotted.begin()->first,
                             link.next_slot);
    }
    return fmt::format("simulate: deadlock at {:.3f} ms in iteration {}{}", now_ / 1e6, iteration_, blocked);
  }

  const Plan& plan_;
  LinkModel model_;
  int dcs_;
  std::optional<detail::FabricLinks> fabric_;  // the experiment's [fabric]
  RunRecord record_;
  std::vector<LinkState> links_;
  std::vector<Collective> collectives_;
  std::vector<WorkerState> states_;
  std::vector<int> ready_;            // made ready since the last advance_workers (may repeat)
  std::size_t done_workers_ = 0;
  std::set<int> wired_links_;         // links with transfers on the wire, by index
  std::vector<Transfer> transfers_;
  // Keyed by channel_key(sender, receiver); looked up, never walked.
  std::unordered_map<std::uint64_t, std::deque<int>> channels_;  // transfers not yet sent, in order
  std::unordered_map<std::uint64_t, ChannelTcp> channel_tcp_;    // from iteration to iteration
  std::vector<Message> messages_;
  std::unordered_map<std::uint64_t, int> message_index_;  // (sender, receiver, microbatch) -> message
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> timed_;
  std::uint64_t sequence_ = 0;
  SimulationStats stats_;
  double now_ = 0;
  int iteration_ = 0;
};

}  // namespace

RunRecord simulate(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model, int iterations,
                   SimulationStats* stats) {
  RunRecord record = simulate_training(plan, scenario, model, iterations, stats);
  if (plan.experiment.prefill.enabled) detail::simulate_prefill(record, scenario, model);
  return record;
}

RunRecord simulate_training(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model,
                            int iterations, SimulationStats* stats) {
  if (plan.dc_names.size() != scenario.dcs.size()) {
    throw std::invalid_argument(fmt::format("simulate: the plan has {} DCs, the scenario {}",
                                            plan.dc_names.size(), scenario.dcs.size()));
  }
  check_plan_size(plan, iterations);
  return Simulator(plan, scenario, model).run(iterations, stats);
}

}  // namespace wanlab::harness
