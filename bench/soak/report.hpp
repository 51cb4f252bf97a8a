// What the soak writes: a row a sample (printed as it goes, and as a table at
// the end), the CSV of every row, and the markdown report (the run, the
// summary, what ran, when a drop is explained, the rows and the long
// clients' own reports).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "soak/config.hpp"
#include "soak/load.hpp"
#include "soak/sampler.hpp"
#include "soak/verdicts.hpp"

namespace wanlab::bench::soak {

extern const std::vector<std::string> kHeader;
std::vector<std::string> row_cells(const Row& row);
// The rows under `title`, with the header above.
Table rows_table(std::string title, const std::vector<Row>& rows);

// What the markdown's head says about the run.
struct RunFacts {
  MachineInfo machine;
  std::string release_path;
  std::string load_start, load_end;
  double run_seconds = 0;
  std::uint64_t wmem_bytes = 0;  // the hosts' tcp_wmem max, in the drop rule
};

void write_csv(const std::string& path, const std::vector<Row>& rows);
void write_markdown(const Config& config, const RunFacts& facts, const Verdicts& verdicts, const std::vector<Row>& rows,
                    const std::vector<ClientReport>& clients);

}  // namespace wanlab::bench::soak
