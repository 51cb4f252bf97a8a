// BubbleTea's plan-side pieces: bubble prediction on known schedules,
// admission (placement bounds, SLO rejection, layer chunks, batching), the
// simulator with prefill and its summary.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "harness_support.hpp"
#include "wanlab/base/stats.hpp"
#include "wanlab/harness/bubbletea/admission.hpp"
#include "wanlab/harness/bubbletea/bubbles.hpp"
#include "wanlab/harness/bubbletea/requests.hpp"
#include "wanlab/harness/experiment/prefill.hpp"
#include "wanlab/harness/model/kv_routes.hpp"
#include "wanlab/harness/model/link_model.hpp"
#include "wanlab/harness/model/served_model.hpp"
#include "wanlab/harness/record/prefill_summary.hpp"
#include "wanlab/harness/sim/simulate.hpp"

using namespace wanlab::harness;
using harness_test::experiment;
using harness_test::three_dcs;

namespace {

constexpr std::int64_t kMs = 1'000'000;

LinkModel free_links() {
  LinkModel model;
  model.free_communication = true;
  return model;
}

// Unit = 1 ms: forward 1, backward 2, free communication, one iteration.
RunRecord free_run(const std::string& schedule, int p, int m) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"" + schedule + "\"", p, 1, m, 1, 2), scenario);
  return simulate(plan, scenario, free_links());
}

using Offsets = std::vector<std::pair<std::int64_t, std::int64_t>>;  // in units

Offsets units(const std::vector<Window>& windows) {
  Offsets out;
  for (const Window& window : windows) out.emplace_back(window.start_ns / kMs, window.end_ns / kMs);
  return out;
}

// The served model and prefill curve of REFERENCES.md (Llama-2-70B, one worker).
void enable_prefill(Experiment& e) {
  e.prefill.enabled = true;
  e.prefill.decode_dc = "b";
  e.prefill.time_tokens = {128, 1024, 2048, 4096, 8192};
  e.prefill.time_ms = {48, 158, 308, 642, 1339};
  e.prefill.guard_ns = 5 * kMs;
  e.prefill.ttft_slo_ns = 3000 * kMs;
  e.prefill.max_batch_tokens = 8192;
}

Experiment admission_experiment() {
  Experiment e = experiment("schedule = \"1f1b\"", 4, 1, 8);
  enable_prefill(e);
  return e;
}

// 1 ms + 1 ns per KB, more for higher workers: placement depends on the worker.
std::int64_t fake_kv(int worker, std::uint64_t bytes) {
  return (worker + 1) * kMs + static_cast<std::int64_t>(bytes / 1000);
}

Request request(int id, std::int64_t arrival_ns, int tokens) { return Request{id, arrival_ns, tokens, 1}; }

std::int64_t chunk_end(const Chunk& chunk) { return chunk.start_ns + static_cast<std::int64_t>(chunk.duration_ns); }

// The batch's chunks: whole layers in order, all on one worker, summing to the prefill.
void check_chunks(const Experiment& e, const Batch& batch) {
  BOOST_REQUIRE(!batch.chunks.empty());
  std::uint64_t total = 0;
  int next_layer = 0;
  for (const Chunk& chunk : batch.chunks) {
    BOOST_TEST(chunk.worker == batch.chunks.front().worker);
    BOOST_TEST(chunk.first_layer == next_layer);
    BOOST_TEST(chunk.end_layer > chunk.first_layer);
    next_layer = chunk.end_layer;
    total += chunk.duration_ns;
  }
  BOOST_TEST(next_layer == e.prefill.model.layers);
  BOOST_TEST(total == prefill_ns(e, batch.tokens));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bubble_prediction)

// Hand-derived from the schedules (f = 1, b = 2, p = 4, m = 8, 33 units):
// GPipe stage 0 computes F0..F7 in [0, 8) and B in [17, 33); stage 3 starts
// at 3 and ends its backwards at 27. 1F1B stage 0 waits 6 units for B0's
// gradient to come back ([4, 10)) and then for three of the cooldown's
// backwards; stage 3 idles s = 3 units at the start and 6 at the end.
BOOST_AUTO_TEST_CASE(gpipe_p4_m8_idle_windows) {
  RunRecord record = free_run("gpipe", 4, 8);
  std::vector<std::vector<Window>> offsets = idle_offsets(record, 0);
  BOOST_REQUIRE(offsets.size() == 4u);
  BOOST_TEST(units(offsets[0]) == (Offsets{{8, 17}}));
  BOOST_TEST(units(offsets[1]) == (Offsets{{0, 1}, {9, 15}, {31, 33}}));
  BOOST_TEST(units(offsets[2]) == (Offsets{{0, 2}, {10, 13}, {29, 33}}));
  BOOST_TEST(units(offsets[3]) == (Offsets{{0, 3}, {27, 33}}));
  for (const std::vector<Window>& worker : offsets) {
    std::int64_t idle = 0;
    for (const Window& window : worker) idle += window.end_ns - window.start_ns;
    BOOST_TEST(idle == 9 * kMs);  // (p - 1)(f + b) per stage
  }
}

BOOST_AUTO_TEST_CASE(one_f_one_b_p4_m8_idle_windows) {
  RunRecord record = free_run("1f1b", 4, 8);
  std::vector<std::vector<Window>> offsets = idle_offsets(record, 0);
  BOOST_REQUIRE(offsets.size() == 4u);
  BOOST_TEST(units(offsets[0]) == (Offsets{{4, 10}, {24, 25}, {27, 28}, {30, 31}}));
  BOOST_TEST(units(offsets[1]) == (Offsets{{0, 1}, {4, 8}, {25, 26}, {28, 29}, {31, 33}}));
  BOOST_TEST(units(offsets[2]) == (Offsets{{0, 2}, {4, 6}, {26, 27}, {29, 33}}));
  BOOST_TEST(units(offsets[3]) == (Offsets{{0, 3}, {27, 33}}));
  for (std::size_t worker = 0; worker < offsets.size(); ++worker) {
    for (const Window& window : offsets[worker]) BOOST_TEST(window.worker == static_cast<int>(worker));
  }
}

BOOST_AUTO_TEST_CASE(prediction_is_the_offsets_at_the_next_start_and_repeats_exactly) {
  auto scenario = three_dcs();
  Plan plan = make_plan(experiment("schedule = \"1f1b\"", 4, 1, 8, 1, 2), scenario);
  RunRecord record = simulate(plan, scenario, free_links(), 3);
  std::vector<Window> predicted = predict_windows(idle_offsets(record, 1), record.iteration_start_ns[2]);
  std::vector<Window> short_dropped = predict_windows(idle_offsets(record, 1), record.iteration_start_ns[2], 2 * kMs);
  BOOST_TEST(predicted.size() == 15u);
  BOOST_TEST(short_dropped.size() == 8u);  // the seven 1-unit windows go
  BOOST_TEST(predicted.front().start_ns == record.iteration_start_ns[2] + 4 * kMs);
  std::vector<PredictionError> errors =
      prediction_errors(predicted, idle_offsets(record, 2), record.iteration_start_ns[2], 2);
  BOOST_TEST(errors.size() == predicted.size());
  for (const PredictionError& error : errors) {
    BOOST_TEST(error.iteration == 2);
    BOOST_TEST(error.start_error_ns == 0);
    BOOST_TEST(error.length_error_ns == 0);
  }
}

