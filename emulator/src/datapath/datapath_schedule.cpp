// Link schedules in the data plane: a pair's steps as an inner map of
// pair_sched, swapped in whole; read back as they are, or as the step in
// effect at a time, the way the program finds it.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

extern "C" {
#include "wanlab_edt.h"
}

#include "datapath_internal.hpp"

namespace wanlab::emulator {

using namespace datapath_detail;

namespace {

// What the program relies on: a head that counts the steps, steps from 0 in
// ascending time, inside the period when it loops.
void check_schedule(std::span<const wanlab_sched_entry> entries, const std::string& pair) {
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument(fmt::format("pair {}: schedule: {}", pair, why));
  };
  if (entries.size() < 2) bad("no steps");
  const wanlab_sched_head& head = entries[0].head;
  if (head.steps != entries.size() - 1)
    bad(fmt::format("head counts {} steps, {} given", head.steps, entries.size() - 1));
  if (head.steps > WANLAB_SCHED_MAX_STEPS) bad(fmt::format("{} steps, at most {}", head.steps, WANLAB_SCHED_MAX_STEPS));
  if ((head.columns & ~WANLAB_SCHED_COLUMNS) != 0 || head.columns == 0) bad(fmt::format("columns {:#x}", head.columns));
  if (entries[1].step.at_ns != 0) bad("the first step is not at 0");
  for (std::size_t i = 2; i < entries.size(); ++i)
    if (entries[i].step.at_ns <= entries[i - 1].step.at_ns) bad(fmt::format("step {} is not after step {}", i, i - 1));
  if (head.period_ns != 0 && entries.back().step.at_ns >= head.period_ns) bad("a step at or after the period");
}

// A map of the inner kind pair_sched holds, filled with `entries`.
base::UniqueFd make_schedule_map(std::span<const wanlab_sched_entry> entries, const std::string& pair) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP);
  const auto count = static_cast<__u32>(entries.size());
  base::UniqueFd map(
      bpf_map_create(BPF_MAP_TYPE_ARRAY, "wanlab_sched", sizeof(__u32), sizeof(wanlab_sched_entry), count, &opts));
  if (map.get() < 0) fail(fmt::format("pair_sched: creating a map of {} steps for pair {}", count - 1, pair), errno);
  std::vector<__u32> keys(count);
  for (__u32 i = 0; i < count; ++i) keys[i] = i;
  __u32 done = count;
  if (bpf_map_update_batch(map.get(), keys.data(), entries.data(), &done, nullptr) != 0)
    fail(fmt::format("pair_sched: filling the schedule of pair {}", pair), errno);
  return map;
}

}  // namespace

void Datapath::set_schedule(std::span<const std::pair<int, int>> pairs, std::span<const wanlab_sched_entry> entries) {
  if (pairs.empty()) return;
  std::vector<__u32> indices;
  for (const auto& [src, dst] : pairs) indices.push_back(impl_->pair_index(src, dst));
  std::string names = fmt::format("{}->{}", pairs[0].first, pairs[0].second);
  if (pairs.size() > 1) names += fmt::format(" (and {} more)", pairs.size() - 1);
  check_schedule(entries, names);
  const base::UniqueFd map = make_schedule_map(entries, names);
  __u32 fd = static_cast<__u32>(map.get());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (bpf_map_update_elem(impl_->map(kPairSched), &indices[i], &fd, BPF_ANY) != 0)
      fail(fmt::format("pair_sched: setting the schedule of pair {}->{}", pairs[i].first, pairs[i].second), errno);
  }
}

void Datapath::set_schedule(int src, int dst, std::span<const wanlab_sched_entry> entries) {
  const std::pair<int, int> pair{src, dst};
  set_schedule(std::span(&pair, 1), entries);
}

void Datapath::clear_schedule(int src, int dst) {
  __u32 index = impl_->pair_index(src, dst);
  if (bpf_map_delete_elem(impl_->map(kPairSched), &index) != 0 && errno != ENOENT)
    fail(fmt::format("pair_sched: removing the schedule of pair {}->{}", src, dst), errno);
}

