// The simulator's wire (simulator.hpp): links, per-channel FIFO order, TCP
// rounds, the links' sharing (link_share.hpp), and the step from one event
// to the next.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/simulator.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/link_share.hpp"
#include "wanlab/harness/sim/simulate.hpp"

namespace wanlab::harness::detail::sim {
namespace {

std::uint64_t channel_key(std::pair<int, int> channel) {
  return (static_cast<std::uint64_t>(channel.first) << 32) | static_cast<std::uint32_t>(channel.second);
}

}  // namespace

void Simulator::make_links(const emulator::Scenario& scenario) {
  for (int src = 0; src < dcs_; ++src) {
    for (int dst = 0; dst < dcs_; ++dst) {
      LinkState link;
      static_cast<detail::LinkRate&>(link) = detail::link_rate(plan_.experiment, scenario, model_, src, dst);
      link.queue_limit_bits = queue_limit_bits(link, queues_.pair(src, dst), queues_.rtt_ns(src, dst));
      link.ring_stream_pacing_bps = ring_stream_pacing_bps(plan_, scenario, model_, src, dst);
      if (src != dst && model_.tcp_dynamics && model_.ack_share > 0) link.reverse = dst * dcs_ + src;
      links_.push_back(link);
    }
  }
  if (emulator::has_timeline(scenario)) {
    timeline_ = &scenario;
    wan_change_at_.assign(links_.size(), kInf);
    for (int src = 0; src < dcs_; ++src)
      for (int dst = 0; dst < dcs_; ++dst)
        if (src != dst) follow_wan(src * dcs_ + dst);
    next_wan_change_ = *std::min_element(wan_change_at_.begin(), wan_change_at_.end());
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

void Simulator::follow_wan(int link_index) {
  const int src = link_index / dcs_, dst = link_index % dcs_;
  const std::uint64_t at_ns = plan_.experiment.wan_start_ns + static_cast<std::uint64_t>(std::llround(now_));
  LinkState& link = links_[static_cast<std::size_t>(link_index)];
  static_cast<detail::LinkRate&>(link) = detail::link_rate_at(plan_.experiment, *timeline_, model_, src, dst, at_ns);
  const emulator::PairAt there = emulator::pair_at(queues_, src, dst, at_ns);
  const emulator::PairAt back = emulator::pair_at(queues_, dst, src, at_ns);
  link.queue_limit_bits = queue_limit_bits(link, there.params, there.params.delay_ns + back.params.delay_ns);
  const std::uint64_t next_ns = emulator::next_pair_change_ns(*timeline_, src, dst, at_ns);
  wan_change_at_[static_cast<std::size_t>(link_index)] =
      next_ns == std::numeric_limits<std::uint64_t>::max() ? kInf : now_ + static_cast<double>(next_ns - at_ns);
  // What is on the wire moves at the new rates from now (its TCP rounds take
  // the new ceiling at their next round); a steady model's caps change now.
  for (const int id : link.on_wire) {
    Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
    if (!model_.tcp_dynamics || !link.tcp_rounds)
      transfer.cap_bps = paced_cap_bps(link, transfer, detail::transfer_cap_bps(link, transfer.effective_streams));
  }
  if (!link.on_wire.empty()) rebalance(link_index);
}

void Simulator::apply_wan_changes() {
  if (now_ < next_wan_change_) return;
  next_wan_change_ = kInf;
  for (std::size_t index = 0; index < wan_change_at_.size(); ++index) {
    if (wan_change_at_[index] <= now_) follow_wan(static_cast<int>(index));
    next_wan_change_ = std::min(next_wan_change_, wan_change_at_[index]);
  }
}

// What the link's drop-tail queue holds, in payload bits: the time the
// emulator lets a backlog take (its queue limit, emulator::make_pair_config)
// at the link's payload rate. `pair`: the testbed's, as the run brings it
// up (queues_).
double Simulator::queue_limit_bits(const LinkState& link, const emulator::PairParams& pair, std::uint64_t rtt_ns) {
  if (!std::isfinite(link.capacity_bps)) return kInf;
  const double limit_ns = static_cast<double>(emulator::make_pair_config(pair, rtt_ns, 0, 0).queue_limit_ns);
  return link.capacity_bps * limit_ns / 1e9;
}

int Simulator::link_of(int from, int to) const {
  const int src = worker(from).dc;
  const int dst = worker(to).dc;
  if (fabric_ && src == dst && same_server(from, to)) return dcs_ * dcs_ + src;
  return src * dcs_ + dst;
}
bool Simulator::same_server(int a, int b) const {
  return fabric_->server[static_cast<std::size_t>(a)] == fabric_->server[static_cast<std::size_t>(b)];
}

// `cap_bps`, or less for a ring all-reduce's step on a link that its rings
// share (the harness paces their streams at their share).
double Simulator::paced_cap_bps(const LinkState& link, const Transfer& transfer, double cap_bps) {
  if (transfer.collective < 0) return cap_bps;
  return std::min(cap_bps, link.ring_stream_pacing_bps * transfer.effective_streams);
}

// Returns the transfer's id.
int Simulator::start_transfer(int from, int to, double bits, int slot, int message, int collective) {
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
  transfer.cap_bps = paced_cap_bps(link, transfer, detail::transfer_cap_bps(link, transfer.effective_streams));
  transfer.channel = {from, to};
  transfer.tcp = &channel_tcp_[channel_key(transfer.channel)];
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
  ChannelQueue& queue = channels_[channel_key(transfer.channel)];
  transfers_[static_cast<std::size_t>(id)].queue = &queue;
  if (queue.tail >= 0) {
    transfers_[static_cast<std::size_t>(queue.tail)].next_queued = id;
  } else {
    queue.head = id;
  }
  queue.tail = id;
  if (queue.head == id) admit(id);
  return id;
}

// A cross-DC message's TransferRecord, queued now; the rest is filled in
// as it goes on the wire and off it.
int Simulator::record_transfer(int from, int to) {
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
void Simulator::put_on_wire(LinkState& link, int id) {
  if (served_after_tie(link, id)) return;
  Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
  transfer.joins_round = false;
  if (!transfer.on_wire_before) {
    transfer.on_wire_before = true;
    mark_first_sent(id, link.delay_ns);
    ChannelTcp& tcp = *transfer.tcp;
    if (tcp.last_sent >= 0) after_idle(link.tcp, tcp.state, (now_ - tcp.last_sent) / 1e9);
    if (peer_sending(transfer.channel)) on_peer_segment(tcp.state);
    if (model_.tcp_dynamics && link.tcp_rounds && tcp.round_ends > now_ && !join_round(link, transfer)) {
      // Its channel's round filled the window: it goes as that round's ACKs come back.
      schedule({tcp.round_ends, 0, TimedKind::round, id});
      return;
    }
  }
  if (!transfer.joins_round) begin_round(link, transfer);
  link.on_wire.push_back(id);
  wired_links_.insert(static_cast<int>(&link - links_.data()));
}

// Transfers whose first rounds reach a FIFO link at the same instant (the
// replicas of a data-parallel job, which the simulator runs exactly in step)
// are served one after another: each later one goes a segment's time on the
// link after the one before. Real replicas never send at one instant, and on
// a FIFO whichever is first keeps ahead (its window grows first, and its
// share with it: share_fifo), so they drift apart
// (docs/SIMULATOR.md, "Replicas out of step"). Returns whether `id` waits.
bool Simulator::served_after_tie(LinkState& link, int id) {
  Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
  if (!model_.serve_ties_in_turn || !model_.tcp_dynamics || !link.tcp_rounds || transfer.on_wire_before ||
      transfer.tie_served || !std::isfinite(link.capacity_bps) || !(link.capacity_bps > 0))
    return false;
  if (now_ != link.first_round_at) {
    link.first_round_at = now_;
    link.tied = 0;
    return false;
  }
  ++link.tied;
  transfer.tie_served = true;
  const double segment_ns = kSegmentBytes * 8 / link.capacity_bps * 1e9;
  schedule({now_ + link.tied * segment_ns, 0, TimedKind::round, id});
  return true;
}

// How long what waits in a link's drop-tail queue takes to leave it, now.
double LinkState::queue_wait_s() const { return data_capacity_bps() > 0 ? backlog_bits / data_capacity_bps() : 0; }

// How long the ACKs of what a WAN link carries wait in the queue of its link
// back, behind the data going the other way, now (docs/SIMULATOR.md, "ACKs").
double Simulator::ack_queue_wait_s(const LinkState& link) const {
  return link.reverse >= 0 ? links_[static_cast<std::size_t>(link.reverse)].queue_wait_s() : 0;
}

// The receiver is sending on the same connections (a transport channel
// carries both ways): its message to the sender has begun and is not yet
// wholly sent, so segments of it come in while this transfer starts.
bool Simulator::peer_sending(std::pair<int, int> channel) const {
  const auto peer = channels_.find(channel_key({channel.second, channel.first}));
  return peer != channels_.end() && peer->second.head >= 0 &&
         transfers_[static_cast<std::size_t>(peer->second.head)].on_wire_before;
}

// What the transfer sends in its next round (rounds: simulate.hpp). At the
// window ceiling the full rounds but the last go as one, at the window's
// rate, so a long transfer costs two rounds, not one per RTT.
void Simulator::begin_round(const LinkState& link, Transfer& transfer) {
  transfer.round_bits = transfer.round_bits_left = transfer.bits_left;
  transfer.round_ends = now_;
  if (!model_.tcp_dynamics || !link.tcp_rounds) return;
  const TcpChannelState& state = transfer.tcp->state;
  const double full_round_bits = round_bytes(link.tcp, state, transfer.effective_streams, kInf) * 8;
  const bool at_ceiling = state.cwnd_bytes >= link.tcp.window_bytes;
  if (at_ceiling && transfer.bits_left > full_round_bits) {
    const double rounds = std::ceil(transfer.bits_left / full_round_bits) - 1;
    transfer.round_bits = rounds * full_round_bits;
    // The window's rate.
    transfer.cap_bps = paced_cap_bps(link, transfer, detail::transfer_cap_bps(link, transfer.effective_streams));
  } else {
    transfer.round_bits = std::min(transfer.bits_left, full_round_bits);
    transfer.cap_bps = paced_cap_bps(link, transfer, stream_rate_bps(link.tcp, state) * transfer.effective_streams);
    transfer.round_ends = now_ + (link.tcp.rtt_s + ack_queue_wait_s(link)) * 1e9;
  }
  transfer.round_bits_left = transfer.round_bits;
  transfer.window_bits = full_round_bits;
}

// The transfer's first round is the rest of its channel's round, which a
// message before it began and whose ACKs are not back yet: the streams
// keep sending as TCP does with more queued, into what that round left of
// the window (not a whole window more). False where it left nothing.
bool Simulator::join_round(const LinkState& link, Transfer& transfer) {
  const ChannelTcp& tcp = *transfer.tcp;
  const double window_bytes = std::min(tcp.before_round.cwnd_bytes, link.tcp.window_bytes);
  const double room_bits = std::max(0.0, window_bytes - tcp.round_in_flight_bytes) * 8 * transfer.effective_streams;
  if (room_bits <= kDoneBits) return false;
  transfer.joins_round = true;
  transfer.round_bits = transfer.round_bits_left = std::min(transfer.bits_left, room_bits);
  transfer.round_ends = tcp.round_ends;
  transfer.window_bits = round_bytes(link.tcp, tcp.state, transfer.effective_streams, kInf) * 8;
  transfer.cap_bps = paced_cap_bps(link, transfer, stream_rate_bps(link.tcp, tcp.state) * transfer.effective_streams);
  return true;
}

// A cross-DC message's first (or last) bit goes on (or leaves) the wire now
// and arrives one pair delay later.
void Simulator::mark_first_sent(int id, double delay_ns) {
  mark(id, delay_ns, &TransferRecord::first_sent_ns, &TransferRecord::first_received_ns);
}
void Simulator::mark_last_sent(int id, double delay_ns) {
  mark(id, delay_ns, &TransferRecord::last_sent_ns, &TransferRecord::last_received_ns);
}
void Simulator::mark(int id, double delay_ns, std::int64_t TransferRecord::*sent,
                     std::int64_t TransferRecord::*received) {
  const int record = transfers_[static_cast<std::size_t>(id)].record;
  if (record < 0) return;
  TransferRecord& r = record_.transfers[static_cast<std::size_t>(record)];
  r.*sent = to_ns(now_);
  r.*received = to_ns(now_ + delay_ns);
}

// The head of its channel goes on the wire, or waits for its slot.
void Simulator::admit(int id) {
  const Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
  LinkState& link = links_[static_cast<std::size_t>(transfer.link)];
  if (transfer.slot >= 0) {
    link.slotted.emplace(transfer.slot, id);
    start_next_slot(transfer.link);
  } else {
    put_on_wire(link, id);
    rebalance(transfer.link);
  }
}

// The sends of the slot whose turn it is go on the wire as they are issued;
// the turn passes once all of them are wholly sent (slot_sent).
void Simulator::start_next_slot(int link_index) {
  LinkState& link = links_[static_cast<std::size_t>(link_index)];
  const auto [first, last] = link.slotted.equal_range(link.current_slot);
  if (first == last) return;
  for (auto it = first; it != last; ++it) put_on_wire(link, it->second);
  link.slotted.erase(first, last);
  rebalance(link_index);
}

void Simulator::slot_sent(LinkState& link) {
  if (--link.current_left > 0) return;
  ++link.current_slot;
  const auto next = static_cast<std::size_t>(link.current_slot);
  link.current_left = next < link.slot_sizes.size() ? link.slot_sizes[next] : 0;
}

// The round's bits have left: slow start counts them, the channel was busy until now.
void Simulator::end_round(const LinkState& link, Transfer& transfer) {
  ChannelTcp& tcp = *transfer.tcp;
  if (model_.tcp_dynamics && link.tcp_rounds) {
    const double per_stream_bytes = transfer.round_bits / 8 / transfer.effective_streams;
    // The round's last bytes wait behind what the link's queue holds now: its ACKs' RTT.
    const double queue_wait_s = link.queue_wait_s() + ack_queue_wait_s(link);
    if (transfer.joins_round && tcp.round_ends >= 0) {
      // Slow start counts the channel's round whole, from the state it began with.
      tcp.round_in_flight_bytes += per_stream_bytes;
      tcp.state = tcp.before_round;
      after_round(link.tcp, tcp.state, 1, tcp.round_in_flight_bytes, queue_wait_s);
    } else {
      tcp.before_round = tcp.state;
      after_round(link.tcp, tcp.state, transfer.effective_streams, transfer.round_bits / 8, queue_wait_s);
      // A round of one RTT can be joined; rounds at the window's rate end as they are sent.
      tcp.round_ends = !transfer.joins_round && transfer.round_ends > now_ ? transfer.round_ends : -1;
      tcp.round_in_flight_bytes = per_stream_bytes;
    }
  }
  tcp.last_sent = now_;
  transfer.round_bits_left = 0;
  if (transfer.bits_left <= kDoneBits) transfer.bits_left = 0;
}

void Simulator::rebalance(int link_index) {
  LinkState& link = links_[static_cast<std::size_t>(link_index)];
  if (link.unbalanced) return;
  link.unbalanced = true;
  unbalanced_links_.push_back(link_index);
}

// The rates only count when time moves: each changed link's shares once,
// from its transfers on the wire as they are now. A WAN link also carries
// the ACKs of the data on its reverse link (docs/SIMULATOR.md, "ACKs"), so
// where a link's data rate changed its reverse link is shared again, once:
// the ACKs are about 2% of the data, so a further pass would move rates by
// about 2% of 2%.
void Simulator::balance_links() {
  std::vector<Transfer*> transfers;
  std::vector<int> links;
  for (int pass = 0; pass < 2 && !unbalanced_links_.empty(); ++pass) {
    links.swap(unbalanced_links_);
    unbalanced_links_.clear();
    for (int link_index : links) {
      LinkState& link = links_[static_cast<std::size_t>(link_index)];
      link.unbalanced = false;
      transfers.clear();
      for (int id : link.on_wire) transfers.push_back(&transfers_[static_cast<std::size_t>(id)]);
      if (link.reverse < 0) {
        share(link, link.capacity_bps, transfers);
        continue;
      }
      link.acks_bps = model_.ack_share * data_rate_bps(link.reverse);
      const double before = data_rate_bps(link_index);
      share(link, link.data_capacity_bps(), transfers);
      if (pass == 0 && data_rate_bps(link_index) != before) rebalance(link.reverse);
    }
  }
}

// An emulated link's queue is the emulator's drop-tail FIFO, whose shares
// follow what each transfer pushes; without TCP's dynamics (caps from
// steady rates) and inside a [fabric], max-min.
void Simulator::share(const LinkState& link, double capacity_bps, std::vector<Transfer*>& transfers) const {
  if (model_.tcp_dynamics && link.tcp_rounds)
    share_fifo(capacity_bps, transfers);
  else
    share_max_min(capacity_bps, transfers);
}

// The payload rate of the data the link carries now.
double Simulator::data_rate_bps(int link_index) const {
  double sum = 0;
  for (int id : links_[static_cast<std::size_t>(link_index)].on_wire)
    sum += transfers_[static_cast<std::size_t>(id)].rate_bps;
  return sum;
}

void Simulator::step_time() {
  balance_links();
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
  // A link that changes (a paused one resuming) may end the step first.
  if (next_wan_change_ < next) {
    next = next_wan_change_;
    first_done = -1;
  }
  if (next > kMaxSimulatedNs) fail_too_long();
  send_until(next, first_done);
  take_sent_transfers_off_the_wire();
  apply_wan_changes();
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

// Drop-tail loss (docs/SIMULATOR.md, "Loss"): the transfers on a link push
// their rounds at their own rates (pacing, 2 x cwnd / RTT), the link carries
// its capacity, and what they push beyond it waits in the link's queue.
// Where more waits than the queue holds over the `elapsed` seconds to come,
// the excess is dropped, among the transfers in proportion to what each
// pushed; the streams it hits each a random one of a transfer's. A transfer
// that lost a segment is not wholly there before it is resent: after the
// loss is seen (a round trip and the queue's wait) and one way more. Its
// channel's cwnd falls once a window (cubic: to 0.7 on each stream hit) and
// slow start ends there.
void Simulator::fill_queue(LinkState& link, double elapsed) {
  if (!std::isfinite(link.queue_limit_bits) || !model_.tcp_dynamics || !link.tcp_rounds) return;
  double pushed = 0, unsent = 0;
  for (int id : link.on_wire) {
    const Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
    pushed += std::min(transfer.cap_bps * elapsed, transfer.round_bits_left);
    unsent += transfer.round_bits_left;
  }
  link.backlog_bits = std::clamp(link.backlog_bits + pushed - link.data_capacity_bps() * elapsed, 0.0, unsent);
  if (link.backlog_bits <= 0) return;  // most links most of the time: nothing waits
  // What waits is never more than the windows hold beyond what the link
  // itself has in flight.
  double windows = 0;
  for (int id : link.on_wire) windows += transfers_[static_cast<std::size_t>(id)].window_bits;
  link.backlog_bits = std::min(link.backlog_bits, std::max(0.0, windows - link.data_capacity_bps() * link.tcp.rtt_s));
  if (link.backlog_bits <= link.queue_limit_bits || !(pushed > 0)) return;
  const double dropped_segments = (link.backlog_bits - link.queue_limit_bits) / (kSegmentBytes * 8);
  link.backlog_bits = link.queue_limit_bits;
  const double seen_ns = (link.tcp.rtt_s + link.backlog_bits / link.data_capacity_bps()) * 1e9;
  for (int id : link.on_wire) {
    Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
    const double share = std::min(transfer.cap_bps * elapsed, transfer.round_bits_left) / pushed;
    const double lost = dropped_segments * share;
    if (!(lost > 0)) continue;
    transfer.resent_arrives = std::max(transfer.resent_arrives, now_ + elapsed * 1e9 + seen_ns + link.delay_ns);
    ChannelTcp& tcp = *transfer.tcp;
    if (now_ < tcp.recovering_until) continue;
    const double streams = transfer.effective_streams;
    const double hit = streams * (1 - std::pow(1 - 1 / streams, lost));
    after_loss(tcp.state, hit / streams);
    tcp.round_ends = -1;  // the round's state before the loss no longer holds
    transfer.window_bits = round_bytes(link.tcp, tcp.state, streams, kInf) * 8;
    tcp.recovering_until = now_ + seen_ns;
  }
}

// Every transfer on the wire sends at its rate until `next`, first_done all
// its round's bits; the links where a round is now sent go to rounds_sent_,
// in index order, the others have nothing to take off the wire.
void Simulator::send_until(double next, int first_done) {
  const double elapsed = next - now_;
  rounds_sent_.clear();
  for (int link_index : wired_links_) {
    if (elapsed > 0) fill_queue(links_[static_cast<std::size_t>(link_index)], elapsed / 1e9);
    bool round_sent = false;
    for (int id : links_[static_cast<std::size_t>(link_index)].on_wire) {
      Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
      if (elapsed > 0) {
        const double sent = std::min(transfer.round_bits_left, transfer.rate_bps * elapsed / 1e9);
        transfer.round_bits_left -= sent;
        transfer.bits_left -= sent;
      }
      round_sent = round_sent || id == first_done || transfer.round_bits_left <= kDoneBits;
    }
    if (round_sent) rounds_sent_.push_back(link_index);
  }
  now_ = next;
  if (first_done >= 0) {
    Transfer& transfer = transfers_[static_cast<std::size_t>(first_done)];
    transfer.bits_left -= transfer.round_bits_left;
    transfer.round_bits_left = 0;
  }
}

// Only the links of rounds_sent_ have anything to take off; a link's
// next slot can only have become free where a slotted transfer was sent
// (admit starts one at once), so only those are looked at afterwards.
void Simulator::take_sent_transfers_off_the_wire() {
  std::vector<int> sent;
  std::vector<int> slot_freed;
  for (int link_index : rounds_sent_) {
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
      const Transfer& transfer = transfers_[static_cast<std::size_t>(sent[i])];
      // The last bit, or a resent segment, whichever comes later.
      const double arrives = std::max(now_ + link.delay_ns, transfer.resent_arrives);
      mark_last_sent(sent[i], arrives - now_);
      schedule({arrives + transfer.extra_delay_ns, 0, TimedKind::arrival, sent[i]});
      if (transfers_[static_cast<std::size_t>(sent[i])].slot >= 0) {
        slot_sent(link);
        slot_freed.push_back(link_index);
      }
    }
    for (int id : next_round) put_on_wire(link, id);
    if (rounds_ended > 0) rebalance(link_index);
    if (link.on_wire.empty()) wired_links_.erase(link_index);
  }
  for (int id : sent) {
    ChannelQueue& queue = *transfers_[static_cast<std::size_t>(id)].queue;
    queue.head = transfers_[static_cast<std::size_t>(id)].next_queued;  // the channel's head was sent
    if (queue.head < 0) {
      queue.tail = -1;
    } else {
      admit(queue.head);
    }
  }
  for (int link_index : slot_freed) start_next_slot(link_index);
}
}  // namespace wanlab::harness::detail::sim
