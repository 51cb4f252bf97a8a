// [fabric]: the DC network the simulator models at scale (fabric.hpp), read
// as strictly as the rest of the experiment ("file:line:column: fabric.key: ...").
#include "experiment/fabric_config.hpp"

#include <array>
#include <string_view>

#include "wanlab/base/toml.hpp"
#include "wanlab/emulator/units.hpp"

namespace wanlab::harness::detail {
namespace {

using namespace std::string_view_literals;

constexpr std::array kFabricKeys{"nic_rate"sv, "gpus_per_server"sv, "nvlink_rate"sv, "oversubscription"sv, "latency"sv};
constexpr int kMaxGpusPerServer = 1024;
constexpr double kMaxOversubscription = 1000;
constexpr std::uint64_t kMaxLatencyNs = 1'000'000'000;  // a second: far beyond any DC

class FabricReader {
 public:
  FabricReader(FieldReader& reader, const toml::table& section) : reader_(reader), section_(section) {}

  Fabric read() {
    reader_.check_known_keys(section_, kFabricKeys, "[fabric]");
    reader_.remember("fabric", section_);
    Fabric fabric;
    fabric.nic_bps = reader_.read_rate(section_, "nic_rate", "fabric.nic_rate").value_or(fabric.nic_bps);
    fabric.nvlink_bps = reader_.read_rate(section_, "nvlink_rate", "fabric.nvlink_rate").value_or(fabric.nvlink_bps);
    fabric.gpus_per_server = FieldReader::to_int(
        reader_.read_int(section_, "gpus_per_server", "fabric.gpus_per_server", {1, kMaxGpusPerServer}),
        fabric.gpus_per_server);
    fabric.oversubscription =
        reader_.read_positive(section_, "oversubscription", "fabric.oversubscription", kMaxOversubscription, 1)
            .value_or(fabric.oversubscription);
    fabric.latency_ns = latency(fabric.latency_ns);
    return fabric;
  }

 private:
  std::uint64_t latency(std::uint64_t otherwise) {
    const toml::node* node = section_.get("latency");
    if (node == nullptr) return otherwise;
    const std::uint64_t ns =
        reader_.parse_string(*node, "fabric.latency", R"(a time like "5us")", emulator::units::parse_time);
    if (ns > kMaxLatencyNs) {
      reader_.fail(node->source(),
                   fmt::format("fabric.latency: expected a time from 0s to 1s, got {}", base::describe_value(*node)));
    }
    reader_.remember("fabric.latency", *node);
    return ns;
  }

  FieldReader& reader_;
  const toml::table& section_;
};

}  // namespace

void read_fabric(FieldReader& reader, const toml::table& root) {
  const toml::table* section = reader.optional_table(root, "fabric");
  if (section == nullptr) return;
  reader.experiment().fabric = FabricReader(reader, *section).read();
}

}  // namespace wanlab::harness::detail
