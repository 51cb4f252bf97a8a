#include "wanlab/emulator/releaser.hpp"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <chrono>
#include <ctime>

#include "wanlab/base/clock.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/base/wake_lead.hpp"

extern "C" {
#include "wanlab_edt.h"  // the mark's one decoding: wanlab_edt_mark_depart_ns
}

namespace wanlab::emulator {
namespace {

// A verdict this close to its departure time is given now rather than after
// another trip through the timer.
constexpr std::uint64_t kEarlySlackNs = 2'000;

// A number from a /proc/sys file; nothing if it cannot be read.
std::optional<long long> proc_sys_number(const char* path) {
  std::ifstream file(path);
  long long value = 0;
  if (!(file >> value)) return std::nullopt;
  return value;
}

nlmsghdr* put_nfq_header(char* buf, std::uint8_t msg_type, std::uint16_t queue_num, std::uint16_t flags) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = static_cast<std::uint16_t>((NFNL_SUBSYS_QUEUE << 8) | msg_type);
  nlh->nlmsg_flags = flags;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = AF_UNSPEC;
  nfg->version = NFNETLINK_V0;
  nfg->res_id = htons(queue_num);
  return nlh;
}

}  // namespace

void LateCounts::count(std::uint64_t late_ns) {
  packets++;
  if (late_ns > late_max_ns) late_max_ns = late_ns;
  // Most verdicts are under the first bound: the loop ends at once.
  for (std::size_t i = 0; i < base::kLateBoundsNs.size() && late_ns > base::kLateBoundsNs[i]; ++i) late_over[i]++;
}

NfqueueReleaser::NfqueueReleaser(asio::io_context& io, std::uint16_t queue_num, ReleaserPairs pairs,
                                 std::uint32_t max_queue_len)
    : io_(io),
      queue_num_(queue_num),
      readable_(io),
      timer_(io),
      receive_buffer_(256 * 1024),
      verdict_batch_(64 * 1024),
      dcs_(pairs.dcs.size()) {
  for (const auto& [ifindex, dc] : pairs.dc_of_ifindex)
    if (dc >= 0 && static_cast<std::size_t>(dc) < dcs_) dc_of_ifindex_[ifindex] = dc;
  for (const std::string& from : pairs.dcs)
    for (const std::string& to : pairs.dcs) stats_.pairs.push_back(ReleaserStats::Pair{{}, from, to});
  socket_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (!socket_) base::throw_errno("opening nfnetlink socket");
  try {
    base::check(mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID), "binding nfnetlink socket");
    port_id_ = mnl_socket_get_portid(socket_);
    // Bursts of queued packets must not overflow the socket: a lost message
    // is a lost packet.
    const int buffer_bytes = 64 << 20;
    ::setsockopt(mnl_socket_get_fd(socket_), SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(buffer_bytes));
    ::setsockopt(mnl_socket_get_fd(socket_), SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof(buffer_bytes));
    configure(queue_num, max_queue_len);
  } catch (...) {
    mnl_socket_close(socket_);
    throw;
  }
  // Timer slack would add up to 50 us to every release.
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  // The daemon runs SCHED_FIFO, and the kernel lets real-time tasks use a CPU
  // for sched_rt_runtime_us of every sched_rt_period_us (950 ms of 1 s by
  // default), then holds them off for the rest so that others run. Spinning
  // through a long transfer reached that: verdicts then left in blocks of
  // hundreds, 50 ms late, once a second (gone with the limit lifted). So the
  // releaser busy-waits only while its thread has used less than half that
  // budget in the period, its work included: a busy queue's verdicts (the
  // kernel forwards each packet in the releaser's own syscall) took about half
  // a CPU on bubbletea-3dc at scale 0.1, and with half a budget of spinning on
  // top the thread reached the limit and every pair's verdicts left 44-47 ms
  // late. Past half, it sleeps on its timer to each departure itself.
  const auto period_us = proc_sys_number("/proc/sys/kernel/sched_rt_period_us");
  const auto runtime_us = proc_sys_number("/proc/sys/kernel/sched_rt_runtime_us");
  if (period_us && *period_us > 0) spin_window_ns_ = static_cast<std::uint64_t>(*period_us) * 1000;
  spin_budget_ns_ =
      runtime_us && *runtime_us >= 0 ? static_cast<std::uint64_t>(*runtime_us) * 1000 / 2 : spin_window_ns_ / 2;
}

