#include "soak/load.hpp"

#include <signal.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "soak/changes.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace wanlab::bench::soak {
namespace em = wanlab::emulator;
using namespace std::chrono_literals;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string last_lines(const std::string& path, std::size_t count) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  std::string text;
  for (const auto& line : lines) text += (text.empty() ? "" : " | ") + line;
  return text;
}

// The JSON report a `wanlab perf client --json` left in its log (from its
// first '{'; anything after it is ignored); null if there is none.
nlohmann::json perf_report(const std::string& log) {
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto open = text.find('{');
  if (open == std::string::npos) return nullptr;
  std::istringstream json(text.substr(open));
  nlohmann::json report;
  try {
    json >> report;  // a stream is read up to the end of the first value
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
  return report;
}

std::optional<double> number_in(const nlohmann::json& report, const char* key) {
  if (!report.is_object() || !report.contains(key) || !report[key].is_number()) return std::nullopt;
  return report[key].get<double>();
}

}  // namespace

Load::Load(const Config& config, const em::TestbedState& state, std::string work_dir)
    : config_(config), state_(state), work_(std::move(work_dir)), dcs_(static_cast<int>(state.dcs.size())) {}

const em::Host& Load::host(int dc, int index) const {
  for (const auto& h : state_.hosts)
    if (h.dc_index == dc && h.index == index) return h;
  throw std::runtime_error(
      fmt::format("the scenario has no host {} in DC {} (the soak needs two hosts per DC)", index, dc));
}

std::string Load::ip_of(int dc) const { return em::ipv4_to_string(host(dc, 0).ipv4); }

int Load::running(Kind kind) const {
  int count = 0;
  for (const auto& p : processes_) count += p.kind == kind && !p.reaped;
  return count;
}

// Starts argv on `h` through `wanlab exec`; output to `log` ("" = none).
HostProcess& Load::launch(Kind kind, std::string label, const em::Host& h, std::vector<std::string> argv,
                          std::string log) {
  std::vector<std::string> exec = {config_.wanlab, "exec", h.name, "--testbed", state_.name, "--"};
  exec.insert(exec.end(), argv.begin(), argv.end());
  HostProcess p;
  p.kind = kind;
  p.label = std::move(label);
  p.log = std::move(log);
  p.child = spawn_logged(exec, p.log);
  p.pid = p.child.pid();
  p.started = Clock::now();
  processes_.push_back(std::move(p));
  return processes_.back();
}

void Load::start() {
  for (int dc = 0; dc < dcs_; ++dc)
    launch(Kind::server, "perf server on " + host(dc, 0).name, host(dc, 0), {config_.wanlab, "perf", "server"},
           fmt::format("{}/server-{}.log", work_, host(dc, 0).name));
  std::this_thread::sleep_for(1s);  // the servers listen
  start_ = Clock::now();
  for (int src = 0; src < dcs_; ++src)
    for (int dst = 0; dst < dcs_; ++dst)
      if (src != dst) start_long_client(src * dcs_ + dst, config_.seconds);
}

// Host 1 of the source DC to host 0 of the destination DC, 2 streams, until
// `seconds` from now.
void Load::start_long_client(int pair, double seconds) {
  const int src = pair / dcs_, dst = pair % dcs_;
  auto& p = launch(Kind::long_client, fmt::format("{} -> {}", host(src, 1).name, host(dst, 0).name), host(src, 1),
                   {config_.wanlab, "perf", "client", ip_of(dst), "-t", fmt::format("{:.0f}", seconds), "-P", "2",
                    "--cc", "cubic", "-i", "0", "--json"},
                   fmt::format("{}/long-{}-{}-{}.log", work_, src, dst, totals_.long_restarts));
  p.pair = pair;
}

// One host-process action a second, on a cycle of four seconds: start a
// sleeper; end the oldest sleeper (SIGTERM and SIGKILL in turn); a short perf
// client (3 s, one stream; every other one SIGKILLed after 1.5 s); every
// third cycle a process that leaves us (`setsid -f sleep`), for `down` to end.
void Load::churn(int tick) {
  const int cycle = tick / 4;
  switch (tick % 4) {
    case 0: start_sleeper(cycle); break;
    case 1: end_a_sleeper(cycle); break;
    case 2: start_short_client(cycle); break;
    default: start_escape(cycle); break;
  }
}

void Load::start_sleeper(int cycle) {
  const auto& h = state_.hosts[static_cast<std::size_t>(cycle) % state_.hosts.size()];
  launch(Kind::sleeper, "sleep on " + h.name, h, {"sleep", "3600"});
  totals_.sleepers_started++;
}

void Load::end_a_sleeper(int cycle) {
  if (running(Kind::sleeper) < 3) return;
  for (auto& p : processes_) {
    if (p.kind != Kind::sleeper || p.reaped || p.signal_sent) continue;
    p.signal_sent = cycle % 2 ? SIGKILL : SIGTERM;
    ::kill(p.pid, p.signal_sent);
    (p.signal_sent == SIGKILL ? totals_.sleepers_killed : totals_.sleepers_termed)++;
    return;
  }
}

