// `wanlab perf`: iperf3-like goodput test of the multi-connection transport.
// Everything but this adapter lives in the transport library (perf.hpp).
#include <iostream>

#include "commands.hpp"
#include "wanlab/transport/perf.hpp"

namespace wanlab::cli {

int cmd_perf(Args args) {
  namespace perf = wanlab::transport::perf;
  perf::Command command;
  try {
    command = perf::parse_args(args);
  } catch (const perf::UsageError& e) {
    std::cerr << "wanlab perf: " << e.what() << "\n";
    return 2;
  }
  return perf::run(command, std::cout, std::cerr);
}

}  // namespace wanlab::cli