bool NfqueueReleaser::may_spin(std::uint64_t now_ns) {
  timespec cpu{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  const std::uint64_t cpu_ns =
      static_cast<std::uint64_t>(cpu.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(cpu.tv_nsec);
  if (now_ns - spin_window_start_ns_ >= spin_window_ns_) {
    spin_window_start_ns_ = now_ns;
    window_cpu_start_ns_ = cpu_ns;
  }
  return cpu_ns - window_cpu_start_ns_ < spin_budget_ns_;
}

NfqueueReleaser::~NfqueueReleaser() {
  readable_.release();
  mnl_socket_close(socket_);
}

void NfqueueReleaser::configure(std::uint16_t queue_num, std::uint32_t max_queue_len) {
  const std::string what = "NFQUEUE " + std::to_string(queue_num);
  auto round_trip = [&](nlmsghdr* nlh, const std::string& step) {
    nlh->nlmsg_seq = static_cast<std::uint32_t>(base::monotonic_ns());
    base::check(static_cast<int>(mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len)), what + ": " + step);
    std::vector<char> reply(MNL_SOCKET_BUFFER_SIZE);
    for (;;) {
      ssize_t len = mnl_socket_recvfrom(socket_, reply.data(), reply.size());
      if (len < 0 && errno == EAGAIN) {
        pollfd pfd{mnl_socket_get_fd(socket_), POLLIN, 0};
        ::poll(&pfd, 1, 1000);
        len = mnl_socket_recvfrom(socket_, reply.data(), reply.size());
      }
      if (len < 0) base::throw_errno(what + ": " + step);
      const int ret = mnl_cb_run(reply.data(), static_cast<size_t>(len), nlh->nlmsg_seq, port_id_, nullptr, nullptr);
      if (ret < 0) base::throw_errno(what + ": " + step);
      if (ret == MNL_CB_STOP) return;
    }
  };

  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* bind = put_nfq_header(buf.data(), NFQNL_MSG_CONFIG, queue_num, NLM_F_REQUEST | NLM_F_ACK);
  nfqnl_msg_config_cmd cmd{};
  cmd.command = NFQNL_CFG_CMD_BIND;
  mnl_attr_put(bind, NFQA_CFG_CMD, sizeof(cmd), &cmd);
  round_trip(bind, "binding (is another releaser running?)");

  nlmsghdr* params = put_nfq_header(buf.data(), NFQNL_MSG_CONFIG, queue_num, NLM_F_REQUEST | NLM_F_ACK);
  // Metadata only: the verdict needs the id and mark, never the payload.
  nfqnl_msg_config_params copy{};
  copy.copy_range = htonl(0);
  copy.copy_mode = NFQNL_COPY_META;
  mnl_attr_put(params, NFQA_CFG_PARAMS, sizeof(copy), &copy);
  mnl_attr_put_u32(params, NFQA_CFG_QUEUE_MAXLEN, htonl(max_queue_len));
  // GSO packets stay whole: one verdict per super-packet.
  mnl_attr_put_u32(params, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_GSO));
  mnl_attr_put_u32(params, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
  round_trip(params, "setting copy mode, queue length and GSO");
}

void NfqueueReleaser::start() {
  readable_.assign(mnl_socket_get_fd(socket_));
  wait_readable();
}

void NfqueueReleaser::wait_readable() {
  readable_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const asio::error_code& ec) {
    if (ec) return;
    drain_socket();
    wait_readable();
  });
}

void NfqueueReleaser::drain_socket() {
  for (;;) {
    const ssize_t len = ::recv(mnl_socket_get_fd(socket_), receive_buffer_.data(), receive_buffer_.size(), 0);
    if (len < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      if (errno == ENOBUFS) continue;  // the kernel dropped messages; those packets are lost
      base::throw_errno("NFQUEUE " + std::to_string(queue_num_) + ": receiving");
    }
    const std::uint64_t now_ns = base::monotonic_ns();
    int remaining = static_cast<int>(len);
    for (auto* nlh = reinterpret_cast<const nlmsghdr*>(receive_buffer_.data()); mnl_nlmsg_ok(nlh, remaining);
         nlh = mnl_nlmsg_next(nlh, &remaining)) {
      if ((nlh->nlmsg_type & 0xff) == NFQNL_MSG_PACKET) handle_packet(nlh, now_ns);
    }
  }
  release_due(base::monotonic_ns());
}

void NfqueueReleaser::handle_packet(const nlmsghdr* nlh, std::uint64_t now_ns) {
  const nlattr* packet_header = nullptr;
  std::uint32_t mark = 0, indev = 0, outdev = 0;
  const auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(nlh));
  for (auto* attr = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, sizeof(nfgenmsg)));
       mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char*>(attr))); attr = mnl_attr_next(attr)) {
    switch (mnl_attr_get_type(attr)) {
      case NFQA_PACKET_HDR: packet_header = attr; break;
      case NFQA_MARK: mark = ntohl(mnl_attr_get_u32(attr)); break;
      case NFQA_IFINDEX_INDEV: indev = ntohl(mnl_attr_get_u32(attr)); break;
      case NFQA_IFINDEX_OUTDEV: outdev = ntohl(mnl_attr_get_u32(attr)); break;
      default: break;
    }
  }
  if (!packet_header || mnl_attr_get_payload_len(packet_header) < sizeof(nfqnl_msg_packet_hdr)) return;
  const auto* hdr = static_cast<const nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(packet_header));
  const std::uint32_t packet_id = ntohl(hdr->packet_id);
  const Held packet{wanlab_edt_mark_depart_ns(mark, now_ns), arrivals_++, packet_id, pair_of(indev, outdev)};
  if (packet.depart_ns <= now_ns + kEarlySlackNs) {
    queue_verdict(packet, now_ns);
  } else {
    held_.push(packet);
  }
}