void Load::start_short_client(int cycle) {
  if (running(Kind::short_client) > 0) return;  // at most one: the queue bound counts one extra stream
  std::vector<int> wan;
  for (int src = 0; src < dcs_; ++src)
    for (int dst = 0; dst < dcs_; ++dst)
      if (src != dst) wan.push_back(src * dcs_ + dst);
  const int pair = wan[static_cast<std::size_t>(cycle) % wan.size()];
  const int src = pair / dcs_, dst = pair % dcs_;
  auto& p =
      launch(Kind::short_client, fmt::format("{} -> {} (short)", host(src, 0).name, host(dst, 0).name), host(src, 0),
             {config_.wanlab, "perf", "client", ip_of(dst), "-t", "3", "-P", "1", "--cc", "cubic", "-i", "0"},
             fmt::format("{}/short-{}.log", work_, totals_.short_started));
  p.pair = pair;
  if (totals_.short_started % 2) p.kill_at = p.started + 1500ms;
  totals_.short_started++;
}

void Load::start_escape(int cycle) {
  if (cycle % 3 != 0 || totals_.escapes >= 12) return;
  const auto& h = state_.hosts[static_cast<std::size_t>(cycle / 3) % state_.hosts.size()];
  launch(Kind::escape, "setsid -f sleep on " + h.name, h, {"setsid", "-f", "sleep", "100000"});
  totals_.escapes++;
}

void Load::reap() {
  const double remaining = config_.seconds - seconds_since(start_);
  for (std::size_t i = 0; i < processes_.size(); ++i) {  // by index: a restarted client is added meanwhile
    auto& p = processes_[i];
    if (p.reaped) continue;
    if (p.kill_at && Clock::now() >= *p.kill_at && !p.signal_sent) {
      p.signal_sent = SIGKILL;
      ::kill(p.pid, SIGKILL);
    }
    const auto status = p.child.try_wait();
    if (!status) continue;
    p.reaped = true;
    p.status = *status;
    ended(p, remaining);
  }
}

// What a process's end means: a long client ends by itself at the end of the
// soak, so anything earlier is a failure (restarted while there is time);
// a short one was killed on purpose, finished or failed; a server never ends.
void Load::ended(HostProcess& p, double remaining) {
  const std::string what = fmt::format("t={:.0f}s {} exited with {}", seconds_since(start_), p.label, p.status);
  switch (p.kind) {
    case Kind::long_client:
      if (remaining <= 5) break;
      totals_.long_failures++;
      totals_.long_errors.push_back(
          fmt::format("{} after {:.0f} s: {}", what, seconds_since(p.started), last_lines(p.log, 3)));
      if (remaining > 10) {
        totals_.long_restarts++;
        start_long_client(p.pair, remaining);
      }
      break;
    case Kind::short_client:
      if (p.signal_sent) {
        totals_.short_killed++;
      } else if (p.status == 0) {
        totals_.short_finished++;
      } else {
        totals_.short_failed++;
        totals_.short_errors.push_back(fmt::format("{}: {}", what, last_lines(p.log, 3)));
      }
      break;
    case Kind::server: totals_.long_errors.push_back(fmt::format("{}: {}", what, last_lines(p.log, 3))); break;
    default: break;
  }
}

SetCall Load::apply_change(int tick) {
  const SetChange change = change_for(tick);
  const auto result = base::run_captured(set_argv(config_.wanlab, state_, change));
  const SetCall call{result.seconds * 1e3, result.cpu_seconds * 1e3, result.status != 0};
  totals_.sets++;
  totals_.set_ms.push_back(call.ms);
  totals_.set_cpu_ms.push_back(call.cpu_ms);
  if (call.failed) {
    totals_.set_failures++;
    if (totals_.set_errors.size() < 5)
      totals_.set_errors.push_back(
          fmt::format("wanlab set {} exited with {}: {}", describe(change, state_.dcs), result.status, result.output));
  }
  return call;
}

void Load::wait_for_long_clients(std::chrono::seconds limit) {
  const auto wait_until = Clock::now() + limit;
  while (running(Kind::long_client) > 0 && Clock::now() < wait_until) {
    base::check_interrupted();
    reap();
    std::this_thread::sleep_for(200ms);
  }
  reap();
}

void Load::reap_after_down(std::chrono::seconds limit) {
  const auto reap_until = Clock::now() + limit;
  while (unreaped() > 0 && Clock::now() < reap_until) {
    for (auto& p : processes_)
      if (!p.reaped && p.child.try_wait()) p.reaped = true;
    std::this_thread::sleep_for(50ms);
  }
}

int Load::host_processes() const {
  int count = 0;
  for (const auto& p : processes_) count += !p.reaped && p.kind != Kind::escape;
  return count;
}

int Load::unreaped() const {
  return static_cast<int>(
      std::count_if(processes_.begin(), processes_.end(), [](const HostProcess& p) { return !p.reaped; }));
}

std::vector<std::string> Load::not_ended() const {
  std::vector<std::string> found;
  for (const auto& p : processes_)
    if (!p.reaped) found.push_back(fmt::format("child {} ({}) not ended", p.pid, p.label));
  return found;
}

std::vector<ClientReport> Load::client_reports() const {
  std::vector<ClientReport> reports;
  for (const auto& p : processes_) {
    if (p.kind != Kind::long_client) continue;
    const nlohmann::json report = perf_report(p.log);
    reports.push_back({p.label, p.reaped ? std::to_string(p.status) : "still running", number_in(report, "seconds"),
                       number_in(report, "bytes"), number_in(report, "goodput_bps"), number_in(report, "retransmits")});
  }
  return reports;
}

}  // namespace wanlab::bench::soak
