#include "wanlab/emulator/probe.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <future>
#include <thread>

#include "wanlab/emulator/netns.hpp"
#include "wanlab/emulator/sys.hpp"

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
  check(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), "getsockname");
  return ntohs(addr.sin_port);
}

UniqueFd bound_socket(int type, std::uint32_t ipv4, const std::string& what) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno(what + ": socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = make_addr(ipv4, 0);
  check(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), what + ": bind");
  return fd;
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, timeout_ms) > 0;
}

}  // namespace

std::vector<double> measure_rtt_ms(const Endpoint& from, const Endpoint& to, int count, int interval_ms) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::atomic<bool> done{false};
  std::exception_ptr echo_failure;
  std::thread echo([&] {
    try {
      NetnsScope in_ns(to.netns);
      UniqueFd fd = bound_socket(SOCK_DGRAM, to.ipv4, to.netns + ": UDP echo");
      port_promise.set_value(bound_port(fd.get()));
      char buf[64];
      while (!done) {
        if (!wait_readable(fd.get(), 100)) continue;
        sockaddr_in peer{};
        socklen_t len = sizeof(peer);
        const ssize_t n = ::recvfrom(fd.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&peer), &len);
        if (n > 0) ::sendto(fd.get(), buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer), len);
      }
    } catch (...) {
      echo_failure = std::current_exception();
      try { port_promise.set_value(0); } catch (...) {}
    }
  });

  std::vector<double> rtts;
  std::exception_ptr client_failure;
  const std::uint16_t port = port_future.get();
  if (port != 0) {
    std::thread client([&] {
      try {
        NetnsScope in_ns(from.netns);
        UniqueFd fd = bound_socket(SOCK_DGRAM, from.ipv4, from.netns + ": UDP client");
        sockaddr_in dst = make_addr(to.ipv4, port);
        for (int seq = 0; seq < count; ++seq) {
          const auto sent = Clock::now();
          check(static_cast<int>(::sendto(fd.get(), &seq, sizeof(seq), 0, reinterpret_cast<sockaddr*>(&dst), sizeof(dst))),
                from.netns + ": sending echo");
          // Wait for this sequence number; stale answers from earlier are skipped.
          const auto deadline = sent + std::chrono::seconds(2);
          while (Clock::now() < deadline) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (!wait_readable(fd.get(), static_cast<int>(std::max<long>(1, left)))) continue;
            int answer = -1;
            if (::recv(fd.get(), &answer, sizeof(answer), 0) == sizeof(answer) && answer == seq) {
              rtts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
              break;
            }
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
        }
      } catch (...) {
        client_failure = std::current_exception();
      }
    });
    client.join();
  }
  done = true;
  echo.join();
  if (echo_failure) std::rethrow_exception(echo_failure);
  if (client_failure) std::rethrow_exception(client_failure);
  return rtts;
}

double measure_goodput_bps(const Endpoint& from, const Endpoint& to, const GoodputOptions& options) {
  std::promise<std::uint16_t> port_promise;
  auto port_future = port_promise.get_future();
  std::atomic<bool> stop_sending{false};
  std::atomic<std::uint64_t> counted_bytes{0};
  std::exception_ptr sink_failure;
  const auto start = Clock::now();
  const auto count_from = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.warmup_seconds));
  const auto count_until = count_from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.seconds));

  std::thread sink([&] {
    try {
      NetnsScope in_ns(to.netns);
      UniqueFd listener = bound_socket(SOCK_STREAM, to.ipv4, to.netns + ": TCP sink");
      check(::listen(listener.get(), 64), to.netns + ": listen");
      port_promise.set_value(bound_port(listener.get()));
      std::vector<UniqueFd> conns;
      for (int i = 0; i < options.streams; ++i) {
        if (!wait_readable(listener.get(), 10'000)) throw std::runtime_error(to.netns + ": no TCP connection arrived");
        conns.emplace_back(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!conns.back()) throw_errno(to.netns + ": accept");
      }
      std::vector<pollfd> pfds;
      for (auto& c : conns) pfds.push_back(pollfd{c.get(), POLLIN, 0});
      std::vector<char> buf(1 << 20);
      while (Clock::now() < count_until) {
        ::poll(pfds.data(), pfds.size(), 50);
        for (auto& pfd : pfds) {
          if (!(pfd.revents & (POLLIN | POLLHUP))) continue;
          const ssize_t n = ::recv(pfd.fd, buf.data(), buf.size(), 0);
          const auto now = Clock::now();
          if (n > 0 && now >= count_from && now < count_until) counted_bytes += static_cast<std::uint64_t>(n);
        }
      }
    } catch (...) {
      sink_failure = std::current_exception();
      try { port_promise.set_value(0); } catch (...) {}
    }
    stop_sending = true;
  });

  std::exception_ptr source_failure;
  const std::uint16_t port = port_future.get();
  if (port != 0) {
    std::thread source([&] {
      try {
        NetnsScope in_ns(from.netns);
        std::vector<UniqueFd> conns;
        for (int i = 0; i < options.streams; ++i) {
          UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
          if (!fd) throw_errno(from.netns + ": socket");
          if (options.congestion)
            check(::setsockopt(fd.get(), IPPROTO_TCP, TCP_CONGESTION, options.congestion->c_str(),
                               static_cast<socklen_t>(options.congestion->size())),
                  from.netns + ": TCP_CONGESTION " + *options.congestion);
          sockaddr_in dst = make_addr(to.ipv4, port);
          check(::connect(fd.get(), reinterpret_cast<sockaddr*>(&dst), sizeof(dst)), from.netns + ": connect");
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
      } catch (...) {
        source_failure = std::current_exception();
      }
    });
    source.join();
  }
  sink.join();
  if (sink_failure) std::rethrow_exception(sink_failure);
  if (source_failure) std::rethrow_exception(source_failure);
  return static_cast<double>(counted_bytes.load()) * 8.0 / options.seconds;
}

double median(std::vector<double> values) { return percentile(std::move(values), 50); }

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace wanlab::emulator
