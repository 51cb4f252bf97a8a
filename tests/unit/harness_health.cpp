// The emulation's verdict on itself (record/health.hpp), on given samples:
// each limit flags its own cause and nothing else, the figures behind the
// verdict, and the one line the run prints.
#include <boost/test/unit_test.hpp>
#include <utility>
#include <vector>

#include "wanlab/base/late_bounds.hpp"
#include "wanlab/harness/record/health.hpp"

using namespace wanlab::harness;

namespace {

// `verdicts` verdicts, of which `late` gives how many left how late (ns); the
// rest on time. Counted over every bound, as the releaser counts them.
ReleaserLateness verdicts_late(std::uint64_t verdicts, std::vector<std::pair<std::uint64_t, std::uint64_t>> late) {
  ReleaserLateness r;
  r.verdicts = verdicts;
  for (const std::uint64_t bound : wanlab::base::kLateBoundsNs) {
    std::uint64_t over = 0;
    for (const auto& [late_ns, count] : late)
      if (late_ns > bound) over += count;
    r.over[bound] = over;
  }
  for (const auto& [late_ns, count] : late) r.max_ns = std::max(r.max_ns, late_ns);
  return r;
}

// A healthy run: 100 compute ops of 10 ms that woke 50 us late (0.5%), CPUs
// half busy, a releaser whose verdicts are all within 10 us.
EmulationSamples healthy() {
  EmulationSamples s;
  s.wake_late_ns.assign(100, 50'000);
  s.compute_ns = 100 * 10'000'000;
  s.cpu_busy = {0.4, 0.5, 0.6};
  s.cpu_interval_s = 0.5;
  s.cpus = 2;
  s.release_path = "nfqueue";
  s.releaser = verdicts_late(10'000, {{9'000, 10'000}});
  return s;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(a_healthy_run_kept_up_and_says_what_it_measured) {
  const EmulationHealth h = judge_emulation(healthy());
  BOOST_TEST(h.kept_up);
  BOOST_TEST(h.compute_ops == 100u);
  BOOST_TEST(h.wake_late_p50_ms == 0.05);
  BOOST_TEST(h.wake_late_p99_ms == 0.05);
  BOOST_TEST(h.wake_late_share == 0.005);
  BOOST_TEST(h.cpu_mean == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(h.cpu_max == 0.6);
  BOOST_TEST(h.cpu_saturated_share == 0.0);
  BOOST_TEST(h.verdict ==
                 "emulation kept up: workers woke 0.5% of compute late (p99 0.05 ms), releaser p99 <= 10 us over 10000 "
                 "verdicts (0.00% over 100 us), CPU 50% (max 60%, 2 CPUs)",
             h.verdict);
}

BOOST_AUTO_TEST_CASE(late_wake_ups_past_one_percent_of_compute_fall_behind) {
  EmulationSamples s = healthy();
  s.wake_late_ns.assign(100, 100'000);  // exactly 1%: still kept up
  BOOST_TEST(judge_emulation(s).kept_up);
  s.wake_late_ns.back() = 2'000'000;  // one op 2 ms late: 1.19%
  const EmulationHealth h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST(h.wake_late_max_ms == 2.0);
  BOOST_TEST(h.verdict.starts_with("emulation fell behind: workers woke 1.2% of compute late (p99 0.10 ms) - "),
             h.verdict);
  BOOST_TEST(has(h.verdict, "not faithful; lower `scale` or the request rate"), h.verdict);
  BOOST_TEST(!has(h.verdict, "CPU"), h.verdict);  // only what fell behind
}

BOOST_AUTO_TEST_CASE(releaser_verdicts_late_by_100_us_past_one_percent_fall_behind) {
  EmulationSamples s = healthy();
  s.releaser = verdicts_late(10'000, {{50'000, 2'900}, {400'000, 100}});  // 1% over 100 us: kept up
  EmulationHealth h = judge_emulation(s);
  BOOST_TEST(h.kept_up);
  BOOST_TEST(has(h.verdict, "releaser p99 <= 50 us over 10000 verdicts (1.00% over 100 us)"), h.verdict);
  s.releaser =
      verdicts_late(10'000, {{50'000, 4'500}, {200'000, 200}, {500'000, 100}, {2'000'000, 150}, {4'000'000, 50}});
  h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST(has(h.verdict, "fell behind: releaser p99 <= 2 ms over 10000 verdicts (5.00% over 100 us)"), h.verdict);
  s.releaser = verdicts_late(100, {{40'000'000, 100}});
  BOOST_TEST(has(judge_emulation(s).verdict, "releaser p99 > 10 ms"));
}

// The releaser is judged at 2% of the run's smallest WAN delay, as the
// largest bound at most that: 100 us for 5 ms (and when unknown), 200 us for
// 11 ms, 600 us for 33 ms, 1.5 ms for 80 ms; 10 us when even that is more
// than 2%, 10 ms past 500 ms.
BOOST_AUTO_TEST_CASE(the_releaser_limit_follows_the_smallest_wan_delay) {
  EmulationSamples s = healthy();
  // 5% over 100 us and over 200 us, 0.5% over 250 us.
  s.releaser = verdicts_late(10'000, {{50'000, 4'500}, {250'000, 450}, {700'000, 50}});
  BOOST_TEST(!judge_emulation(s).kept_up);
  BOOST_TEST(judge_emulation(s).releaser_limit_ns == 100'000u);
  s.smallest_wan_delay_ns = 11'000'000;
  BOOST_TEST(!judge_emulation(s).kept_up);
  BOOST_TEST(judge_emulation(s).releaser_limit_ns == 200'000u);
  s.smallest_wan_delay_ns = 33'000'000;
  EmulationHealth h = judge_emulation(s);
  BOOST_TEST(h.kept_up, h.verdict);
  BOOST_TEST(h.releaser_limit_ns == 600'000u);
  BOOST_TEST(has(h.verdict, "(0.50% over 600 us)"), h.verdict);
  s.smallest_wan_delay_ns = 80'000'000;
  BOOST_TEST(judge_emulation(s).releaser_limit_ns == 1'500'000u);
  BOOST_TEST(has(judge_emulation(s).verdict, "(0.00% over 1.5 ms)"), judge_emulation(s).verdict);
  s.smallest_wan_delay_ns = 100'000;  // 2 us: no counter is that fine
  BOOST_TEST(judge_emulation(s).releaser_limit_ns == 10'000u);
  s.smallest_wan_delay_ns = 1'000'000'000;
  BOOST_TEST(judge_emulation(s).releaser_limit_ns == 10'000'000u);
}

// Every bound is never more than a quarter below the next: a limit between
// two is judged at most 25% stricter than it is.
BOOST_AUTO_TEST_CASE(the_bounds_are_at_most_a_quarter_apart) {
  const auto& bounds = wanlab::base::kLateBoundsNs;
  BOOST_TEST(bounds.front() == 10'000u);
  BOOST_TEST(bounds.back() == 10'000'000u);
  for (std::size_t i = 1; i < bounds.size(); ++i) {
    BOOST_TEST(bounds[i] > bounds[i - 1]);
    BOOST_TEST(static_cast<double>(bounds[i - 1]) >= 0.75 * static_cast<double>(bounds[i]), bounds[i]);
  }
  // The six of files written before the finer bounds are among them.
  for (const std::uint64_t old : {10'000u, 100'000u, 300'000u, 1'000'000u, 3'000'000u, 10'000'000u})
    BOOST_TEST(wanlab::base::late_bound_index(old).has_value(), old);
  BOOST_TEST(wanlab::base::late_bound_key(1'200'000) == "1200us");
  BOOST_TEST(wanlab::base::late_bound_key(3'000'000) == "3ms");
  BOOST_TEST(wanlab::base::late_bound_text(1'200'000) == "1.2 ms");
  BOOST_TEST(wanlab::base::late_bound_text(250'000) == "250 us");
}

// A pair is judged on its own at the same share once it has 1000 verdicts:
// one slow link falls behind however punctual the rest; fewer decide nothing.
BOOST_AUTO_TEST_CASE(one_pair_late_past_one_percent_falls_behind_and_is_named) {
  EmulationSamples s = healthy();
  s.releaser = verdicts_late(100'000, {{50'000, 2'100}, {150'000, 900}});  // 0.9% over 100 us
  s.releaser_pairs = {{"east", "west", verdicts_late(99'000, {{50'000, 1'120}, {150'000, 880}})},
                      {"west", "europe", verdicts_late(1000, {{50'000, 980}, {150'000, 20}})}};
  EmulationHealth h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST((h.releaser_pairs == s.releaser_pairs));
  BOOST_TEST(has(h.verdict,
                 "fell behind: releaser p99 <= 50 us over 100000 verdicts (0.90% over 100 us; west->europe p99 <= "
                 "150 us over 1000 verdicts, 2.00% over 100 us)"),
             h.verdict);
  s.releaser_pairs[1].late.verdicts = 999;  // too few to judge on their own
  h = judge_emulation(s);
  BOOST_TEST(h.kept_up, h.verdict);
  BOOST_TEST(has(h.verdict, "releaser p99 <= 50 us over 100000 verdicts (0.90% over 100 us),"), h.verdict);
}

BOOST_AUTO_TEST_CASE(a_packet_the_release_queue_dropped_falls_behind) {
  EmulationSamples s = healthy();
  s.releaser->dropped = 3;
  const EmulationHealth h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST(has(h.verdict, "fell behind: the release queue dropped 3 packets - "), h.verdict);
}

BOOST_AUTO_TEST_CASE(the_fq_path_has_no_releaser_and_says_the_kernel_times_packets) {
  EmulationSamples s = healthy();
  s.release_path = "fq";
  s.releaser.reset();
  const EmulationHealth h = judge_emulation(s);
  BOOST_TEST(h.kept_up);
  BOOST_TEST(!h.releaser.has_value());
  BOOST_TEST(has(h.verdict, "release path fq (the kernel times packets)"), h.verdict);
}

BOOST_AUTO_TEST_CASE(a_box_saturated_most_of_the_run_falls_behind) {
  EmulationSamples s = healthy();
  s.cpu_busy = {0.99, 0.97, 0.5, 0.4};  // half the intervals: kept up
  BOOST_TEST(judge_emulation(s).kept_up);
  s.cpu_busy = {0.99, 0.97, 0.96, 0.4};
  const EmulationHealth h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST(h.cpu_saturated_share == 0.75);
  BOOST_TEST(has(h.verdict, "fell behind: CPU at least 95% busy in 75% of the run (2 CPUs)"), h.verdict);
}

// Time the hypervisor gave other guests is counted busy (the CPU was not
// ours), and named: in the CPU figures of a run that kept up, and in the
// advice of one that fell behind, since lowering the load alone may not help.
BOOST_AUTO_TEST_CASE(time_stolen_by_the_hypervisor_is_named) {
  EmulationSamples s = healthy();
  s.cpu_stolen = {0.0, 0.004, 0.005};  // 0.3%: not named
  EmulationHealth h = judge_emulation(s);
  BOOST_TEST(h.cpu_stolen_mean == 0.003, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(h.cpu_stolen_max == 0.005);
  BOOST_TEST(!has(h.verdict, "stolen"), h.verdict);
  s.cpu_stolen = {0.02, 0.09, 0.07};
  h = judge_emulation(s);
  BOOST_TEST(h.kept_up);
  BOOST_TEST(has(h.verdict, "CPU 50% (max 60%, 2 CPUs, 6% stolen by the hypervisor)"), h.verdict);
  s.wake_late_ns.assign(100, 1'000'000);
  h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST(has(h.verdict,
                 "not faithful; the hypervisor took 6% of this VM's CPU time (max 9% of an interval): rerun when the "
                 "host is quieter, lower `scale` or the request rate"),
             h.verdict);
  s.cpu_stolen.clear();  // bare metal, or a kernel without steal accounting
  BOOST_TEST(has(judge_emulation(s).verdict, "not faithful; lower `scale` or the request rate"));
}

// The share of the run the idle pollers were active: all of it with
// --idle-poll=on, what the automatic rule allowed otherwise.
BOOST_AUTO_TEST_CASE(idle_polling_says_for_how_much_of_the_run) {
  EmulationSamples s = healthy();
  BOOST_TEST(!has(judge_emulation(s).verdict, "polled"));
  s.idle_pollers = 2;
  s.idle_polled_share = 0.4;
  EmulationHealth h = judge_emulation(s);
  BOOST_TEST(h.idle_polled_share == 0.4);
  BOOST_TEST(has(h.verdict, "CPU 50% (max 60%, 2 CPUs, idle time polled 40% of the run)"), h.verdict);
  s.idle_polled_share = 0;  // present, paused all along
  BOOST_TEST(!has(judge_emulation(s).verdict, "polled"));
  s.idle_pollers = 0;  // none could run: no share either
  s.idle_polled_share = 1;
  BOOST_TEST(judge_emulation(s).idle_polled_share == 0.0);
}

BOOST_AUTO_TEST_CASE(every_cause_is_named_when_several_fell_behind) {
  EmulationSamples s = healthy();
  s.wake_late_ns.assign(100, 1'000'000);
  s.cpu_busy = {1.0, 1.0};
  const EmulationHealth h = judge_emulation(s);
  BOOST_TEST(!h.kept_up);
  BOOST_TEST(has(h.verdict, "workers woke 10.0% of compute late"), h.verdict);
  BOOST_TEST(has(h.verdict, ", CPU at least 95% busy in 100% of the run"), h.verdict);
}

BOOST_AUTO_TEST_CASE(limits_can_be_given) {
  EmulationSamples s = healthy();
  HealthLimits strict;
  strict.wake_late_share = 0.001;
  BOOST_TEST(!judge_emulation(s, strict).kept_up);
  BOOST_TEST(judge_emulation(s).kept_up);
}