// Two iterations of one worker, the second 30 ns ahead: bubbles ended by ops
// 3 and 7, and the tail. Place by place the shared idle time is each bubble's
// overlap with its twin; every window against every other also cut a sliver
// out of op 7's bubble with op 3's twin, which no bubble is.
BOOST_AUTO_TEST_CASE(idle_in_both_iterations_is_taken_bubble_by_bubble) {
  const std::vector<std::vector<Window>> earlier{{{0, 100, 200, 3}, {0, 250, 400, 7}, {0, 500, 600, -1}}};
  const std::vector<std::vector<Window>> later{{{0, 70, 260, 3}, {0, 300, 380, 7}, {0, 470, 600, -1}}};
  const std::vector<std::vector<Window>> both = idle_in_both(earlier, later);
  BOOST_REQUIRE(both.size() == 1u);
  BOOST_REQUIRE(both[0].size() == 3u);
  BOOST_TEST(both[0][0].start_ns == 100);
  BOOST_TEST(both[0][0].end_ns == 200);
  BOOST_TEST(both[0][0].before_op == 3);
  BOOST_TEST(both[0][1].start_ns == 300);  // not [250, 260): op 3's later twin reaching into it
  BOOST_TEST(both[0][1].end_ns == 380);
  BOOST_TEST(both[0][2].start_ns == 500);
  BOOST_TEST(both[0][2].before_op == -1);
  // A bubble only one iteration has (an op that came right after another) is left out.
  const std::vector<std::vector<Window>> merged{{{0, 70, 260, 3}, {0, 470, 600, -1}}};
  BOOST_TEST(idle_in_both(earlier, merged)[0].size() == 2u);
}

// The idle offsets say which op ends each bubble.
BOOST_AUTO_TEST_CASE(idle_offsets_name_the_op_that_ends_each_bubble) {
  const RunRecord record = harness_test::pp_across_dc_run().record;
  for (const std::vector<Window>& worker : idle_offsets(record, 1)) {
    BOOST_REQUIRE(!worker.empty());
    // Every bubble but the tail (if the iteration does not end in compute) is
    // ended by an op, each by another one.
    for (std::size_t i = 0; i + 1 < worker.size(); ++i) {
      BOOST_TEST(worker[i].before_op >= 0);
      BOOST_TEST((worker[i].before_op < worker[i + 1].before_op || worker[i + 1].before_op == -1));
    }
  }
}

BOOST_AUTO_TEST_CASE(prediction_errors_match_the_most_overlapping_window) {
  std::vector<std::vector<Window>> actual{{{0, 10, 20}, {0, 30, 50}}};
  std::vector<Window> predicted{{0, 1000 + 12, 1000 + 35}, {0, 1000 + 60, 1000 + 70}};
  std::vector<PredictionError> errors = prediction_errors(predicted, actual, 1000, 4);
  BOOST_REQUIRE(errors.size() == 2u);
  // [12, 35) overlaps [10, 20) by 8 and [30, 50) by 5: matched with [10, 20).
  BOOST_TEST(errors[0].start_error_ns == -2);
  BOOST_TEST(errors[0].length_error_ns == 10 - 23);
  BOOST_TEST(errors[1].start_error_ns == 30 - 60);  // no overlap: the nearest start
  BOOST_TEST(errors[1].length_error_ns == 20 - 10);
  BOOST_TEST(errors[0].predicted_ns == 23);  // what each error is relative to
  BOOST_TEST(errors[1].predicted_ns == 10);
}

// A schedule that runs ahead of its prediction: computes predicted to end at
// 100 and 300 end at 90 and 260. Each time the worker's later windows move by
// the drift so far (not by each drift again), earlier windows and other
// workers' stay, and a window moved earlier does not reach back over prefill
// already placed before it.
BOOST_AUTO_TEST_CASE(windows_follow_the_schedule_as_its_computes_end) {
  std::vector<Window> windows{{0, 20, 80, 1}, {0, 100, 200, 3}, {0, 300, 400, -1}, {1, 100, 200, 2}};
  DriftFollower drift;
  drift.reset(2);
  const auto nothing_placed = [](int, std::int64_t) { return std::numeric_limits<std::int64_t>::min(); };
  const DriftFollower::Shift first = drift.compute_ended(0, 100, 90);
  BOOST_TEST(first.from_ns == 100);
  BOOST_TEST(first.by_ns == -10);
  shift_windows(windows, 0, first, nothing_placed);
  BOOST_TEST(windows[0].start_ns == 20);  // before the compute: as predicted
  BOOST_TEST(windows[1].start_ns == 90);  // the bubble after it starts where it ended
  BOOST_TEST(windows[1].end_ns == 190);
  BOOST_TEST(windows[2].start_ns == 290);
  BOOST_TEST(windows[3].start_ns == 100);  // another GPU's
  // The next compute, predicted at 300 (now 290), ended at 260: 30 more.
  const DriftFollower::Shift second = drift.compute_ended(0, 300, 260);
  BOOST_TEST(second.from_ns == 290);
  BOOST_TEST(second.by_ns == -30);
  shift_windows(windows, 0, second, [](int, std::int64_t start) { return start == 290 ? 275 : start; });
  BOOST_TEST(windows[1].start_ns == 90);   // before it
  BOOST_TEST(windows[2].start_ns == 275);  // not over the prefill placed until 275
  BOOST_TEST(windows[2].end_ns == 360);
  BOOST_TEST(drift.applied_ns(0) == -40);
  // Running behind: the windows move later by the new drift only.
  const DriftFollower::Shift late = drift.compute_ended(1, 100, 125);
  BOOST_TEST(late.by_ns == 25);
  shift_windows(windows, 1, late, nothing_placed);
  BOOST_TEST(windows[3].start_ns == 125);
  BOOST_TEST(windows[3].end_ns == 225);
  // As predicted: nothing moves; a worker out of range moves nothing.
  BOOST_TEST(drift.compute_ended(1, 400, 425).by_ns == 0);
  BOOST_TEST(drift.compute_ended(5, 100, 0).by_ns == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(never_before_now_nor_past_a_window_end_minus_guard) {
  Experiment e = admission_experiment();
  const std::int64_t guard = static_cast<std::int64_t>(e.prefill.guard_ns);
  std::mt19937_64 random(20240609);
  std::vector<Window> original;
  for (int worker = 0; worker < 4; ++worker) {
    std::int64_t at = 0;
    while (at < 20'000 * kMs) {
      at += std::uniform_int_distribution<std::int64_t>(0, 300 * kMs)(random);
      std::int64_t length = std::uniform_int_distribution<std::int64_t>(kMs, 700 * kMs)(random);
      original.push_back({worker, at, at + length});
      at += length;
    }
  }
  std::vector<Window> windows = original;
  Admission admission(e, fake_kv);
  std::vector<Batch> batches;
  int requests = 0;
  int rejected = 0;
  int arrival_ms = 0;
  for (; requests < 400; ++requests) {
    arrival_ms += std::uniform_int_distribution<int>(0, 90)(random);
    std::int64_t now = arrival_ms * kMs;
    admission.arrive(request(requests, now, std::uniform_int_distribution<int>(20, 9000)(random)));
    Admission::Decisions decisions = admission.schedule(now, windows);
    rejected += static_cast<int>(decisions.rejections.size());
    for (Batch& batch : decisions.batches) {
      check_chunks(e, batch);
      for (const Chunk& chunk : batch.chunks) {
        BOOST_TEST(chunk.start_ns >= now);
        bool inside = std::any_of(original.begin(), original.end(), [&](const Window& window) {
          return window.worker == chunk.worker && window.start_ns <= chunk.start_ns &&
                 chunk_end(chunk) <= window.end_ns - guard;
        });
        BOOST_TEST(inside);
      }
      BOOST_TEST(batch.predicted_first_token_ns - now <= static_cast<std::int64_t>(e.prefill.ttft_slo_ns));
      BOOST_TEST(batch.kv_bytes == kv_message_bytes(e, batch.tokens));
      BOOST_TEST((batch.tokens <= e.prefill.max_batch_tokens || batch.requests.size() == 1u));
      batches.push_back(std::move(batch));
    }
  }
  // Consumed time is not given twice: a worker's chunks never overlap.
  std::vector<Chunk> chunks;
  int admitted = 0;
  for (const Batch& batch : batches) {
    chunks.insert(chunks.end(), batch.chunks.begin(), batch.chunks.end());
    admitted += static_cast<int>(batch.requests.size());
  }
  std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) {
    return std::tie(a.worker, a.start_ns) < std::tie(b.worker, b.start_ns);
  });
  for (std::size_t i = 1; i < chunks.size(); ++i) {
    if (chunks[i].worker == chunks[i - 1].worker) BOOST_TEST(chunks[i].start_ns >= chunk_end(chunks[i - 1]));
  }
  BOOST_TEST(admitted + rejected + static_cast<int>(admission.waiting()) == requests);
  BOOST_TEST(admitted > 100);
  bool split = std::any_of(batches.begin(), batches.end(), [](const Batch& batch) { return batch.chunks.size() > 1; });
  BOOST_TEST(split);
}

