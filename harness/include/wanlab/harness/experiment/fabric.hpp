// The network inside a datacenter as the simulator sees it at scale: an
// experiment's [fabric] section (docs/SCALE.md, "[fabric]").
//
// Without [fabric] the simulator models the emulated testbed: inside a DC all
// traffic shares the scenario's [intra_dc] pair, as the tc program shapes it,
// and workers on one emulated host exchange for free. With [fabric] (even an
// empty one: every key has a default) it models a real DC instead: each GPU
// has its own NIC, the GPUs of one server talk over NVLink, and the servers'
// NICs meet in a fabric that may be oversubscribed; the WAN pairs between DCs
// stay the scenario's. The emulated testbed cannot run a fabric: `wanlab
// train` without --simulate refuses an experiment that has one.
#pragma once

#include <cstdint>

namespace wanlab::harness {

struct Fabric {
  // Per GPU. A DGX H100 has eight ConnectX-7 400 Gbit/s NICs, one per GPU
  // (NVIDIA DGX H100 user guide, "Hardware overview"; the DGX SuperPOD
  // reference architecture connects each to its own rail).
  double nic_bps = 400e9;
  // DGX H100 / HGX H100: 8 GPUs per server, all joined by NVLink switches.
  int gpus_per_server = 8;
  // Per GPU and direction: H100 SXM's fourth-generation NVLink gives 900 GB/s
  // in total, 450 GB/s each way (NVIDIA H100 datasheet) = 3600 Gbit/s.
  double nvlink_bps = 3600e9;
  // Servers' NIC bandwidth over what the fabric's core carries at once; 1 is
  // non-blocking, as the DGX SuperPOD's rail-optimised fat tree is.
  double oversubscription = 1;
  // One way, NIC to NIC across the fabric. RDMA over a two- or three-tier
  // InfiniBand fat tree delivers in a few microseconds; a round figure of
  // that, not a measurement.
  std::uint64_t latency_ns = 5000;
};

}  // namespace wanlab::harness
