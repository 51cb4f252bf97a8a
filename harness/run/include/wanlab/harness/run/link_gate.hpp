// Workload-aware temporal sharing of WAN links, as the coordinator enforces
// it: the gated sends (cross-DC send ops with link_slot >= 0) of one directed
// DC link go one slot at a time, in increasing link_slot, within an
// iteration. A sender asks for its op's turn, is granted it once every send
// of the earlier slots on that link has released the link, and releases it
// when every byte of its message is written to its sockets (the bytes still
// in flight then drain ahead of the next sender's). Sends that share a slot
// value go together.
//
// With BubbleTea on, training's sends between two hosts of one DC are
// announced sends: they never wait, but from the announcement (the start of
// the compute before them) until their bytes have left the sockets they hold
// their DC's own link (inside_link), which KV caches then leave to them.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "wanlab/harness/plan/plan.hpp"

namespace wanlab::harness {

class GateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The name of a DC's own link, between its hosts: what KV caches and
// announced sends inside the DC hold ("east (inside)").
std::string inside_link(const std::string& dc);

class LinkGate {
 public:
  struct Grant {
    int worker = 0;
    int op_index = 0;
    bool operator==(const Grant&) const = default;
  };

  explicit LinkGate(const Plan& plan);

  // Whether worker's op goes through the gate.
  bool gated(int worker, int op_index) const;
  // The ops of `worker` that announce the link they will use (ascending).
  std::vector<int> announced(int worker) const;
  // Directed links with gated sends.
  std::size_t link_count() const;

  // Begins iteration `iteration`: every link starts again at its first slot.
  void start_iteration(int iteration);
  // A sender asks for its op's turn. Returns the grants this makes (empty or
  // this op; always empty for an announced op, which takes its link at once).
  // Throws GateError for an op that is neither gated nor announced, another
  // iteration, or a second request.
  std::vector<Grant> request(int worker, int iteration, int op_index);
  // A granted sender is done with the link. Returns the grants this makes
  // (the waiting senders of the next slot). Throws GateError for an op that
  // was not granted.
  std::vector<Grant> release(int worker, int iteration, int op_index);
  // Whether a gated send of directed link `link` ("east->west") holds the
  // link or waits for it in the current iteration, or an announced send holds
  // inside link `link`. BubbleTea's KV pieces take a link only while it is not
  // in use (a link without gated or announced sends never is).
  bool in_use(const std::string& link) const;
  // Whether directed link `link` carries gated sends at all.
  bool carries(const std::string& link) const;
  // Each link's position, for error messages: "east->west at slot 3 of 8 (waiting for worker 2 op 7)".
  std::string describe() const;

 private:
  enum class State { idle, requested, granted, released };
  struct Link {
    std::string name;                                     // "east->west"
    std::vector<int> slots;                               // distinct link_slot values, increasing
    std::vector<std::vector<std::pair<int, int>>> sends;  // per slot: (worker, op_index)
    std::size_t current = 0;                              // index into slots
  };
  struct GatedOp {
    std::size_t link = 0;
    std::size_t slot_index = 0;
    State state = State::idle;
    bool announced = false;  // holds links_[link] without a slot of its own
  };

  GatedOp& find(int worker, int iteration, int op_index, const char* action);
  std::vector<Grant> advance(Link& link);
  std::size_t link_index(const std::string& name);

  std::vector<Link> links_;
  std::map<std::pair<int, int>, GatedOp> ops_;  // (worker, op_index)
  int iteration_ = -1;
};

}  // namespace wanlab::harness
