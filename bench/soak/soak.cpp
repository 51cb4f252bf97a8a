#include "soak/soak.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "soak/verdicts.hpp"
#include "wanlab/base/interrupts.hpp"
#include "wanlab/emulator/leftovers.hpp"
#include "wanlab/emulator/scenario.hpp"

namespace wanlab::bench::soak {
namespace em = wanlab::emulator;
using namespace std::chrono_literals;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void print_row(const Row& row) {
  fmt::print("{}\n", fmt::join(row_cells(row), "  "));
  std::fflush(stdout);
}

}  // namespace

int Soak::run() {
  facts_.machine = machine_info();
  facts_.load_start = load_average();
  run_start_ = Clock::now();
  links_before_up_ = em::link_names();
  fmt::print("wanlab soak benchmark, {}\nmachine: {}; {} CPUs; load average at start {}\n", now_text(),
             facts_.machine.kernel, facts_.machine.cpus, facts_.load_start);
  bring_up();
  drive();
  finish_load();
  const std::vector<std::string> leftovers = take_down();
  const Verdicts verdicts =
      judge(config_, {rows_, drops_->pairs(), load_->totals(), leftovers, down_seconds_, processes_at_down_});
  report(verdicts);
  return verdicts.pass ? 0 : 3;
}

// The testbed, which must run the nfqueue path's daemon over three DCs.
void Soak::bring_up() {
  fmt::print("bringing up {} as {} ...\n", config_.scenario, config_.name);
  std::fflush(stdout);
  bed_ = std::make_unique<Testbed>(config_.wanlab, config_.scenario, config_.name);
  const auto& state = bed_->state();
  facts_.release_path = em::to_string(state.release) + " (" + state.release_reason + ")";
  if (state.release != em::ReleasePath::nfqueue || state.daemon_pid <= 0)
    throw std::runtime_error("the soak measures the nfqueue path's releaser daemon; this testbed runs " +
                             facts_.release_path);
  const int dcs = static_cast<int>(state.dcs.size());
  if (dcs != 3) throw std::runtime_error(fmt::format("{}: expected three DCs, found {}", config_.scenario, dcs));
  const em::Scenario scenario = em::load_scenario(state.scenario_path, em::ScheduleFiles::skip);
  facts_.wmem_bytes = scenario.host.tcp_wmem_max.value_or(4u << 20);
  fmt::print("up in {:.1f} s; release path {}; daemon pid {}\n", bed_->up_seconds(), facts_.release_path,
             state.daemon_pid);
  drops_.emplace(state, Load::kWanStreams, facts_.wmem_bytes);
}

// The load, and a tick a second: the slice that ends judged, a row every
// sample, what ended reaped, one host-process action and one `set`.
void Soak::drive() {
  load_.emplace(config_, bed_->state(), work_);
  load_->start();
  sampler_.emplace(bed_->state(), drops_->wan_totals());
  fmt::print(
      "soak for {:.0f} s: perf on {} directed pairs, a `wanlab set` every second, host processes started and killed; a "
      "row every {} s\n\n",
      config_.seconds, Load::kLongClients, config_.sample_seconds);
  std::fflush(stdout);
  const int ticks = static_cast<int>(std::lround(config_.seconds));
  for (int t = 0; t < ticks; ++t) tick(t);
  std::this_thread::sleep_until(load_->start_time() + std::chrono::seconds(ticks));
  sampler_->add(drops_->end_slice(ticks));
  if (ticks % config_.sample_seconds == 0)
    rows_.push_back(sampler_->sample(ticks, drops_->wan_totals(), load_->host_processes()));
}

void Soak::tick(int t) {
  std::this_thread::sleep_until(load_->start_time() + std::chrono::seconds(t));
  base::check_interrupted();
  if (t > 0) sampler_->add(drops_->end_slice(t));
  if (t > 0 && t % config_.sample_seconds == 0) {
    rows_.push_back(sampler_->sample(t, drops_->wan_totals(), load_->host_processes()));
    print_row(rows_.back());
  }
  load_->reap();
  load_->churn(t);
  sampler_->add(load_->apply_change(t));
  drops_->widen();
}

void Soak::finish_load() {
  fmt::print("soak done; waiting for the long perf clients' reports\n");
  std::fflush(stdout);
  load_->wait_for_long_clients(60s);   // they end by themselves now
  clients_ = load_->client_reports();  // before `down` ends those that did not
}

std::vector<std::string> Soak::take_down() {
  drops_->close();  // our map descriptors would keep the maps alive
  // What `down` must end: every process in the testbed's namespaces now.
  const em::TestbedTraces traces(bed_->state(), links_before_up_);
  processes_at_down_ = traces.processes();
  fmt::print("wanlab down {} ({} processes in its namespaces, {} of them started by the soak) ...\n", bed_->name(),
             processes_at_down_, load_->unreaped());
  std::fflush(stdout);
  const auto down = bed_->down();
  down_seconds_ = down.seconds;
  load_->reap_after_down(10s);
  // Namespaces die asynchronously: give the kernel up to 10 s.
  const auto settle_start = Clock::now();
  std::vector<std::string> found;
  do {
    found.clear();
    if (down.status != 0) found.push_back(fmt::format("`wanlab down` exited with {}: {}", down.status, down.output));
    for (auto& line : traces.leftovers()) found.push_back(std::move(line));
    for (auto& line : load_->not_ended()) found.push_back(std::move(line));
    if (found.empty()) break;
    std::this_thread::sleep_for(250ms);
  } while (seconds_since(settle_start) < 10);
  fmt::print("down took {:.1f} s; leftovers checked {:.1f} s after it\n", down.seconds, seconds_since(settle_start));
  return found;
}

void Soak::report(const Verdicts& verdicts) {
  fmt::print("\n{}\n", rows_table("Soak", rows_).text());
  for (const auto& line : verdicts.summary) fmt::print("{}\n", line);
  facts_.run_seconds = seconds_since(run_start_);
  facts_.load_end = load_average();
  if (!config_.csv.empty()) write_csv(config_.csv, rows_);
  if (!config_.markdown.empty()) write_markdown(config_, facts_, verdicts, rows_, clients_);
}

}  // namespace wanlab::bench::soak
