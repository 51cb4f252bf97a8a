#include "wanlab/emulator/probe.hpp"
#include "wanlab/base/stats.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <sys/time.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include "wanlab/emulator/netns.hpp"
#include "wanlab/base/clock.hpp"
#include "wanlab/base/sys.hpp"

namespace wanlab::emulator {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_in make_addr(std::uint32_t ipv4, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(ipv4);
  addr.sin_port = htons(port);
  return addr;
}

std::uint16_t bound_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  base::check(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), "getsockname");
  return ntohs(addr.sin_port);
}

base::UniqueFd bound_socket(int type, std::uint32_t ipv4, const std::string& what) {
  base::UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!fd) base::throw_errno(what + ": socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = make_addr(ipv4, 0);
  base::check(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), what + ": bind");
  return fd;
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, timeout_ms) > 0;
}

SenderTcpInfo read_tcp_info(const std::vector<base::UniqueFd>& conns) {
  SenderTcpInfo sum;
  int streams = 0;
  for (const auto& conn : conns) {
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (::getsockopt(conn.get(), IPPROTO_TCP, TCP_INFO, &info, &len) < 0) continue;
    ++streams;
    sum.retransmitted_segments += info.tcpi_total_retrans;
    sum.srtt_ms += info.tcpi_rtt / 1000.0;
    sum.max_cwnd_segments = std::max<std::uint64_t>(sum.max_cwnd_segments, info.tcpi_snd_cwnd);
    // Older kernels return a shorter struct; fields past `len` stay 0.
    if (len >= offsetof(tcp_info, tcpi_sndbuf_limited) + sizeof(info.tcpi_sndbuf_limited)) {
      sum.busy_us += info.tcpi_busy_time;
      sum.rwnd_limited_us += info.tcpi_rwnd_limited;
      sum.sndbuf_limited_us += info.tcpi_sndbuf_limited;
    }
  }
  if (streams > 0) sum.srtt_ms /= streams;
  return sum;
}

// A paced echo request: the echo side writes how long it held the request
// (its kernel receive timestamp to its sendto), so the prober can leave the
// echo application's wake-up out of the network's round trip.
struct StampedProbe {
  std::int32_t seq = 0;
  std::uint32_t magic = 0;
  std::int64_t echo_hold_ns = 0;
};
constexpr std::uint32_t kStampedMagic = 0x77616e31;  // "wan1"

timespec realtime_now() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return now;
}

std::int64_t ns_between(const timespec& earlier, const timespec& later) {
  return static_cast<std::int64_t>(later.tv_sec - earlier.tv_sec) * 1'000'000'000 + (later.tv_nsec - earlier.tv_nsec);
}

void enable_receive_timestamps(int fd, const std::string& what) {
  const int one = 1;
  base::check(::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)), what + ": SO_TIMESTAMPNS");
}

// Reads one datagram without blocking; its kernel receive time (CLOCK_REALTIME)
// goes to `received`, or the time now if the kernel gave none.
ssize_t receive_stamped(int fd, void* buf, std::size_t size, sockaddr_in* peer, timespec& received) {
  char control[CMSG_SPACE(sizeof(timespec))];
  iovec iov{buf, size};
  msghdr msg{};
  msg.msg_name = peer;
  msg.msg_namelen = peer ? sizeof(*peer) : 0;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n < 0) return n;
  received = realtime_now();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS)
      std::memcpy(&received, CMSG_DATA(c), sizeof(received));
  return n;
}

// A UDP echo server on its own thread in `at`'s namespace, until destroyed.
class UdpEcho {
 public:
  explicit UdpEcho(const Endpoint& at) {
    auto port_future = port_promise_.get_future();
    thread_ = std::thread([this, at] { serve(at); });
    port_ = port_future.get();
  }
  ~UdpEcho() {
    done_ = true;
    thread_.join();
  }
  UdpEcho(const UdpEcho&) = delete;
  UdpEcho& operator=(const UdpEcho&) = delete;

  std::uint16_t port() const { return port_; }  // 0 if it failed to start
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  void serve(const Endpoint& at) {
    try {
      NetnsScope in_ns(at.netns);
      base::UniqueFd fd = bound_socket(SOCK_DGRAM, at.ipv4, at.netns + ": UDP echo");
      enable_receive_timestamps(fd.get(), at.netns + ": UDP echo");
      port_promise_.set_value(bound_port(fd.get()));
      char buf[64];
      while (!done_) {
        if (!wait_readable(fd.get(), 100)) continue;
        sockaddr_in peer{};
        timespec received{};
        const ssize_t n = receive_stamped(fd.get(), buf, sizeof(buf), &peer, received);
        if (n <= 0) continue;
        if (n == sizeof(StampedProbe)) {
          StampedProbe probe;
          std::memcpy(&probe, buf, sizeof(probe));
          if (probe.magic == kStampedMagic) {
            probe.echo_hold_ns = ns_between(received, realtime_now());
            std::memcpy(buf, &probe, sizeof(probe));
          }
        }
        ::sendto(fd.get(), buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer), sizeof(peer));
      }
    } catch (...) {
      failure_ = std::current_exception();
      try {
        port_promise_.set_value(0);
      } catch (...) {
      }
    }
  }

  std::promise<std::uint16_t> port_promise_;
  std::atomic<bool> done_{false};
  std::exception_ptr failure_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// Runs `body` on a thread inside `netns` and waits for it; rethrows its failure.
