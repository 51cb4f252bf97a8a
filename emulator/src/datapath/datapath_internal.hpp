// What the datapath's sources share (datapath.cpp: loading, maps, stats;
// datapath_schedule.cpp: link schedules): the maps by id and Datapath's
// state. The generated skeleton is included by datapath.cpp alone.
#pragma once

#include <bpf/bpf.h>
#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/datapath.hpp"

struct wanlab_tc;

namespace wanlab::emulator {
namespace datapath_detail {

// std::runtime_error "what: strerror(err)".
[[noreturn]] void fail(const std::string& what, int err);
// The kernel's description of the map at `fd`.
bpf_map_info map_info(int fd, const std::string& what);

enum MapId : std::size_t { kDcOfV4, kDcOfV6, kPairConfig, kPairState, kPairStats, kFlowState, kPairSched, kMapCount };

}  // namespace datapath_detail

struct Datapath::Impl {
  wanlab_tc* skel = nullptr;           // load(): owns program and maps
  std::vector<base::UniqueFd> pinned;  // open_pinned(): owns the map fds
  std::array<int, datapath_detail::kMapCount> maps{};
  int program = -1;
  int num_dcs = 0;

  Impl() { maps.fill(-1); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();  // destroys skel (datapath.cpp, the skeleton's one includer)

  int map(datapath_detail::MapId id) const { return maps[id]; }

  __u32 pair_index(int src, int dst) const {
    if (src < 0 || src >= num_dcs || dst < 0 || dst >= num_dcs)
      throw std::out_of_range(fmt::format("pair {}->{}: DC index out of range 0..{}", src, dst, num_dcs - 1));
    return static_cast<__u32>(src * num_dcs + dst);
  }
};

}  // namespace wanlab::emulator