BOOST_AUTO_TEST_CASE(a_request_that_cannot_meet_the_slo_is_rejected) {
  Experiment e = admission_experiment();
  e.prefill.ttft_slo_ns = 100 * kMs;
  Admission admission(e, fake_kv);
  std::vector<Window> none;
  admission.arrive(request(0, 0, 1024));  // 158 ms of prefill alone
  admission.arrive(request(1, 0, 128));   // 48 ms + 1.3 ms of KV
  Admission::Decisions first = admission.schedule(10 * kMs, none);
  BOOST_REQUIRE(first.rejections.size() == 1u);
  BOOST_TEST(first.rejections[0].request == 0);
  BOOST_TEST(first.rejections[0].reason == "TTFT SLO of 0.1 s cannot be met");
  BOOST_TEST(admission.waiting() == 1u);
  // A window too late for the SLO is not taken; the request waits, then goes.
  std::vector<Window> late{{0, 80 * kMs, 500 * kMs}};
  BOOST_TEST(admission.schedule(20 * kMs, late).batches.empty());
  BOOST_TEST(admission.waiting() == 1u);
  Admission::Decisions last = admission.schedule(60 * kMs, late);
  BOOST_REQUIRE(last.rejections.size() == 1u);
  BOOST_TEST(last.rejections[0].request == 1);
  BOOST_TEST(last.rejections[0].at_ns == 60 * kMs);
  BOOST_TEST(admission.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(layer_chunks_split_a_long_prefill_over_one_workers_windows) {
  Experiment e = admission_experiment();
  Admission admission(e, fake_kv);
  admission.arrive(request(0, 0, 2048));  // 308 ms over 80 layers
  std::vector<Window> windows{{2, 0, 110 * kMs},
                              {2, 200 * kMs, 310 * kMs},
                              {1, 250 * kMs, 300 * kMs},
                              {2, 400 * kMs, 510 * kMs},
                              {2, 600 * kMs, 710 * kMs}};
  Admission::Decisions decisions = admission.schedule(0, windows);
  BOOST_REQUIRE(decisions.batches.size() == 1u);
  const Batch& batch = decisions.batches[0];
  check_chunks(e, batch);
  BOOST_REQUIRE(batch.chunks.size() == 3u);
  for (const Chunk& chunk : batch.chunks) BOOST_TEST(chunk.worker == 2);
  // 105 ms of room each: 27 layers of 3.85 ms, 27 more, then the other 26.
  BOOST_TEST(batch.chunks[0].start_ns == 0);
  BOOST_TEST(batch.chunks[0].end_layer == 27);
  BOOST_TEST(batch.chunks[1].start_ns == 200 * kMs);
  BOOST_TEST(batch.chunks[1].end_layer == 54);
  BOOST_TEST(batch.chunks[2].start_ns == 400 * kMs);
  BOOST_TEST(batch.predicted_first_token_ns == chunk_end(batch.chunks[2]) + fake_kv(2, batch.kv_bytes));
  // The time is consumed: what is left of the third window starts after the chunk.
  BOOST_TEST(std::any_of(windows.begin(), windows.end(), [&](const Window& window) {
    return window.worker == 2 && window.start_ns == chunk_end(batch.chunks[2]) && window.end_ns == 510 * kMs;
  }));
}

BOOST_AUTO_TEST_CASE(a_window_that_holds_the_batch_is_preferred_to_a_split) {
  Experiment e = admission_experiment();
  Admission admission(e, fake_kv);
  admission.arrive(request(0, 0, 2048));
  std::vector<Window> windows{
      {2, 0, 110 * kMs}, {1, 150 * kMs, 600 * kMs}, {2, 200 * kMs, 310 * kMs}, {2, 400 * kMs, 510 * kMs}};
  Admission::Decisions decisions = admission.schedule(0, windows);
  BOOST_REQUIRE(decisions.batches.size() == 1u);
  BOOST_REQUIRE(decisions.batches[0].chunks.size() == 1u);
  BOOST_TEST(decisions.batches[0].chunks[0].worker == 1);
  BOOST_TEST(decisions.batches[0].chunks[0].start_ns == 150 * kMs);
}

BOOST_AUTO_TEST_CASE(the_earliest_first_token_wins_kv_time_included) {
  Experiment e = admission_experiment();
  Admission admission(e, [](int worker, std::uint64_t) { return worker == 0 ? 500 * kMs : kMs; });
  admission.arrive(request(0, 0, 128));
  std::vector<Window> windows{{0, 0, 1000 * kMs}, {3, 100 * kMs, 1000 * kMs}};
  Admission::Decisions decisions = admission.schedule(0, windows);
  BOOST_REQUIRE(decisions.batches.size() == 1u);
  BOOST_TEST(decisions.batches[0].chunks[0].worker == 3);
  BOOST_TEST(decisions.batches[0].predicted_first_token_ns == 100 * kMs + 48 * kMs + kMs);
}

BOOST_AUTO_TEST_CASE(fifo_batches_up_to_max_batch_tokens_and_a_long_prompt_alone) {
  Experiment e = admission_experiment();
  Admission admission(e, fake_kv);
  admission.arrive(request(0, 0, 3000));
  admission.arrive(request(1, 0, 3000));
  admission.arrive(request(2, 0, 3000));
  admission.arrive(request(3, 0, 10000));
  std::vector<Window> windows{{0, 0, 2000 * kMs}, {1, 0, 2000 * kMs}, {2, 0, 2000 * kMs}, {3, 0, 2000 * kMs}};
  Admission::Decisions decisions = admission.schedule(0, windows);
  BOOST_REQUIRE(decisions.batches.size() == 3u);
  BOOST_TEST(decisions.batches[0].requests == (std::vector<int>{0, 1}));
  BOOST_TEST(decisions.batches[0].tokens == 6000);
  BOOST_TEST(decisions.batches[1].requests == (std::vector<int>{2}));
  BOOST_TEST(decisions.batches[2].requests == (std::vector<int>{3}));
  BOOST_TEST(decisions.batches[0].id == 0);
  BOOST_TEST(decisions.batches[2].id == 2);
}

BOOST_AUTO_TEST_CASE(a_batch_too_big_for_the_windows_shrinks_to_what_fits) {
  Experiment e = admission_experiment();
  Admission admission(e, fake_kv);
  for (int id = 0; id < 8; ++id) admission.arrive(request(id, 0, 1024));
  // One window of 700 ms (one layer of 8192 tokens takes 16.7 ms; the window
  // cannot hold all 8 requests' 1339 ms) on a single worker.
  std::vector<Window> windows{{0, 0, 705 * kMs}};
  Admission::Decisions decisions = admission.schedule(0, windows);
  BOOST_REQUIRE(!decisions.batches.empty());
  BOOST_TEST(decisions.batches[0].requests.size() == 4u);  // 4096 tokens: 642 ms; 5 would take 809
}

BOOST_AUTO_TEST_CASE(thousands_of_requests_over_thousands_of_windows_stay_fast) {
  Experiment e = admission_experiment();
  e.parallel.pp = 8;
  e.parallel.dp = 4;
  std::mt19937_64 random(7);
  std::vector<Window> windows;
  for (int worker = 0; worker < 32; ++worker) {
    for (std::int64_t at = 0; at < 60'000 * kMs;) {
      at += std::uniform_int_distribution<std::int64_t>(10 * kMs, 100 * kMs)(random);
      std::int64_t length = std::uniform_int_distribution<std::int64_t>(kMs, 300 * kMs)(random);
      windows.push_back({worker, at, at + length});
      at += length;
    }
  }
  std::size_t window_count = windows.size();
  Admission admission(e, fake_kv);
  auto began = std::chrono::steady_clock::now();
  int batches = 0;
  for (int id = 0; id < 5000; ++id) {
    std::int64_t now = id * 12 * kMs;
    admission.arrive(request(id, now, std::uniform_int_distribution<int>(50, 4000)(random)));
    batches += static_cast<int>(admission.schedule(now, windows).batches.size());
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  BOOST_TEST_MESSAGE("admission: 5000 requests over " << window_count << " windows of 32 workers: " << batches
                                                      << " batches in " << seconds << " s");
  BOOST_TEST(batches > 500);
  BOOST_TEST(seconds < 20.0);  // a generous bound: it takes well under a second
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(simulator_with_prefill)

namespace {

// 1F1B (or another schedule) over the three DCs with 100/200 ms compute,
// Poisson requests at `rate` per second, decode in b.
Experiment bubbletea(const std::string& top_level, double rate) {
  Experiment e = experiment(top_level, 4, 1, 8, 100, 200);
  enable_prefill(e);
  if (rate > 0) e.prefill.arrivals = ArrivalProcess{rate, 600, 2000, 3};
  return e;
}

// Iterations that repeat exactly (no TCP dynamics), so that the simulator's
// bubble predictions hold and what is checked is the prefill's own accounting.
RunRecord run(const Experiment& e, int iterations = 4) {
  auto scenario = three_dcs();
  return simulate(make_plan(e, scenario), scenario, harness_test::steady_links(scenario), iterations);
}

bool overlaps(std::int64_t a_start, std::int64_t a_end, std::int64_t b_start, std::int64_t b_end) {
  return a_start < b_end && b_start < a_end;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_span_lies_in_a_training_idle_interval_of_its_gpu) {
  RunRecord record = run(bubbletea("schedule = \"1f1b\"", 8));
  BOOST_REQUIRE(record.prefill.has_value());
  BOOST_REQUIRE(!record.prefill->spans.empty());
  for (const PrefillSpan& span : record.prefill->spans) {
    BOOST_TEST(span.end_ns > span.start_ns);
    BOOST_TEST(span.start_ns >= record.iteration_start_ns.front());
    BOOST_TEST(span.end_ns <= record.iteration_end_ns.back());
    for (const Event& event : record.events) {
      if (event.worker != span.worker || (event.kind != OpKind::forward && event.kind != OpKind::backward)) continue;
      BOOST_TEST(!overlaps(span.start_ns, span.end_ns, event.start_ns, event.end_ns));
    }
    for (const PrefillSpan& other : record.prefill->spans) {
      if (&other != &span && other.worker == span.worker) {
        BOOST_TEST(!overlaps(span.start_ns, span.end_ns, other.start_ns, other.end_ns));
      }
    }
  }
  for (std::int64_t delay : record.prefill->training_delay_ns) BOOST_TEST(delay == 0);
  BOOST_TEST(record.prefill->training_delay_ns.size() == 4u);
}

BOOST_AUTO_TEST_CASE(utilization_is_busy_over_wall) {
  RunRecord record = run(bubbletea("schedule = \"1f1b\"", 8));
  PrefillSummary summary = summarize_prefill(record);
  std::size_t iterations = record.iteration_start_ns.size();
  BOOST_REQUIRE(summary.gpu_utilization.size() == 4u);
  for (int worker = 0; worker < 4; ++worker) {
    double sum = 0;
    for (std::size_t i = 1; i < iterations; ++i) {
      std::int64_t start = record.iteration_start_ns[i];
      std::int64_t end = record.iteration_end_ns[i];
      double busy = 0;
      for (const Event& event : record.events) {
        bool compute = event.kind == OpKind::forward || event.kind == OpKind::backward;
        if (compute && event.worker == worker && event.iteration == static_cast<int>(i)) {
          busy += static_cast<double>(event.end_ns - event.start_ns);
        }
      }
      for (const PrefillSpan& span : record.prefill->spans) {
        if (span.worker != worker) continue;
        busy +=
            static_cast<double>(std::max<std::int64_t>(0, std::min(span.end_ns, end) - std::max(span.start_ns, start)));
      }
      sum += busy / static_cast<double>(end - start);
    }
    BOOST_TEST(summary.gpu_utilization[static_cast<std::size_t>(worker)] == sum / static_cast<double>(iterations - 1),
               boost::test_tools::tolerance(1e-9));
  }
  BOOST_TEST(summary.mean_training_utilization == summarize_run(summarize(record)).mean_gpu_utilization,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST_MESSAGE("1F1B p = 4 with 8 requests/s: utilization " << summary.mean_training_utilization << " -> "
                                                                  << summary.mean_gpu_utilization << ", served "
                                                                  << summary.served << " of " << summary.requests);
  BOOST_TEST(summary.mean_gpu_utilization > summary.mean_training_utilization + 0.05);
  for (std::size_t worker = 0; worker < 4; ++worker) BOOST_TEST(summary.gpu_utilization[worker] <= 1.0 + 1e-12);
}

BOOST_AUTO_TEST_CASE(requests_are_accounted_for_and_served_ttft_is_the_kv_arrival) {
  RunRecord record = run(bubbletea("schedule = \"1f1b\"", 8));
  const PrefillRecord& prefill = *record.prefill;
  PrefillSummary summary = summarize_prefill(record);
  BOOST_TEST(summary.requests == static_cast<int>(prefill.requests.size()));
  BOOST_TEST(summary.served + summary.rejected + summary.failed + summary.unfinished == summary.requests);
  BOOST_TEST(summary.served > 10);
  BOOST_TEST(summary.failed == 0);  // the simulator's iterations repeat: predictions hold
  std::vector<double> ttft;
  for (const RequestOutcome& outcome : prefill.requests) {
    BOOST_TEST(outcome.id == static_cast<int>(&outcome - prefill.requests.data()));
    if (outcome.state != RequestState::served) continue;
    auto transfer = std::find_if(prefill.kv.begin(), prefill.kv.end(),
                                 [&](const KvTransfer& kv) { return kv.batch == outcome.batch; });
    BOOST_REQUIRE(transfer != prefill.kv.end());
    BOOST_TEST(outcome.first_token_ns == transfer->end_ns);
    for (const PrefillSpan& span : prefill.spans) {
      if (span.batch == outcome.batch) BOOST_TEST(transfer->start_ns >= span.end_ns);
    }
    ttft.push_back(static_cast<double>(outcome.first_token_ns - outcome.arrival_ns) / 1e9);
  }
  BOOST_REQUIRE(summary.ttft_p50_s.has_value());
  BOOST_TEST(*summary.ttft_p50_s == wanlab::base::percentile(ttft, 50), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(summary.ttft_p99_s.value_or(99) <= 3.0 + 0.2);  // within the SLO, but for the transfer's estimate
  BOOST_TEST(summary.prefill_tokens_per_s > 0);
  BOOST_TEST(to_string(RequestState::served) == "served");
  BOOST_TEST(to_string(RequestState::unfinished) == "unfinished");
  BOOST_TEST(prefill.prediction.size() > 0u);
  BOOST_TEST(summary.prediction_error_s.start_p90 < 1e-6);
}

// Decode in c, the pipeline's second DC: the KV caches of a's stages share
// a->c with the activations; c's stay in the DC. A cache goes only while
// training's sends leave a->c free, pausing while they hold it: it neither
// starts nor ends inside one, and the free time between its start and end is
// its wire time at the link's rate.
BOOST_AUTO_TEST_CASE(kv_caches_take_the_wan_link_only_between_training_sends) {
  Experiment e = bubbletea("schedule = \"atlas\"\nplacement = [\"a\", \"a\", \"c\", \"c\"]", 8);
  e.prefill.decode_dc = "c";
  BOOST_REQUIRE(e.temporal_sharing);
  auto scenario = three_dcs();
  RunRecord record = run(e);
  std::vector<KvTransfer> cross;
  int inside = 0;
  for (const KvTransfer& kv : record.prefill->kv) {
    if (!kv.link.empty()) cross.push_back(kv);
    inside += kv.link.empty() ? 1 : 0;
  }
  BOOST_REQUIRE(!cross.empty());
  BOOST_TEST(inside > 0);
  PrefillSummary summary = summarize_prefill(record);
  BOOST_REQUIRE(summary.kv_bytes.size() == 1u);
  BOOST_TEST(summary.kv_bytes[0].first == "a->c");
  int a = scenario.dc_index("a");
  int c = scenario.dc_index("c");
  auto delay = static_cast<std::int64_t>(scenario.pair(a, c).delay_ns);
  // a->c's rate at the experiment's scale, as one transfer alone gets it: the steady links' rate.
  const double rate_bps = static_cast<double>(scenario.pair(a, c).rate_bps) * e.scale;
  std::vector<std::pair<std::int64_t, std::int64_t>> training;  // sorted by start
  for (const Event& event : record.events) {
    if (event.kind != OpKind::send || !event.cross_dc) continue;
    if (record.plan.workers[static_cast<std::size_t>(event.worker)].worker.dc != a) continue;
    training.emplace_back(event.start_ns, event.end_ns - delay);
  }
  BOOST_REQUIRE(!training.empty());
  std::sort(training.begin(), training.end());
  int paused = 0;
  for (const KvTransfer& kv : cross) {
    const std::int64_t end = kv.end_ns - delay;
    BOOST_TEST(end > kv.start_ns);
    for (const KvTransfer& other : cross) {
      if (&other != &kv) BOOST_TEST(!overlaps(kv.start_ns, end, other.start_ns, other.end_ns - delay));
    }
    std::int64_t held = 0, covered_to = kv.start_ns;  // training's time on the link inside [start, end)
    for (const auto& [from, to] : training) {
      BOOST_TEST(!(from < kv.start_ns && kv.start_ns < to));  // never begins inside a training send
      BOOST_TEST(!(from < end && end < to));                  // nor ends inside one
      const std::int64_t lo = std::max(from, covered_to), hi = std::min(to, end);
      if (hi > lo) {
        held += hi - lo;
        covered_to = hi;
      }
    }
    paused += held > 0 ? 1 : 0;
    const double wire_ns = static_cast<double>(kv.bytes) * 8e9 / rate_bps;
    BOOST_TEST(static_cast<double>(end - kv.start_ns - held) == wire_ns, boost::test_tools::tolerance(1e-6));
  }
  BOOST_TEST_MESSAGE(paused << " of " << cross.size() << " caches paused for training's sends");
}

// Without temporal sharing a cache leaves as soon as its prefill has ended
// and its worker's earlier cache has left the channel.
BOOST_AUTO_TEST_CASE(without_temporal_sharing_the_kv_cache_leaves_at_once) {
  Experiment e = bubbletea("schedule = \"1f1b\"\nplacement = [\"a\", \"a\", \"c\", \"c\"]", 8);
  BOOST_REQUIRE(!e.temporal_sharing);
  auto scenario = three_dcs();
  RunRecord record = run(e);
  KvRoutes routes(record.plan, scenario, harness_test::steady_links(scenario));
  std::map<int, std::int64_t> channel_free;          // per worker
  for (const KvTransfer& kv : record.prefill->kv) {  // in placement order
    std::int64_t last = 0;
    for (const PrefillSpan& span : record.prefill->spans) {
      if (span.batch == kv.batch) last = std::max(last, span.end_ns);
    }
    const auto free = channel_free.find(kv.worker);
    BOOST_TEST(kv.start_ns == std::max(last, free == channel_free.end() ? last : free->second));
    channel_free[kv.worker] = kv.end_ns - routes.route(kv.worker).delay_ns;
  }
}

// Admission's estimate for a cache counts the caches placed before it on its
// route, never a later one: on each queue (a DC's own link, shared by its
// hosts' workers, or a worker's loopback) caches leave in placement order,
// even where a later-placed batch's prefill ended first.
BOOST_AUTO_TEST_CASE(kv_caches_leave_each_queue_in_placement_order) {
  Experiment e = bubbletea("schedule = \"atlas\"\nplacement = [\"a\", \"a\", \"c\", \"c\"]", 40);
  e.prefill.decode_dc = "local";
  auto scenario = three_dcs();
  RunRecord record = run(e);
  KvRoutes routes(record.plan, scenario, harness_test::steady_links(scenario));
  std::map<int, std::int64_t> prefill_end;  // per batch
  for (const PrefillSpan& span : record.prefill->spans)
    prefill_end[span.batch] = std::max(prefill_end[span.batch], span.end_ns);
  std::vector<KvTransfer> kv = record.prefill->kv;
  std::sort(kv.begin(), kv.end(), [](const KvTransfer& a, const KvTransfer& b) { return a.batch < b.batch; });
  BOOST_REQUIRE(kv.size() > 10u);
  int ended_out_of_order = 0;
  for (std::size_t i = 0; i < kv.size(); ++i) {
    BOOST_TEST(kv[i].start_ns >= prefill_end.at(kv[i].batch));
    for (std::size_t j = i + 1; j < kv.size(); ++j) {
      if (!routes.same_queue(kv[i].worker, kv[j].worker)) continue;
      BOOST_TEST(kv[j].start_ns >= kv[i].start_ns, "b" << kv[j].batch << " left before b" << kv[i].batch);
      if (prefill_end.at(kv[j].batch) < prefill_end.at(kv[i].batch)) ++ended_out_of_order;
    }
  }
  BOOST_TEST_MESSAGE(ended_out_of_order << " pairs on one queue whose prefill ended out of placement order");
  BOOST_TEST(ended_out_of_order > 0);  // the case the order is for occurs here
}

BOOST_AUTO_TEST_CASE(no_requests_change_nothing) {
  Experiment off = bubbletea("schedule = \"1f1b\"", 0);
  off.prefill.enabled = false;
  Experiment on = bubbletea("schedule = \"1f1b\"", 0);
  RunRecord without = run(off);
  RunRecord with = run(on);
  BOOST_TEST(!without.prefill.has_value());
  BOOST_REQUIRE(with.prefill.has_value());
  BOOST_TEST(with.prefill->spans.empty());
  BOOST_TEST(with.prefill->requests.empty());
  BOOST_TEST(with.iteration_end_ns == without.iteration_end_ns);
  BOOST_REQUIRE(with.events.size() == without.events.size());
  for (std::size_t i = 0; i < with.events.size(); ++i) {
    BOOST_TEST(with.events[i].start_ns == without.events[i].start_ns);
    BOOST_TEST(with.events[i].end_ns == without.events[i].end_ns);
  }
  PrefillSummary summary = summarize_prefill(with);
  BOOST_TEST(summary.mean_gpu_utilization == summary.mean_training_utilization, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(summary.requests == 0);
  // Nothing served: no TTFT, not a perfect-looking 0 s.
  BOOST_TEST(!summary.ttft_p50_s.has_value());
  BOOST_TEST(!summary.ttft_p99_s.has_value());
}

// Each error counts as a share of its own predicted bubble: 5 ms off a 10 ms
// bubble is half of it, 5 ms off a 1 s bubble nothing to speak of.
BOOST_AUTO_TEST_CASE(prediction_errors_are_reported_relative_to_the_predicted_bubble) {
  RunRecord record = run(bubbletea("schedule = \"1f1b\"", 0));
  BOOST_REQUIRE(record.prefill.has_value());
  record.prefill->prediction = {
      {0, 1, 5'000'000, -2'000'000, 10'000'000},    // start 0.5, length 0.2 of the bubble
      {1, 1, -5'000'000, 0, 1'000'000'000},         // 0.005, 0
      {2, 1, 10'000'000, 50'000'000, 100'000'000},  // 0.1, 0.5
      {3, 1, 0, 0, 0},                              // no predicted length: not counted
  };
  const PrefillSummary summary = summarize_prefill(record);
  BOOST_TEST(summary.prediction_error_relative.start_p50 == 0.1, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(summary.prediction_error_relative.length_p50 == 0.2, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(summary.prediction_error_relative.start_p90 > 0.1);
  BOOST_TEST(summary.prediction_error_relative.start_p90 <= 0.5);
  BOOST_TEST(summary.prediction_error_s.start_p50 == 0.005, boost::test_tools::tolerance(1e-12));  // absolute, all four
}

BOOST_AUTO_TEST_CASE(an_unknown_decode_dc_is_an_error) {
  Experiment e = bubbletea("schedule = \"1f1b\"", 1);
  e.prefill.decode_dc = "mars";
  BOOST_TEST(harness_test::error_of([&] { run(e); }).find("prefill.decode_dc: unknown DC \"mars\"") !=
             std::string::npos);
}

// decode_dc = "local": every cache stays in its worker's DC; the caches of a
// DC's other hosts take turns on its own link, one at a time.
BOOST_AUTO_TEST_CASE(local_decode_keeps_every_kv_cache_inside_its_dc) {
  Experiment e = bubbletea("schedule = \"atlas\"\nplacement = [\"a\", \"a\", \"c\", \"c\"]", 8);
  e.prefill.decode_dc = "local";
  RunRecord record = run(e);
  PrefillSummary summary = summarize_prefill(record);
  BOOST_TEST(summary.served > 0);
  BOOST_TEST(summary.kv_bytes.empty());  // no WAN link carried a cache
  std::vector<KvTransfer> on_links;
  auto scenario = three_dcs();
  for (const KvTransfer& kv : record.prefill->kv) {
    BOOST_TEST(kv.link.empty());
    const Worker& from = record.plan.workers[static_cast<std::size_t>(kv.worker)].worker;
    if (from.host != decode_host_name(scenario, from.dc)) on_links.push_back(kv);
  }
  BOOST_REQUIRE(!on_links.empty());
  KvRoutes routes(record.plan, scenario, harness_test::steady_links(scenario));
  routes.leave_to_training(record);
  BOOST_TEST(routes.dc_lead_ns(0) > 0);
  int training_sends = 0;
  for (const KvTransfer& kv : on_links) {
    const int dc = record.plan.workers[static_cast<std::size_t>(kv.worker)].worker.dc;
    const auto delay = static_cast<std::int64_t>(scenario.pair(dc, dc).delay_ns);
    for (const KvTransfer& other : on_links) {
      const int other_dc = record.plan.workers[static_cast<std::size_t>(other.worker)].worker.dc;
      if (&other == &kv || dc != other_dc) continue;
      BOOST_TEST(!overlaps(kv.start_ns, kv.end_ns - delay, other.start_ns, other.end_ns - delay));
    }
    // Training's sends between the DC's hosts hold its link from the
    // announcement, two KV pieces ahead: a cache neither begins nor ends inside one.
    for (const Event& event : record.events) {
      if (event.kind != OpKind::send || event.cross_dc) continue;
      const Worker& from = record.plan.workers[static_cast<std::size_t>(event.worker)].worker;
      const Worker& to = record.plan.workers[static_cast<std::size_t>(event.peer)].worker;
      if (from.dc != dc || from.host == to.host) continue;
      ++training_sends;
      const std::int64_t held_from = event.start_ns - routes.dc_lead_ns(dc), held_to = event.end_ns - delay;
      BOOST_TEST(!(held_from < kv.start_ns && kv.start_ns < held_to));
      BOOST_TEST(!(held_from < kv.end_ns - delay && kv.end_ns - delay < held_to));
    }
  }
  BOOST_TEST(training_sends > 0);
}

BOOST_AUTO_TEST_CASE(local_is_refused_where_a_dc_has_that_name) {
  std::string text = harness_test::kThreeDcScenario;
  for (std::size_t at = text.find("\"c\""); at != std::string::npos; at = text.find("\"c\"", at))
    text.replace(at, 3, "\"local\"");
  auto scenario = wanlab::emulator::parse_scenario(text, "t3.toml");
  Experiment e = bubbletea("schedule = \"1f1b\"", 1);
  e.prefill.decode_dc = "local";
  BOOST_TEST(harness_test::error_of([&] { make_plan(e, scenario); }).find("the testbed also has a DC of that name") !=
             std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kv_routes)

// Atlas on a, a, c, c with two hosts per DC, decode in each worker's own DC.
Experiment local_decode_experiment() {
  Experiment e = experiment("schedule = \"atlas\"\nplacement = [\"a\", \"a\", \"c\", \"c\"]", 4, 2, 8, 100, 200);
  enable_prefill(e);
  e.prefill.decode_dc = "local";
  return e;
}

std::vector<int> workers_on(const Plan& plan, const std::string& host) {
  std::vector<int> ids;
  for (std::size_t w = 0; w < plan.workers.size(); ++w)
    if (plan.workers[w].worker.host == host) ids.push_back(static_cast<int>(w));
  return ids;
}

// Atlas on a, a, c, c with two hosts per DC: with decode_dc = "local" the
// workers on a DC's first host (its decode host) send over their own NVLink
// (tp x [prefill] intra_host_rate x scale, no delay, a queue each), the
// others over their DC's own link (10 Gbit/s, 50 us), which they share.
BOOST_AUTO_TEST_CASE(local_decode_routes_stay_in_the_workers_dc) {
  const Experiment e = local_decode_experiment();
  auto scenario = three_dcs();
  Plan plan = make_plan(e, scenario);
  KvRoutes routes(plan, scenario, harness_test::steady_links(scenario));  // the link's rate, no frame overhead
  const int dcs = static_cast<int>(scenario.dcs.size());
  int on_host = 0;
  int on_dc_link = 0;
  for (std::size_t w = 0; w < plan.workers.size(); ++w) {
    const Worker& worker = plan.workers[w].worker;
    const KvRoutes::Route& route = routes.route(static_cast<int>(w));
    BOOST_TEST(decode_dc_of(e, scenario, worker.dc) == worker.dc);
    BOOST_TEST(route.link.empty());
    if (worker.host == decode_host_name(scenario, worker.dc)) {
      BOOST_TEST(route.rate_bps == e.parallel.tp * 3600e9 * e.scale);
      BOOST_TEST(route.link_index == -1);
      BOOST_TEST(route.delay_ns == 0);
      ++on_host;
    } else {
      BOOST_TEST(route.link_index == worker.dc * dcs + worker.dc);
      BOOST_TEST(route.rate_bps == 10e9);
      BOOST_TEST(route.delay_ns == 50'000);
      ++on_dc_link;
    }
  }
  BOOST_TEST(on_host > 0);
  BOOST_TEST(on_dc_link > 0);
  // Two workers on a's second host: a cache of one waits for the other's.
  const std::vector<int> second_host = workers_on(plan, "a-1");
  BOOST_REQUIRE(second_host.size() >= 2u);
  const std::uint64_t bytes = 12'500'000;  // 10 ms at 10 Gbit/s
  routes.queue(second_host[0], 0, bytes);
  BOOST_TEST(routes.estimate_ns(second_host[1], bytes, 0) == 50'000 + 20 * kMs);
  // Two workers on a's decode host: each has its own NVLink, so neither waits for the other.
  const std::vector<int> decode_host = workers_on(plan, "a-0");
  BOOST_REQUIRE(decode_host.size() >= 2u);
  const auto nvlink_ns = routes.route(decode_host[0]).wire_ns(bytes);
  BOOST_TEST(nvlink_ns == std::llround(bytes * 8e9 / (e.parallel.tp * 3600e9 * e.scale)));
  routes.queue(decode_host[0], 0, bytes);
  BOOST_TEST(routes.estimate_ns(decode_host[1], bytes, 0) == nvlink_ns);
  BOOST_TEST(routes.estimate_ns(decode_host[0], bytes, 0) == 2 * nvlink_ns);

  // Training's sends between a's hosts take part of its link; admission's
  // estimate stretches a cache's wire time by the share they leave.
  const RunRecord training = simulate_training(plan, scenario, harness_test::steady_links(scenario), 1);
  KvRoutes shared(plan, scenario, harness_test::steady_links(scenario));
  shared.leave_to_training(training);
  const auto busy = shared.training_busy(training);
  const int a_link = scenario.dc_index("a") * dcs + scenario.dc_index("a");
  BOOST_REQUIRE(busy.count(a_link) == 1u);
  const double share = shared.route(second_host[0]).share;
  BOOST_TEST(share < 1.0);
  BOOST_TEST(share > 0.5);
  BOOST_TEST(shared.estimate_ns(second_host[0], bytes, 0) ==
             50'000 + static_cast<std::int64_t>(std::llround(10.0 * kMs / share)));
  for (std::size_t w = 0; w < plan.workers.size(); ++w)
    if (plan.workers[w].worker.host == decode_host_name(scenario, plan.workers[w].worker.dc))
      BOOST_TEST(shared.route(static_cast<int>(w)).share == 1.0);  // NVLink: no link to share
}

// KV pieces on a DC's own link are sized from the experiment itself: every
// send between two of the DC's hosts may find two pieces ahead of it, and
// those may cost training kKvCostOfIteration of the iteration; its sends are
// announced two pieces' wire time ahead. A DC with more such sends gets
// smaller pieces, a longer iteration larger ones.
BOOST_AUTO_TEST_CASE(dc_link_pieces_and_the_announce_lead_come_from_the_iteration) {
  auto scenario = three_dcs();
  auto sized = [&](const Experiment& e) {
    Plan plan = make_plan(e, scenario);
    const RunRecord training = simulate_training(plan, scenario, harness_test::steady_links(scenario), 1);
    KvRoutes routes(plan, scenario, harness_test::steady_links(scenario));
    routes.leave_to_training(training);
    const int a = scenario.dc_index("a");
    int sends = 0;
    for (const WorkerPlan& w : plan.workers)
      for (const Op& op : w.ops) {
        const Worker& to = plan.workers[static_cast<std::size_t>(std::max(0, op.peer))].worker;
        sends += op.kind == OpKind::send && w.worker.dc == a && to.dc == a && to.host != w.worker.host;
      }
    const int worker = workers_on(plan, "a-1").at(0);
    const std::uint64_t piece = routes.route(worker).piece_bytes;
    BOOST_TEST_REQUIRE(sends > 0);
    // 2 x piece x sends = 1% of the iteration, at the link's rate (10 Gbit/s).
    const double budget_s = KvRoutes::kKvCostOfIteration * static_cast<double>(first_iteration_ns(training)) / 1e9;
    BOOST_TEST(piece == static_cast<std::uint64_t>(10e9 / 8 * budget_s / (2.0 * sends)));
    BOOST_TEST(routes.dc_lead_ns(a) == 2 * routes.route(worker).wire_ns(piece));
    BOOST_TEST(routes.dc_lead_ns(scenario.dc_index("b")) == 0);  // no stage there: no caches cross its link
    return std::pair{piece, sends};
  };
  Experiment e = local_decode_experiment();
  const auto [piece, sends] = sized(e);
  e.model.microbatches *= 2;  // twice the sends, a longer iteration
  const auto [more_piece, more_sends] = sized(e);
  BOOST_TEST(more_sends == 2 * sends);
  BOOST_TEST(more_piece < piece);
}

// A cache that came late raises its route's estimates by its lateness for
// one TTFT SLO, then no more: a route refused every request gets no cache to
// learn from, and must not stay refused for the rest of the run.
BOOST_AUTO_TEST_CASE(a_late_cache_raises_its_routes_estimates_for_one_slo) {
  const Experiment e = local_decode_experiment();
  auto scenario = three_dcs();
  Plan plan = make_plan(e, scenario);
  KvRoutes routes(plan, scenario, harness_test::steady_links(scenario));
  const std::vector<int> second_host = workers_on(plan, "a-1");
  BOOST_REQUIRE(second_host.size() >= 2u);
  const std::uint64_t bytes = 12'500'000;  // 10 ms at 10 Gbit/s
  const std::int64_t slo = static_cast<std::int64_t>(e.prefill.ttft_slo_ns);
  const std::int64_t alone = routes.estimate_ns(second_host[0], bytes, 0);
  routes.observe_lateness(second_host[0], 2'000 * kMs, 1'000 * kMs);  // at 1 s, 2 s late
  BOOST_TEST(routes.margin_ns(second_host[0], 1'500 * kMs) == 2'000 * kMs);
  BOOST_TEST(routes.estimate_ns(second_host[1], bytes, 1'500 * kMs) == alone + 2'000 * kMs);  // one route
  BOOST_TEST(routes.margin_ns(second_host[0], 1'000 * kMs + slo) == 2'000 * kMs);
  BOOST_TEST(routes.margin_ns(second_host[0], 1'000 * kMs + slo + 1) == 0);
  BOOST_TEST(routes.estimate_ns(second_host[0], bytes, 1'000 * kMs + slo + 1) == alone);
  // An early cache is no margin.
  routes.observe_lateness(second_host[0], -5 * kMs, 5'000 * kMs);
  BOOST_TEST(routes.margin_ns(second_host[0], 5'000 * kMs) == 0);
}

// The margin is the lateness that at most 1% of the route's caches within one
// SLO exceeded: the largest of fewer than 100, the second largest of 100-199.
BOOST_AUTO_TEST_CASE(a_routes_margin_lets_one_cache_in_a_hundred_come_later) {
  const Experiment e = local_decode_experiment();
  auto scenario = three_dcs();
  Plan plan = make_plan(e, scenario);
  KvRoutes routes(plan, scenario, harness_test::steady_links(scenario));
  const int worker = workers_on(plan, "a-1").at(0);
  const std::int64_t slo = static_cast<std::int64_t>(e.prefill.ttft_slo_ns);
  const std::int64_t at = 10 * slo;
  // A cache `late_ns` after an estimate without the margin: after the estimate with it.
  const auto arrives = [&](std::int64_t late_ns) {
    routes.observe_lateness(worker, late_ns - routes.margin_ns(worker, at), at);
  };
  // 99 caches 1-99 ms late, then one 500 ms late, all within one SLO.
  for (int i = 1; i < 100; ++i) arrives(i * kMs);
  BOOST_TEST(routes.margin_ns(worker, at) == 99 * kMs);
  arrives(500 * kMs);
  BOOST_TEST(routes.margin_ns(worker, at) == 99 * kMs);  // 1 of 100 may be later
  arrives(700 * kMs);
  BOOST_TEST(routes.margin_ns(worker, at) == 500 * kMs);  // 2 of 101 may not
  // A sample older than one SLO no longer counts, and leaves the window with the next one.
  routes.observe_lateness(worker, -slo, at + slo + 1);
  BOOST_TEST(routes.margin_ns(worker, at + slo + 1) == 0);
}

// Batches placed in one schedule() call queue behind each other on a route
// they share: the estimate of each counts the caches placed before it in the
// same call. It did not (the demo, 2026-12-02): two caches placed together on
// a DC's own link were each estimated on a free link, and the second came
// 0.7 s after its predicted end.
BOOST_AUTO_TEST_CASE(batches_placed_together_queue_behind_each_other) {
  Experiment e = local_decode_experiment();
  e.prefill.max_batch_tokens = 1024;  // each request a batch of its own
  auto scenario = three_dcs();
  Plan plan = make_plan(e, scenario);
  KvRoutes routes(plan, scenario, harness_test::steady_links(scenario));
  const std::vector<int> second_host = workers_on(plan, "a-1");
  BOOST_REQUIRE(second_host.size() == 2u);
  Admission admission(
      e, [&](int worker, std::uint64_t bytes) { return routes.estimate_ns(worker, bytes, 0); },
      [&](int worker, std::int64_t ready_ns, std::uint64_t bytes) { routes.queue(worker, ready_ns, bytes); });
  // A window on each worker of the DC's second host: their caches share its link.
  std::vector<Window> windows;
  for (const int worker : second_host) windows.push_back({worker, 0, 2000 * kMs});
  admission.arrive(request(0, 0, 1024));
  admission.arrive(request(1, 0, 1024));
  const Admission::Decisions decisions = admission.schedule(0, windows);
  BOOST_REQUIRE(decisions.batches.size() == 2u);
  const Batch& first = decisions.batches[0];
  const Batch& second = decisions.batches[1];
  BOOST_TEST(routes.same_queue(first.chunks.back().worker, second.chunks.back().worker));
  const std::int64_t wire = routes.wire_ns(second.chunks.back().worker, second.kv_bytes);
  BOOST_TEST(wire > 0);
  BOOST_TEST(second.predicted_first_token_ns >= first.predicted_first_token_ns + wire);
}

// Worker 0 holds stage 0 in a; the decode DC is b, 10 ms and 1 Gbit/s away.
// 1F1B has no temporal sharing, so a KV cache gets half the link: 0.5 Gbit/s.
BOOST_AUTO_TEST_CASE(estimates_count_delay_wire_time_the_queue_and_what_was_measured) {
  Experiment e = experiment("schedule = \"1f1b\"", 4, 1, 8, 100, 200);
  enable_prefill(e);
  auto scenario = three_dcs();
  KvRoutes routes(make_plan(e, scenario), scenario, harness_test::steady_links(scenario));
  const KvRoutes::Route& route = routes.route(0);
  BOOST_TEST(route.link == "a->b");
  BOOST_TEST(route.delay_ns == 10 * kMs);
  BOOST_TEST(route.rate_bps == 0.5e9);
  const std::uint64_t bytes = 12'500'000;  // 200 ms at 0.5 Gbit/s
  BOOST_TEST(routes.estimate_ns(0, bytes, 0) == 210 * kMs);
  // A cache queued ahead, ready at 0: a new one waits for it until it has left.
  routes.queue(0, 0, bytes);
  BOOST_TEST(routes.estimate_ns(0, bytes, 0) == 410 * kMs);
  BOOST_TEST(routes.estimate_ns(0, bytes, 150 * kMs) == 260 * kMs);
  BOOST_TEST(routes.estimate_ns(0, bytes, 1000 * kMs) == 210 * kMs);
  // Measured three times slower than the model: estimates stretch the wire time.
  routes.observe(0, bytes, 10 * kMs + 600 * kMs);
  BOOST_TEST(routes.slowdown(0) == 3.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(routes.estimate_ns(0, bytes, 1000 * kMs) == 610 * kMs);
  // Faster than the model moves the average down, never below 1.
  for (int i = 0; i < 50; ++i) routes.observe(0, bytes, 10 * kMs);
  BOOST_TEST(routes.slowdown(0) == 1.0, boost::test_tools::tolerance(1e-6));
  // Stage 3 is in a too (a, b, c, a): its route is the same link, with the same queue and measurements.
  BOOST_TEST_REQUIRE(routes.route(3).link == "a->b");
  routes.observe(3, bytes, 10 * kMs + 400 * kMs);
  BOOST_TEST(routes.slowdown(0) == routes.slowdown(3));
  BOOST_TEST(routes.slowdown(0) > 1.0);
}

// Placements add up each cache at the wire time known then; once the route
// is measured slower, the queue starts again from what still waits.
BOOST_AUTO_TEST_CASE(a_requeue_counts_what_waits_at_the_wire_time_learned_since) {
  Experiment e = experiment("schedule = \"1f1b\"", 4, 1, 8, 100, 200);
  enable_prefill(e);
  auto scenario = three_dcs();
  KvRoutes routes(make_plan(e, scenario), scenario, harness_test::steady_links(scenario));
  BOOST_TEST_REQUIRE(routes.same_queue(0, 3));  // a->b both
  BOOST_TEST(!routes.same_queue(0, 1));
  const std::uint64_t bytes = 12'500'000;  // 200 ms at 0.5 Gbit/s
  for (int i = 0; i < 4; ++i) routes.queue(0, 0, bytes);
  BOOST_TEST(routes.estimate_ns(0, bytes, 0) == 10 * kMs + 5 * 200 * kMs);
  routes.observe(0, bytes, 10 * kMs + 600 * kMs);  // three times the model
  // At 300 ms one cache has arrived; three wait, one of them worker 3's,
  // ready at 500 ms: the queue ends at 300 + 2 x 600, then 500 < 1500, + 600.
  routes.requeue(0, 300 * kMs, {{0, 0, bytes}, {3, 500 * kMs, bytes}, {0, 100 * kMs, bytes}});
  BOOST_TEST(routes.estimate_ns(0, bytes, 300 * kMs) == 10 * kMs + 600 * kMs + (2100 - 300) * kMs);
  // Nothing waits: the route is free from now.
  routes.requeue(3, 2000 * kMs, {});
  BOOST_TEST(routes.estimate_ns(0, bytes, 2000 * kMs) == 610 * kMs);
}

BOOST_AUTO_TEST_SUITE_END()

// Across machines an announcement reaches the coordinator one control delay
// late and the last grant it sent before reaches the prefill worker one more
// later: the lead grows by both; on one machine it is the pieces' time.
BOOST_AUTO_TEST_CASE(the_announce_lead_grows_by_the_control_channels_delays) {
  using wanlab::harness::announce_lead_ns;
  BOOST_TEST(announce_lead_ns(6'000'000, 0, 0) == 6'000'000);
  BOOST_TEST(announce_lead_ns(6'000'000, 15'000'000, 2'000'000) == 23'000'000);
  BOOST_TEST(announce_lead_ns(6'000'000, -1, -1) == 6'000'000);  // no delay is shorter than none
}
