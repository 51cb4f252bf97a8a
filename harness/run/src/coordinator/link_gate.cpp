#include "wanlab/harness/run/link_gate.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wanlab::harness {

std::string inside_link(const std::string& dc) { return dc + " (inside)"; }

std::size_t LinkGate::link_index(const std::string& name) {
  const auto at = std::find_if(links_.begin(), links_.end(), [&](const Link& link) { return link.name == name; });
  if (at != links_.end()) return static_cast<std::size_t>(at - links_.begin());
  links_.push_back(Link{name, {}, {}, 0});
  return links_.size() - 1;
}

LinkGate::LinkGate(const Plan& plan) {
  std::map<std::pair<std::size_t, int>, std::vector<std::pair<int, int>>> sends_of_slot;
  const bool announce = plan.experiment.prefill.enabled;
  for (const WorkerPlan& worker : plan.workers) {
    for (std::size_t i = 0; i < worker.ops.size(); ++i) {
      const Op& op = worker.ops[i];
      if (op.kind != OpKind::send) continue;
      if (op.peer < 0 || op.peer >= static_cast<int>(plan.workers.size()))
        throw GateError(fmt::format("worker {} op {}: send to unknown worker {}", worker.worker.id, i, op.peer));
      const Worker& to = plan.workers[op.peer].worker;
      if (op.cross_dc && op.link_slot >= 0) {
        const std::size_t link = link_index(emulator::pair_name(worker.worker.dc_name, to.dc_name));
        sends_of_slot[{link, op.link_slot}].emplace_back(worker.worker.id, static_cast<int>(i));
      } else if (announce && !op.cross_dc && to.host != worker.worker.host) {
        const std::size_t link = link_index(inside_link(worker.worker.dc_name));
        ops_[{worker.worker.id, static_cast<int>(i)}] = GatedOp{link, 0, State::idle, true};
      }
    }
  }
  // std::map orders by (link, slot): each link's slots come out increasing.
  for (auto& [key, sends] : sends_of_slot) {
    Link& link = links_[key.first];
    for (const auto& [worker, op_index] : sends)
      ops_[{worker, op_index}] = GatedOp{key.first, link.slots.size(), State::idle};
    link.slots.push_back(key.second);
    link.sends.push_back(std::move(sends));
  }
}

bool LinkGate::gated(int worker, int op_index) const {
  const auto it = ops_.find({worker, op_index});
  return it != ops_.end() && !it->second.announced;
}

std::size_t LinkGate::link_count() const {
  return static_cast<std::size_t>(
      std::count_if(links_.begin(), links_.end(), [](const Link& link) { return !link.slots.empty(); }));
}

std::vector<int> LinkGate::announced(int worker) const {
  std::vector<int> ops;
  for (auto it = ops_.lower_bound({worker, 0}); it != ops_.end() && it->first.first == worker; ++it)
    if (it->second.announced) ops.push_back(it->first.second);
  return ops;
}

void LinkGate::start_iteration(int iteration) {
  iteration_ = iteration;
  for (Link& link : links_) link.current = 0;
  for (auto& [key, op] : ops_) op.state = State::idle;
}

LinkGate::GatedOp& LinkGate::find(int worker, int iteration, int op_index, const char* action) {
  const auto it = ops_.find({worker, op_index});
  if (it == ops_.end())
    throw GateError(fmt::format("worker {} {} the link for op {}, which is neither a gated nor an announced send",
                                worker, action, op_index));
  if (iteration != iteration_)
    throw GateError(fmt::format("worker {} {} the link for op {} in iteration {}, but iteration {} is running", worker,
                                action, op_index, iteration, iteration_));
  return it->second;
}

std::vector<LinkGate::Grant> LinkGate::request(int worker, int iteration, int op_index) {
  GatedOp& op = find(worker, iteration, op_index, "asked for");
  if (op.state != State::idle)
    throw GateError(fmt::format("worker {} asked twice for the link for op {}", worker, op_index));
  if (op.announced) {  // holds its link at once, and nobody waits for it
    op.state = State::granted;
    return {};
  }
  op.state = State::requested;
  if (op.slot_index != links_[op.link].current) return {};
  op.state = State::granted;
  return {Grant{worker, op_index}};
}

std::vector<LinkGate::Grant> LinkGate::release(int worker, int iteration, int op_index) {
  GatedOp& op = find(worker, iteration, op_index, "released");
  if (op.state != State::granted)
    throw GateError(fmt::format("worker {} released the link for op {} without holding it", worker, op_index));
  op.state = State::released;
  if (op.announced) return {};
  return advance(links_[op.link]);
}

// Moves past slots whose sends have all released; grants those waiting in the new slot.
std::vector<LinkGate::Grant> LinkGate::advance(Link& link) {
  std::vector<Grant> grants;
  while (link.current < link.slots.size()) {
    const auto& sends = link.sends[link.current];
    const bool all_released = std::all_of(sends.begin(), sends.end(),
                                          [&](const auto& send) { return ops_.at(send).state == State::released; });
    if (!all_released) break;
    ++link.current;
    if (link.current == link.slots.size()) break;
    for (const auto& send : link.sends[link.current]) {
      GatedOp& next = ops_.at(send);
      if (next.state != State::requested) continue;
      next.state = State::granted;
      grants.push_back(Grant{send.first, send.second});
    }
  }
  return grants;
}

bool LinkGate::in_use(const std::string& name) const {
  for (std::size_t index = 0; index < links_.size(); ++index) {
    if (links_[index].name != name) continue;
    return std::any_of(ops_.begin(), ops_.end(), [&](const auto& entry) {
      const GatedOp& op = entry.second;
      return op.link == index && (op.state == State::requested || op.state == State::granted);
    });
  }
  return false;
}

bool LinkGate::carries(const std::string& name) const {
  return std::any_of(links_.begin(), links_.end(),
                     [&](const Link& link) { return link.name == name && !link.slots.empty(); });
}

std::string LinkGate::describe() const {
  std::string text;
  for (const Link& link : links_) {
    if (link.slots.empty()) continue;  // an inside link: announced sends never wait
    if (!text.empty()) text += "; ";
    if (link.current >= link.slots.size()) {
      text += link.name + " done";
      continue;
    }
    std::string waiting;
    for (const auto& [worker, op_index] : link.sends[link.current]) {
      const State state = ops_.at({worker, op_index}).state;
      const char* what = state == State::idle        ? "not asked yet"
                         : state == State::requested ? "asked"
                         : state == State::granted   ? "sending"
                                                     : "done";
      waiting += fmt::format("{}worker {} op {} {}", waiting.empty() ? "" : ", ", worker, op_index, what);
    }
    text += fmt::format("{} at slot {} ({} of {}: {})", link.name, link.slots[link.current], link.current + 1,
                        link.slots.size(), waiting);
  }
  return text;
}

}  // namespace wanlab::harness