std::uint32_t NfqueueReleaser::pair_of(std::uint32_t indev, std::uint32_t outdev) const {
  const auto from = dc_of_ifindex_.find(indev);
  const auto to = dc_of_ifindex_.find(outdev);
  if (from == dc_of_ifindex_.end() || to == dc_of_ifindex_.end()) return kNoPair;
  return static_cast<std::uint32_t>(static_cast<std::size_t>(from->second) * dcs_ +
                                    static_cast<std::size_t>(to->second));
}

// A verdict send forwards its packets inside the syscall: tens of
// microseconds, a hundred and more when it wakes a worker on another CPU.
// What fell due meanwhile is released as soon as the send returns, not after a
// trip through the timer, which on a VM costs a hypervisor exit to set the
// timer (about 27 us on the project's VM) and the timer interrupt's latency
// (38 us at p50): bench/results/bubbletea/releaser-20261202/findings.md.
void NfqueueReleaser::release_due(std::uint64_t now_ns) {
  for (;;) {
    while (!held_.empty() && held_.top().depart_ns <= now_ns + kEarlySlackNs) {
      queue_verdict(held_.top(), now_ns);
      held_.pop();
    }
    if (verdict_bytes_ == 0) break;
    flush_verdicts();
    now_ns = base::monotonic_ns();
  }
  stats_.held = held_.size();
  arm_timer();
}

// The timer is set a wake-up's latency early (base::WakeLead) and the rest is
// spent spinning, so verdicts leave on time instead of one wake-up late.
void NfqueueReleaser::arm_timer() {
  if (held_.empty()) return;
  const std::uint64_t next = held_.top().depart_ns;
  // Without spin budget left, wake at the departure itself: one wake-up late.
  const std::uint64_t lead = may_spin(base::monotonic_ns()) ? wake_lead_.lead_ns() : 0;
  const std::uint64_t wake = next > lead ? next - lead : next;
  if (timer_at_ns_ != 0 && timer_at_ns_ <= wake) return;  // an earlier wake-up is pending
  timer_at_ns_ = wake;
  timer_.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(wake)));
  timer_.async_wait([this, wake](const asio::error_code& ec) {
    if (ec) return;  // re-armed or shut down
    timer_at_ns_ = 0;
    std::uint64_t now = base::monotonic_ns();
    wake_lead_.learn(now > wake ? now - wake : 0);
    if (may_spin(now)) {
      while (!held_.empty() && held_.top().depart_ns > now + kEarlySlackNs &&
             held_.top().depart_ns - now <= 2 * base::WakeLead::kMaxNs) {
        now = base::monotonic_ns();
      }
    }
    release_due(now);
  });
}

void NfqueueReleaser::queue_verdict(const Held& packet, std::uint64_t now_ns) {
  if (verdict_batch_.size() - verdict_bytes_ < 256) flush_verdicts();
  nlmsghdr* nlh = put_nfq_header(verdict_batch_.data() + verdict_bytes_, NFQNL_MSG_VERDICT, queue_num_, NLM_F_REQUEST);
  nfqnl_msg_verdict_hdr verdict{};
  verdict.verdict = htonl(NF_ACCEPT);
  verdict.id = htonl(packet.packet_id);
  mnl_attr_put(nlh, NFQA_VERDICT_HDR, sizeof(verdict), &verdict);
  verdict_bytes_ += nlh->nlmsg_len;

  const std::uint64_t late = now_ns > packet.depart_ns ? now_ns - packet.depart_ns : 0;
  stats_.late_sum_ns += late;
  stats_.count(late);
  if (packet.pair != kNoPair) stats_.pairs[packet.pair].count(late);
}

void NfqueueReleaser::flush_verdicts() {
  if (verdict_bytes_ == 0) return;
  // One sendmsg carries every verdict that fell due together.
  if (::send(mnl_socket_get_fd(socket_), verdict_batch_.data(), verdict_bytes_, 0) < 0)
    base::throw_errno("NFQUEUE " + std::to_string(queue_num_) + ": sending verdicts");
  verdict_bytes_ = 0;
}

}  // namespace wanlab::emulator