template <typename Body>
void run_in_netns(const std::string& netns, Body body) {
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      NetnsScope in_ns(netns);
      body();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

std::vector<PacedEcho> measure_echoes_paced(const Endpoint& from, const Endpoint& to, int count, double interval_ms) {
  if (count < 0 || !(interval_ms >= 0))
    throw std::invalid_argument("measure_echoes_paced: count and interval_ms must be >= 0");
  UdpEcho echo(to);
  std::vector<PacedEcho> echoes;
  if (echo.port() != 0) {
    run_in_netns(from.netns, [&] {
      base::UniqueFd fd = bound_socket(SOCK_DGRAM, from.ipv4, from.netns + ": UDP client");
      enable_receive_timestamps(fd.get(), from.netns + ": UDP client");
      const sockaddr_in dst = make_addr(to.ipv4, echo.port());
      std::vector<timespec> sent(static_cast<std::size_t>(count));
      std::vector<std::uint64_t> sent_mono(static_cast<std::size_t>(count));
      std::vector<std::optional<PacedEcho>> answers(static_cast<std::size_t>(count));
      const auto interval =
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(interval_ms));
      const auto start = Clock::now();
      const auto deadline = start + interval * count + std::chrono::seconds(2);
      int next = 0, answered = 0;
      while (answered < count && Clock::now() < deadline) {
        const auto next_send = start + interval * next;
        const auto wake = next < count ? std::min(next_send, deadline) : deadline;
        const long wait_ns =
            std::max<long>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(wake - Clock::now()).count());
        const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000), wait_ns % 1'000'000'000};
        pollfd pfd{fd.get(), POLLIN, 0};
        if (::ppoll(&pfd, 1, &timeout, nullptr) > 0) {
          StampedProbe probe;
          timespec received{};
          while (receive_stamped(fd.get(), &probe, sizeof(probe), nullptr, received) == sizeof(probe)) {
            if (probe.magic != kStampedMagic || probe.seq < 0 || probe.seq >= next) continue;
            auto& answer = answers[static_cast<std::size_t>(probe.seq)];
            if (answer) continue;
            const timespec& sent_at = sent[static_cast<std::size_t>(probe.seq)];
            answer = PacedEcho{static_cast<double>(ns_between(sent_at, received)) / 1e6,
                               static_cast<double>(ns_between(sent_at, realtime_now())) / 1e6,
                               static_cast<double>(probe.echo_hold_ns) / 1e6,
                               sent_mono[static_cast<std::size_t>(probe.seq)]};
            ++answered;
          }
        }
        if (next < count && Clock::now() >= next_send) {
          StampedProbe probe;
          probe.seq = next;
          probe.magic = kStampedMagic;
          sent[static_cast<std::size_t>(next)] = realtime_now();
          sent_mono[static_cast<std::size_t>(next)] = static_cast<std::uint64_t>(base::monotonic_ns(Clock::now()));
          base::check(static_cast<int>(::sendto(fd.get(), &probe, sizeof(probe), 0,
                                                reinterpret_cast<const sockaddr*>(&dst), sizeof(dst))),
                      from.netns + ": sending echo");
          ++next;
        }
      }
      for (const auto& answer : answers)
        if (answer) echoes.push_back(*answer);
    });
  }
  echo.rethrow_failure();
  return echoes;
}

std::vector<double> measure_rtt_ms(const Endpoint& from, const Endpoint& to, int count, double interval_ms,
                                   RttTiming timing) {
  std::vector<double> rtts;
  for (const auto& echo : measure_echoes_paced(from, to, count, interval_ms))
    rtts.push_back(timing == RttTiming::network ? echo.network_rtt_ms() : echo.app_rtt_ms);
  return rtts;
}

double measure_goodput_bps(const Endpoint& from, const Endpoint& to, const GoodputOptions& options) {
  return measure_goodput(from, to, options).bps;
}

