#include "wanlab/base/cpu_times.hpp"

#include <fstream>
#include <sstream>

namespace wanlab::base {

std::optional<CpuTimes> read_cpu_times(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!std::getline(file, line) || !line.starts_with("cpu ")) return std::nullopt;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice
  // (guest time is inside user already: proc(5)).
  std::istringstream fields(line.substr(4));
  std::uint64_t value = 0;
  CpuTimes times;
  for (int index = 0; index < 8 && fields >> value; ++index) {
    times.total += value;
    if (index != 3 && index != 4) times.busy += value;  // idle and iowait are not busy
    if (index == 7) times.stolen = value;
  }
  if (times.total == 0) return std::nullopt;
  return times;
}

double busy_share(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return 0;
  return static_cast<double>(after.busy - before.busy) / static_cast<double>(after.total - before.total);
}

double stolen_share(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.stolen < before.stolen) return 0;
  return static_cast<double>(after.stolen - before.stolen) / static_cast<double>(after.total - before.total);
}

}  // namespace wanlab::base
