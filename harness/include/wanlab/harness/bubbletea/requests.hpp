// BubbleTea's requests: a trace file (arrival_s,prompt_tokens,output_tokens)
// or a seeded Poisson process with lognormal prompt lengths.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wanlab::harness {

struct Experiment;

struct Request {
  int id = 0;                   // index in arrival order
  std::int64_t arrival_ns = 0;  // since the run's origin (the first iteration's start)
  int prompt_tokens = 0;
  int output_tokens = 0;
};

// A trace file: "arrival_s,prompt_tokens,output_tokens" per line, an optional
// header line, '#' comments; arrivals non-decreasing. Errors name file:line
// (ExperimentError).
std::vector<Request> parse_request_trace(std::string_view text, const std::string& path);
// The requests of a run of `horizon_ns`: the trace's (read through
// base::read_regular_file) or the arrival process's, seeded.
std::vector<Request> load_requests(const Experiment& experiment, std::int64_t horizon_ns);

}  // namespace wanlab::harness
