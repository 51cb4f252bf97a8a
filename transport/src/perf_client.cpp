// The client side of `wanlab perf`.
#include <fmt/format.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <cstring>
#include <deque>
#include <sstream>

#include "async_event.hpp"
#include "perf_protocol.hpp"
#include "wanlab/transport/channel.hpp"
#include "wanlab/transport/perf.hpp"

namespace wanlab::transport::perf {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  const auto rank = static_cast<std::size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank), values.end());
  return values[rank];
}

class ClientRun {
 public:
  ClientRun(ClientOptions options, std::function<void(const Interval&)> on_interval)
      : options_(std::move(options)), on_interval_(std::move(on_interval)) {}

  // Static, holding `self`: the coroutine starts only when awaited.
  static asio::awaitable<Report> start(std::shared_ptr<ClientRun> self) { return self->run(self); }

 private:
  struct Outstanding {
    SendTicket ticket;
    std::uint64_t size;
  };

  asio::awaitable<Report> run(std::shared_ptr<ClientRun> self) {  // `self` keeps this alive
    executor_ = co_await asio::this_coro::executor;
    ack_event_.emplace(executor_);
    interval_timer_.emplace(executor_);
    channel_.emplace(co_await Channel::connect(executor_, options_.host, options_.port, options_.channel));
    channel_->send(Message::copy_of(std::as_bytes(std::span(kRequest))));
    payload_ = Message(static_cast<std::size_t>(options_.message_size));
    fill_payload(payload_.bytes());
    for (const auto& c : channel_->stats().connections) baseline_retransmits_.push_back(c.tcp.total_retrans);

    start_ = last_ack_ = interval_start_ = Clock::now();
    asio::co_spawn(executor_, read_acks(self), asio::detached);
    if (options_.interval.count() > 0) asio::co_spawn(executor_, report_intervals(self), asio::detached);

    co_await send_messages();
    while (!outstanding_.empty() && !ack_error_) co_await ack_event_->wait();
    if (ack_error_) throw *ack_error_;
    sending_done_ = true;
    interval_timer_->cancel();
    if (options_.interval.count() > 0 && acked_bytes_ > interval_bytes_) {
      emit_interval(std::max(last_ack_, interval_start_));  // the last, partial interval
    }

    Report report = build_report();
    co_await channel_->shutdown();
    {
      // The server's summary and goodbye follow at once; don't wait forever.
      detail::Watchdog watchdog(executor_, std::chrono::seconds(10), [this] { channel_->close(); });
      while (!acks_done_ && !ack_error_) co_await ack_event_->wait();
    }
    if (ack_error_) throw *ack_error_;
    report.server_bytes = summary_.bytes;
    report.server_messages = summary_.messages;
    report.server_seconds = summary_.seconds;
    co_return report;
  }