namespace {

// The pair's schedule map, or -1 when it has none.
base::UniqueFd schedule_map_fd(int outer, __u32 index, const std::string& pair) {
  __u32 id = 0;
  if (bpf_map_lookup_elem(outer, &index, &id) != 0) {
    if (errno == ENOENT) return base::UniqueFd(-1);
    fail("pair_sched: reading pair " + pair, errno);
  }
  base::UniqueFd map(bpf_map_get_fd_by_id(id));
  if (map.get() < 0 && errno != ENOENT) fail("pair_sched: opening the schedule of pair " + pair, errno);
  return map;  // ENOENT: replaced or removed meanwhile
}

wanlab_sched_entry schedule_entry(int map, __u32 index, const std::string& pair) {
  wanlab_sched_entry entry{};
  if (bpf_map_lookup_elem(map, &index, &entry) != 0)
    fail(fmt::format("pair_sched: reading entry {} of pair {}", index, pair), errno);
  return entry;
}

// The step in effect at t_ns, as the program's search finds it.
wanlab_sched_step schedule_step_at(int map, const wanlab_sched_head& head, std::uint64_t t_ns,
                                   const std::string& pair) {
  const wanlab_sched_pos pos = wanlab_edt_sched_pos(&head, t_ns);
  __u32 lo = 1, hi = head.steps;
  while (lo < hi) {
    const __u32 mid = lo + (hi - lo + 1) / 2;
    if (schedule_entry(map, mid, pair).step.at_ns <= pos.offset_ns)
      lo = mid;
    else
      hi = mid - 1;
  }
  return schedule_entry(map, lo, pair).step;
}

}  // namespace

std::vector<wanlab_sched_entry> Datapath::schedule(int src, int dst) const {
  const base::UniqueFd map =
      schedule_map_fd(impl_->map(kPairSched), impl_->pair_index(src, dst), fmt::format("{}->{}", src, dst));
  if (map.get() < 0) return {};
  const __u32 count = map_info(map.get(), "pair_sched").max_entries;
  std::vector<wanlab_sched_entry> entries(count);
  std::vector<__u32> keys(count);
  __u32 next = 0, got = count;
  // An array's batch ends with ENOENT once it has read the last entry.
  if (bpf_map_lookup_batch(map.get(), nullptr, &next, keys.data(), entries.data(), &got, nullptr) != 0 &&
      errno != ENOENT)
    fail(fmt::format("pair_sched: reading the schedule of pair {}->{}", src, dst), errno);
  if (got != count)
    throw std::runtime_error(fmt::format("pair_sched: read {} of {} entries of pair {}->{}", got, count, src, dst));
  return entries;
}

std::optional<Datapath::ScheduleMap> Datapath::schedule_map(int src, int dst) const {
  const std::string name = fmt::format("{}->{}", src, dst);
  const base::UniqueFd map = schedule_map_fd(impl_->map(kPairSched), impl_->pair_index(src, dst), name);
  if (map.get() < 0) return std::nullopt;
  return ScheduleMap{src, dst, map_info(map.get(), "pair_sched").id, schedule_entry(map.get(), 0, name).head};
}

std::vector<Datapath::ScheduleMap> Datapath::schedule_maps() const {
  std::vector<ScheduleMap> maps;
  for (int src = 0; src < impl_->num_dcs; ++src)
    for (int dst = 0; dst < impl_->num_dcs; ++dst)
      if (auto map = schedule_map(src, dst)) maps.push_back(*map);
  return maps;
}

Datapath::PairAt Datapath::pair_at(int src, int dst, std::uint64_t t_ns) const {
  PairAt at{pair(src, dst)};
  const std::string name = fmt::format("{}->{}", src, dst);
  const base::UniqueFd map = schedule_map_fd(impl_->map(kPairSched), impl_->pair_index(src, dst), name);
  if (map.get() < 0) return at;
  const wanlab_sched_head head = schedule_entry(map.get(), 0, name).head;
  if (head.steps == 0) return at;
  const wanlab_sched_step step = schedule_step_at(map.get(), head, t_ns, name);
  at.scheduled = true;
  at.paused = wanlab_edt_sched_paused(&at.config, head.columns, &step) != 0;
  wanlab_edt_sched_apply(&at.config, head.columns, &step);
  return at;
}

}  // namespace wanlab::emulator
