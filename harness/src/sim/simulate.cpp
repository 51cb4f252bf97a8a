// Discrete-event simulation of a Plan with fluid link sharing: between two
// events every transfer on the wire moves at a constant rate, recomputed
// (link_share.hpp: as a FIFO, or max-min) whenever a link's set of transfers
// changes.
// This file: the workers' side and the entry points (simulator.hpp).
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/sim/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "sim/simulator.hpp"

namespace wanlab::harness {
namespace detail::sim {

Simulator::Simulator(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model)
    : plan_(plan),
      model_(model),
      dcs_(static_cast<int>(scenario.dcs.size())),
      queues_(scale_scenario(scenario, plan.experiment.scale, queue_floor_bytes(plan))) {
  record_.plan = plan;
  record_.runtime = kSimulatorRuntime;
  if (plan.experiment.fabric) fabric_ = detail::fabric_links(plan, scenario.dcs.size());
  make_links(scenario);
  number_messages();
  make_collectives();
  count_slots();
  channel_tcp_.reserve(2 * plan.workers.size());
}

// Every send and recv op gets its message's number, the same in every
// iteration: (sender, receiver, microbatch) names one message.
void Simulator::number_messages() {
  std::size_t ops = 0;
  for (const WorkerPlan& worker_plan : plan_.workers) {
    first_op_.push_back(ops);
    ops += worker_plan.ops.size();
  }
  message_of_op_.assign(ops, -1);
  std::unordered_map<std::uint64_t, int> numbers;  // (sender, receiver, microbatch) -> message
  numbers.reserve(ops / 2);
  for (std::size_t id = 0; id < plan_.workers.size(); ++id) {
    const std::vector<Op>& worker_ops = plan_.workers[id].ops;
    for (std::size_t index = 0; index < worker_ops.size(); ++index) {
      const Op& op = worker_ops[index];
      if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
      const bool send = op.kind == OpKind::send;
      const int self = static_cast<int>(id);
      // Worker ids < 2^17 (kMaxSimulatedWorkers) and microbatches < 2^29
      // (4096 a pass, 100,000 passes in a DiLoCo round): one 64-bit key.
      const std::uint64_t key = (static_cast<std::uint64_t>(send ? self : op.peer) << 46) |
                                (static_cast<std::uint64_t>(send ? op.peer : self) << 29) |
                                static_cast<std::uint64_t>(op.microbatch);
      const auto [found, inserted] = numbers.try_emplace(key, static_cast<int>(numbers.size()));
      message_of_op_[first_op_[id] + index] = found->second;
    }
  }
  messages_count_ = numbers.size();
}

void Simulator::make_collectives() {
  collective_of_op_.assign(message_of_op_.size(), -1);
  // Each worker's place in its rings, found once: a join looks it up, where a
  // search of a ring of R members at each of its R joins would cost R^2.
  place_in_ring_.assign(plan_.workers.size(), 0);
  place_in_dc_ring_.assign(plan_.workers.size(), 0);
  for (const WorkerPlan& worker_plan : plan_.workers) {
    const Worker& self = worker_plan.worker;
    if (self.allreduce_group.empty() || self.allreduce_group.front() != self.id) continue;  // once per ring
    for (std::size_t p = 0; p < self.allreduce_group.size(); ++p)
      place_in_ring_[static_cast<std::size_t>(self.allreduce_group[p])] = p;
  }
  for (const WorkerPlan& worker_plan : plan_.workers) {
    const Worker& self = worker_plan.worker;
    if (self.dc_group.empty() || self.dc_group.front() != self.id) continue;
    for (std::size_t p = 0; p < self.dc_group.size(); ++p)
      place_in_dc_ring_[static_cast<std::size_t>(self.dc_group[p])] = p;
  }
  std::map<std::pair<int, int>, int> numbers;  // (the ring's first member, number) -> collective
  for (std::size_t id = 0; id < plan_.workers.size(); ++id) {
    const Worker& self = plan_.workers[id].worker;
    const std::vector<Op>& worker_ops = plan_.workers[id].ops;
    for (std::size_t index = 0; index < worker_ops.size(); ++index) {
      const Op& op = worker_ops[index];
      if (op.kind != OpKind::allreduce && op.kind != OpKind::allreduce_wait) continue;
      // A wait names an overlapped all-reduce, whose ring is allreduce_group.
      const std::vector<int>& ring = op.within_dc ? self.dc_group : self.allreduce_group;
      if (ring.empty()) throw std::invalid_argument(fmt::format("simulate: worker {}'s all-reduce has no ring", id));
      const auto [found, added] =
          numbers.try_emplace({ring.front(), op.microbatch}, static_cast<int>(collectives_.size()));
      if (added) {
        Collective collective;
        collective.ring = ring;
        collective.members.resize(ring.size());
        collectives_.push_back(std::move(collective));
      }
      Collective& collective = collectives_[static_cast<std::size_t>(found->second)];
      // Each member sends 2(R - 1) chunks of its op's bytes / (2(R - 1)).
      if (op.kind == OpKind::allreduce && ring.size() > 1)
        collective.chunk_bits = static_cast<double>(op.bytes) * 8 / static_cast<double>(2 * (ring.size() - 1));
      collective_of_op_[first_op_[id] + index] = found->second;
    }
  }
}

void Simulator::count_slots() {
  for (std::size_t id = 0; id < plan_.workers.size(); ++id) {
    for (const Op& op : plan_.workers[id].ops) {
      if (op.kind != OpKind::send || op.link_slot < 0) continue;
      std::vector<int>& sizes = links_[static_cast<std::size_t>(link_of(static_cast<int>(id), op.peer))].slot_sizes;
      if (sizes.size() <= static_cast<std::size_t>(op.link_slot))
        sizes.resize(static_cast<std::size_t>(op.link_slot) + 1);
      ++sizes[static_cast<std::size_t>(op.link_slot)];
    }
  }
}

RunRecord Simulator::run(int iterations, SimulationStats* stats) {
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

double Simulator::run_iteration(int iteration, double start) {
  iteration_ = iteration;
  now_ = start;
  states_.assign(plan_.workers.size(), WorkerState{});
  ready_.resize(plan_.workers.size());
  std::iota(ready_.begin(), ready_.end(), 0);
  done_workers_ = 0;
  messages_.assign(messages_count_, Message{});
  transfers_.clear();
  // Room for an iteration's transfers (one per message, one per ring member
  // and step), so that the table does not grow while it runs.
  transfers_.reserve(messages_count_ + 2 * plan_.workers.size());
  channels_.clear();
  for (LinkState& link : links_) {
    link.current_slot = 0;
    link.current_left = link.slot_sizes.empty() ? 0 : link.slot_sizes.front();
  }
  for (Collective& collective : collectives_)
    std::fill(collective.members.begin(), collective.members.end(), RingMember{});
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

void Simulator::make_ready(int id) {
  states_[static_cast<std::size_t>(id)].status = Status::ready;
  ready_.push_back(id);
}

// Runs every worker as far as it can go at now_, in id order. Only the
// workers made ready since the last pass can go: a worker's op never makes
// another ready at once (arrivals and compute ends are timed).
void Simulator::advance_workers() {
  std::vector<int> batch;
  batch.swap(ready_);
  std::sort(batch.begin(), batch.end());
  batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
  for (int id : batch) {
    while (states_[static_cast<std::size_t>(id)].status == Status::ready) start_op(id);
  }
}

Event& Simulator::add_event(int id, const Op& op, double start, double end, int op_index) {
  Event event;
  event.worker = id;
  event.iteration = iteration_;
  event.op_index = op_index >= 0 ? op_index : static_cast<int>(states_[static_cast<std::size_t>(id)].next_op);
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

void Simulator::start_op(int id) {
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
      int message = message_of(id);
      messages_[static_cast<std::size_t>(message)].send_event = static_cast<int>(record_.events.size());
      add_event(id, op, now_, now_);
      start_transfer(id, op.peer, static_cast<double>(op.bytes) * 8, op.link_slot, message, -1);
      ++state.next_op;
      break;
    }
    case OpKind::recv: {
      int message = message_of(id);
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
    case OpKind::allreduce: join_collective(id); break;
    case OpKind::allreduce_wait: wait_for_collective(id); break;
  }
}

void Simulator::schedule(Timed timed) {
  timed.sequence = sequence_++;
  timed_.push(timed);
  stats_.peak_pending = std::max(stats_.peak_pending, timed_.size());
}

// A ring's pieces per member: 2(R-1) steps of one chunk each; with a
// [fabric], pipelined as NCCL does: each member streams its 2(R-1) chunks to
// its successor as one transfer, and the last chunk lands 2(R-1) - 1 hop
// delays (the ring's longest) after that transfer's end.
int Simulator::ring_pieces(const Collective& collective) const {
  const int steps = 2 * (static_cast<int>(collective.ring.size()) - 1);
  return fabric_ ? std::min(steps, 1) : steps;
}

void Simulator::join_collective(int id) {
  WorkerState& state = states_[static_cast<std::size_t>(id)];
  const int index = collective_of(id);
  Collective& collective = collectives_[static_cast<std::size_t>(index)];
  const std::size_t position = place_in(id);
  RingMember& member = collective.members[position];
  member.joined = true;
  member.joined_at = now_;
  member.op = static_cast<int>(state.next_op);
  // Overlapped: the ring runs while the worker goes on (allreduce_wait ends it).
  if (current_op(id).overlapped)
    ++state.next_op;
  else
    state.status = Status::collective;
  if (ring_pieces(collective) == 0) {
    finish_member(collective, position);
    return;
  }
  send_piece(index, position);
  take_pieces(index, position);
}

void Simulator::send_piece(int index, std::size_t position) {
  Collective& collective = collectives_[static_cast<std::size_t>(index)];
  const int members = static_cast<int>(collective.ring.size());
  const int steps = 2 * (members - 1);
  const bool pipelined = fabric_.has_value();
  const int from = collective.ring[position];
  const std::size_t next = (position + 1) % collective.ring.size();
  const int id =
      start_transfer(from, collective.ring[next], collective.chunk_bits * (pipelined ? steps : 1), -1, -1, index);
  Transfer& transfer = transfers_[static_cast<std::size_t>(id)];
  transfer.ring_member = static_cast<int>(next);
  if (pipelined) transfer.extra_delay_ns = (steps - 1) * longest_hop_delay_ns(collective.ring);
}

void Simulator::take_pieces(int index, std::size_t position) {
  Collective& collective = collectives_[static_cast<std::size_t>(index)];
  RingMember& member = collective.members[position];
  while (member.joined && !member.done && member.arrived > member.received) {
    if (++member.received == ring_pieces(collective)) {
      finish_member(collective, position);
      return;
    }
    send_piece(index, position);
  }
}

void Simulator::finish_member(Collective& collective, std::size_t position) {
  RingMember& member = collective.members[position];
  member.done = true;
  const int id = collective.ring[position];
  WorkerState& state = states_[static_cast<std::size_t>(id)];
  const Op& op = plan_.workers[static_cast<std::size_t>(id)].ops[static_cast<std::size_t>(member.op)];
  add_event(id, op, member.joined_at, now_, member.op);
  if (op.overlapped && !member.waiting) return;  // the worker goes on; its wait will find it done
  if (member.waiting) add_event(id, current_op(id), state.since, now_);
  ++state.next_op;
  make_ready(id);
}

void Simulator::wait_for_collective(int id) {
  WorkerState& state = states_[static_cast<std::size_t>(id)];
  Collective& collective = collectives_[static_cast<std::size_t>(collective_of(id))];
  RingMember& member = collective.members[place_in(id)];
  if (member.done) {
    add_event(id, current_op(id), now_, now_);
    ++state.next_op;
    return;
  }
  state.status = Status::collective;
  state.since = now_;
  member.waiting = true;
}

double Simulator::longest_hop_delay_ns(const std::vector<int>& ring) const {
  double longest = 0;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const int link = link_of(ring[i], ring[(i + 1) % ring.size()]);
    longest = std::max(longest, links_[static_cast<std::size_t>(link)].delay_ns);
  }
  return longest;
}

void Simulator::arrive(int transfer_id) {
  const Transfer& transfer = transfers_[static_cast<std::size_t>(transfer_id)];
  if (transfer.collective >= 0) {
    // Copied: taking the piece may start transfers, which may move transfers_.
    const int index = transfer.collective;
    const auto position = static_cast<std::size_t>(transfer.ring_member);
    ++collectives_[static_cast<std::size_t>(index)].members[position].arrived;
    take_pieces(index, position);
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
void Simulator::fail_too_long() const {
  throw ExperimentError(
      fmt::format("{}: simulate: the simulated time passes {:g} ns (about 31 years) in iteration "
                  "{}: a link is far too slow for the messages (rates x scale {:g}) or the "
                  "compute steps too long",
                  plan_.experiment.path, kMaxSimulatedNs, iteration_, plan_.experiment.scale));
}

std::string Simulator::describe_deadlock() const {
  std::string blocked;
  for (int id = 0; id < static_cast<int>(states_.size()); ++id) {
    const WorkerState& state = states_[static_cast<std::size_t>(id)];
    if (state.status != Status::waiting && state.status != Status::collective) continue;
    const Op& op = current_op(id);
    blocked +=
        fmt::format("; worker {} (stage {} replica {}) in op {} ({} {})", id, worker(id).stage, worker(id).replica,
                    state.next_op, to_string(op.kind), op.kind == OpKind::recv ? fmt::format("from {}", op.peer) : "");
  }
  for (std::size_t index = 0; index < links_.size(); ++index) {
    const LinkState& link = links_[index];
    if (link.slotted.empty()) continue;
    blocked += fmt::format(
        "; link {}->{} holds slot {} waiting for slot {}", plan_.dc_names[index / static_cast<std::size_t>(dcs_)],
        plan_.dc_names[index % static_cast<std::size_t>(dcs_)], link.slotted.begin()->first, link.current_slot);
  }
  return fmt::format("simulate: deadlock at {:.3f} ms in iteration {}{}", now_ / 1e6, iteration_, blocked);
}

}  // namespace detail::sim

RunRecord simulate(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model, int iterations,
                   SimulationStats* stats) {
  RunRecord record = simulate_training(plan, scenario, model, iterations, stats);
  if (plan.experiment.prefill.enabled) detail::simulate_prefill(record, scenario, model);
  return record;
}

RunRecord simulate_training(const Plan& plan, const emulator::Scenario& scenario, const LinkModel& model,
                            int iterations, SimulationStats* stats) {
  if (plan.dc_names.size() != scenario.dcs.size()) {
    throw std::invalid_argument(
        fmt::format("simulate: the plan has {} DCs, the scenario {}", plan.dc_names.size(), scenario.dcs.size()));
  }
  check_plan_size(plan, iterations);
  return detail::sim::Simulator(plan, scenario, model).run(iterations, stats);
}

}  // namespace wanlab::harness