  static void fill_payload(std::span<std::byte> bytes) {
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    for (auto& b : bytes) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      b = static_cast<std::byte>(state);
    }
  }

  bool time_is_up() const {
    if (options_.bytes) return sent_ >= *options_.bytes;
    return Clock::now() - start_ >= options_.duration;
  }

  // Keeps the channel's queue fed with a little more than the connections can
  // take at once, so that stopping at -t leaves only the sockets to drain.
  asio::awaitable<void> send_messages() {
    const auto unwritten_limit = std::max<std::uint64_t>(
        2 * options_.message_size, 2ull * options_.channel.connections * options_.channel.chunk_size);
    std::deque<Outstanding> unwritten;
    std::uint64_t unwritten_bytes = 0;
    for (;;) {
      const auto size = options_.bytes
                            ? std::min(options_.message_size, *options_.bytes - std::min(*options_.bytes, sent_))
                            : options_.message_size;
      for (;;) {
        while (!unwritten.empty() && unwritten.front().ticket.done()) {
          unwritten_bytes -= unwritten.front().size;
          unwritten.pop_front();
        }
        if (ack_error_) throw *ack_error_;
        if (!unwritten.empty() && unwritten_bytes + size > unwritten_limit) {
          co_await unwritten.front().ticket.wait();
          continue;
        }
        if (!outstanding_.empty() && outstanding_bytes_ + size > options_.window) {
          co_await ack_event_->wait();
          continue;
        }
        break;
      }
      if (time_is_up()) co_return;
      auto ticket = channel_->send_borrowed(payload_.bytes().first(static_cast<std::size_t>(size)));
      unwritten.push_back({ticket, size});
      unwritten_bytes += size;
      outstanding_.push_back({std::move(ticket), size});
      outstanding_bytes_ += size;
      sent_ += size;
    }
  }

  asio::awaitable<void> read_acks(std::shared_ptr<ClientRun> /*keeps this alive*/) {
    try {
      while (auto message = co_await channel_->receive()) on_server_message(*message);
      acks_done_ = true;
    } catch (const TransportError& e) {
      ack_error_ = e;
    }
    ack_event_->notify_all();
  }

  void on_server_message(const Message& message) {
    if (message.size() == kAckSize) {
      const auto sequence = decode_ack(message.bytes());
      if (outstanding_.empty() || sequence != next_ack_) {
        throw TransportError(Errc::protocol_error,
                             fmt::format("perf server acknowledged message {}, expected {}", sequence, next_ack_));
      }
      const auto now = Clock::now();
      const auto& acked = outstanding_.front();
      if (const auto started = acked.ticket.started_at())
        completion_ms_.push_back(1e3 * seconds_between(*started, now));
      acked_bytes_ += acked.size;
      outstanding_bytes_ -= acked.size;
      outstanding_.pop_front();
      ++next_ack_;
      last_ack_ = now;
      ack_event_->notify_all();
      return;
    }
    if (auto summary = parse_summary(message.bytes())) {
      summary_ = *summary;
      return;
    }
    throw TransportError(Errc::protocol_error,
                         fmt::format("unexpected message of {} bytes from the perf server", message.size()));
  }

  std::uint64_t retransmits_now() const {
    std::uint64_t total = 0;
    const auto stats = channel_->stats();
    for (std::size_t i = 0; i < stats.connections.size(); ++i) {
      total += stats.connections[i].tcp.total_retrans -
               std::min(stats.connections[i].tcp.total_retrans, baseline_retransmits_.at(i));
    }
    return total;
  }

  void emit_interval(Clock::time_point now) {
    Interval interval;
    interval.start = seconds_between(start_, interval_start_);
    interval.end = seconds_between(start_, now);
    interval.bytes = acked_bytes_ - interval_bytes_;
    const auto retransmits = retransmits_now();
    interval.retransmits = retransmits - interval_retransmits_;
    interval_start_ = now;
    interval_bytes_ = acked_bytes_;
    interval_retransmits_ = retransmits;
    intervals_.push_back(interval);
    if (on_interval_) on_interval_(interval);
  }

  asio::awaitable<void> report_intervals(std::shared_ptr<ClientRun> /*keeps this alive*/) {
    const auto step = std::chrono::duration_cast<Clock::duration>(options_.interval);
    auto next = start_ + step;
    while (!sending_done_ && !ack_error_) {
      interval_timer_->expires_at(next);
      std::error_code ec;
      co_await interval_timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec || sending_done_ || ack_error_) co_return;
      emit_interval(Clock::now());
      next += step;
    }
  }

  Report build_report() const {
    Report report;
    report.host = options_.host;
    report.port = options_.port;
    report.streams = options_.channel.connections;
    report.bytes = acked_bytes_;
    report.seconds = seconds_between(start_, last_ack_);
    report.goodput_bps = report.seconds > 0 ? 8.0 * static_cast<double>(acked_bytes_) / report.seconds : 0.0;
    report.messages = next_ack_;
    report.message_size = options_.message_size;
    report.chunk_size = options_.channel.chunk_size;
    report.completion_p50_ms = percentile(completion_ms_, 0.50);
    report.completion_p99_ms = percentile(completion_ms_, 0.99);
    report.completion_max_ms =
        completion_ms_.empty() ? 0 : *std::max_element(completion_ms_.begin(), completion_ms_.end());
    report.intervals = intervals_;

    const auto stats = channel_->stats();
    const auto total = stats.bytes_sent();
    for (std::size_t i = 0; i < stats.connections.size(); ++i) {
      const auto& c = stats.connections[i];
      StreamReport stream;
      stream.index = c.index;
      stream.bytes = c.bytes_sent;
      stream.share = total > 0 ? static_cast<double>(c.bytes_sent) / static_cast<double>(total) : 0.0;
      stream.chunks = c.chunks_sent;
      stream.retransmits = c.tcp.total_retrans - std::min(c.tcp.total_retrans, baseline_retransmits_.at(i));
      stream.stalls = c.stalls;
      stream.stalled_seconds = std::chrono::duration<double>(c.stalled_time).count();
      stream.rtt_ms = c.tcp.rtt_us / 1e3;
      stream.cwnd = c.tcp.snd_cwnd;
      stream.delivery_rate_bps = c.tcp.delivery_rate_bps;
      report.retransmits += stream.retransmits;
      report.per_stream.push_back(stream);
    }
    if (!stats.connections.empty()) report.congestion_control = stats.connections.front().tcp.congestion_control;
    return report;
  }

  asio::any_io_executor executor_;
  ClientOptions options_;
  std::function<void(const Interval&)> on_interval_;
  std::optional<Channel> channel_;
  Message payload_;
  std::vector<std::uint32_t> baseline_retransmits_;

  Clock::time_point start_;
  Clock::time_point last_ack_;
  std::uint64_t sent_ = 0;
  std::deque<Outstanding> outstanding_;  // sent, not yet acknowledged
  std::uint64_t outstanding_bytes_ = 0;
  std::uint64_t acked_bytes_ = 0;
  std::uint64_t next_ack_ = 0;
  std::vector<double> completion_ms_;
  std::optional<detail::AsyncEvent> ack_event_;
  std::optional<TransportError> ack_error_;
  bool acks_done_ = false;
  bool sending_done_ = false;
  Summary summary_;

  std::optional<asio::steady_timer> interval_timer_;
  Clock::time_point interval_start_;
  std::uint64_t interval_bytes_ = 0;
  std::uint64_t interval_retransmits_ = 0;
  std::vector<Interval> intervals_;
};

}  // namespace

// Not a coroutine itself: GCC 12 mishandles coroutines taking two class-type
// temporaries by value.
asio::awaitable<Report> run_client(ClientOptions options, std::function<void(const Interval&)> on_interval) {
  validate(options.channel);
  if (options.message_size == 0) throw TransportError(Errc::invalid_argument, "message size must be at least 1");
  return ClientRun::start(std::make_shared<ClientRun>(std::move(options), std::move(on_interval)));
}

}  // namespace wanlab::transport::perf
