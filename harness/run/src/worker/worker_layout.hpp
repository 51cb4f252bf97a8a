// What a training worker derives from its assignment alone: its peers, its
// place in the all-reduce ring and the largest messages it sends and
// receives; and the record of one cross-DC send. Kept apart from the
// worker's process so that it can be read (and tested) on its own.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "wanlab/harness/run/control.hpp"
#include "wanlab/transport/channel.hpp"

namespace wanlab::harness::run_detail {

// A failure the worker reports to the coordinator before exiting.
struct WorkerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class WorkerLayout {
 public:
  WorkerLayout(const control::Assign& assign, int id) : assign_(assign), id_(id) {}

  const control::PeerAddress& peer(int worker) const;
  bool same_host(int worker) const { return peer(worker).ipv4 == assign_.ipv4; }
  // The ring an all-reduce op runs on: Worker::dc_group or allreduce_group.
  const std::vector<int>& ring_of(const Op& op) const;
  // The member `offset` places after this worker in `ring`; -1 when there is no ring.
  int ring_member(const std::vector<int>& ring, int offset) const;
  // Ring all-reduce of n members: 2(n-1) steps, each moving bytes / (2(n-1)).
  static std::uint64_t allreduce_piece(std::size_t members, std::uint64_t bytes);
  // The largest payload this worker sends over a channel (`incoming`: receives):
  // a microbatch to (from) a worker on another host, or an all-reduce piece to
  // the next (from the previous) ring member. Messages to a worker on this
  // host carry no payload (the worker's transmit).
  std::uint64_t largest_payload(bool incoming) const;

 private:
  const control::Assign& assign_;
  int id_;
};

// The transfer record of a cross-DC send once its ticket is written.
control::SendRecord send_record(int op_index, std::int64_t queued_ns, const transport::SendTicket& ticket);

}  // namespace wanlab::harness::run_detail