GoodputReport measure_goodput(const Endpoint& from, const Endpoint& to, const GoodputOptions& options,
                              double interval_seconds) {
  if (!(interval_seconds > 0)) throw std::invalid_argument("measure_goodput: interval_seconds must be > 0");
  const auto bins = static_cast<std::size_t>(std::max(1.0, std::ceil(options.seconds / interval_seconds - 1e-9)));
  std::vector<std::uint64_t> bin_bytes(bins, 0);
  SenderTcpInfo sender_info;
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::atomic<bool> stop_sending{false};
  std::atomic<std::uint64_t> counted_bytes{0};
  std::exception_ptr sink_failure;
  std::vector<double> bin_max_gap(bins, 0);
  const auto start = Clock::now();
  const auto count_from =
      options.count_from_mono_ns
          ? Clock::time_point(std::chrono::nanoseconds(*options.count_from_mono_ns))
          : start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.warmup_seconds));
  const auto count_until =
      count_from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.seconds));

  std::thread sink([&] {
    try {
      NetnsScope in_ns(to.netns);
      base::UniqueFd listener = bound_socket(SOCK_STREAM, to.ipv4, to.netns + ": TCP sink");
      base::check(::listen(listener.get(), 64), to.netns + ": listen");
      port_promise.set_value(bound_port(listener.get()));
      std::vector<base::UniqueFd> conns;
      for (int i = 0; i < options.streams; ++i) {
        if (!wait_readable(listener.get(), 10'000)) throw std::runtime_error(to.netns + ": no TCP connection arrived");
        conns.emplace_back(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!conns.back()) base::throw_errno(to.netns + ": accept");
      }
      std::vector<pollfd> pfds;
      for (auto& c : conns) pfds.push_back(pollfd{c.get(), POLLIN, 0});
      std::vector<char> buf(1 << 20);
      auto last_byte = count_from;
      while (Clock::now() < count_until) {
        ::poll(pfds.data(), pfds.size(), 50);
        for (auto& pfd : pfds) {
          if (!(pfd.revents & (POLLIN | POLLHUP))) continue;
          const ssize_t n = ::recv(pfd.fd, buf.data(), buf.size(), 0);
          const auto now = Clock::now();
          if (n > 0 && now >= count_from && now < count_until) {
            counted_bytes += static_cast<std::uint64_t>(n);
            const double into = std::chrono::duration<double>(now - count_from).count();
            const std::size_t bin = std::min(bins - 1, static_cast<std::size_t>(into / interval_seconds));
            bin_bytes[bin] += static_cast<std::uint64_t>(n);
            // The gap counts in every interval it overlaps.
            const double gap = std::chrono::duration<double>(now - last_byte).count();
            const double gap_from = std::chrono::duration<double>(last_byte - count_from).count();
            for (auto b = std::min(bin, static_cast<std::size_t>(std::max(0.0, gap_from) / interval_seconds)); b <= bin;
                 ++b)
              bin_max_gap[b] = std::max(bin_max_gap[b], gap);
            last_byte = now;
          }
        }
      }
    } catch (...) {
      sink_failure = std::current_exception();
      try {
        port_promise.set_value(0);
      } catch (...) {
      }
    }
    stop_sending = true;
  });

  std::exception_ptr source_failure;
  const std::uint16_t port = port_future.get();
  if (port != 0) {
    std::thread source([&] {
      try {
        NetnsScope in_ns(from.netns);
        std::vector<base::UniqueFd> conns;
        for (int i = 0; i < options.streams; ++i) {
          base::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
          if (!fd) base::throw_errno(from.netns + ": socket");
          if (options.congestion)
            base::check(::setsockopt(fd.get(), IPPROTO_TCP, TCP_CONGESTION, options.congestion->c_str(),
                                     static_cast<socklen_t>(options.congestion->size())),
                        from.netns + ": TCP_CONGESTION " + *options.congestion);
          sockaddr_in dst = make_addr(to.ipv4, port);
          base::check(::connect(fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof(dst)), from.netns + ": connect");
          conns.push_back(std::move(fd));
        }
        std::vector<char> buf(1 << 20, 'w');
        std::vector<pollfd> pfds;
        for (auto& c : conns) pfds.push_back(pollfd{c.get(), POLLOUT, 0});
        while (!stop_sending) {
          ::poll(pfds.data(), pfds.size(), 50);
          for (auto& pfd : pfds)
            if (pfd.revents & POLLOUT) ::send(pfd.fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        sender_info = read_tcp_info(conns);
      } catch (...) {
        source_failure = std::current_exception();
      }
    });
    source.join();
  }
  sink.join();
  if (sink_failure) std::rethrow_exception(sink_failure);
  if (source_failure) std::rethrow_exception(source_failure);
  GoodputReport report;
  report.bps = static_cast<double>(counted_bytes.load()) * 8.0 / options.seconds;
  for (std::size_t i = 0; i < bins; ++i) {
    const double length = std::min(interval_seconds, options.seconds - static_cast<double>(i) * interval_seconds);
    report.interval_bps.push_back(static_cast<double>(bin_bytes[i]) * 8.0 / length);
  }
  report.interval_max_gap_s = bin_max_gap;
  report.sender = sender_info;
  return report;
}

double median(std::vector<double> values) { return percentile(std::move(values), 50); }

double mean(const std::vector<double>& values) {
  if (values.empty()) return std::nan("");
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double coefficient_of_variation(const std::vector<double>& values) {
  const double average = mean(values);
  if (values.empty()) return average;
  double squares = 0;
  for (double v : values) squares += (v - average) * (v - average);
  return std::sqrt(squares / static_cast<double>(values.size())) / average;
}

double percentile(std::vector<double> values, double p) { return base::percentile(std::move(values), p); }

}  // namespace wanlab::emulator
