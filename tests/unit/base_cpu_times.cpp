// /proc/stat read into busy, total and stolen ticks, and the shares between
// two readings (base/cpu_times.hpp).
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include "wanlab/base/cpu_times.hpp"

namespace base = wanlab::base;
namespace fs = std::filesystem;

namespace {

std::string stat_file(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("wanlab-cpu-times-" + name);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

BOOST_AUTO_TEST_CASE(proc_stat_is_busy_and_total_ticks_with_idle_and_iowait_not_busy) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const std::string path = stat_file("stat", "cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  const auto times = base::read_cpu_times(path);
  BOOST_TEST_REQUIRE(times.has_value());
  BOOST_TEST(times->busy == 160u);    // user, nice, system, irq, softirq, steal
  BOOST_TEST(times->total == 1000u);  // guest is inside user already
  fs::remove(path);
  const std::string bad = stat_file("bad", "intr 1 2 3\n");
  BOOST_TEST(!base::read_cpu_times(bad).has_value());
  fs::remove(bad);
  BOOST_TEST(!base::read_cpu_times("/nonexistent/stat").has_value());
}

BOOST_AUTO_TEST_CASE(steal_is_busy_and_counted_on_its_own) {
  const std::string path = stat_file("steal", "cpu  100 5 50 800 40 3 2 30 7 0\n");
  const auto times = base::read_cpu_times(path);
  BOOST_TEST_REQUIRE(times.has_value());
  BOOST_TEST(times->busy == 190u);
  BOOST_TEST(times->total == 1030u);
  BOOST_TEST(times->stolen == 30u);
  fs::remove(path);
  BOOST_TEST(base::stolen_share({100, 1000, 10}, {400, 2000, 60}) == 0.05);
  BOOST_TEST(base::stolen_share({100, 1000, 10}, {100, 1000, 10}) == 0.0);  // no time passed
  BOOST_TEST(base::stolen_share({100, 1000, 10}, {200, 2000, 5}) == 0.0);   // counters went back
}

BOOST_AUTO_TEST_CASE(busy_share_is_the_busy_ticks_over_all_ticks_between_readings) {
  BOOST_TEST(base::busy_share({100, 1000}, {400, 2000}) == 0.3);
  BOOST_TEST(base::busy_share({100, 1000}, {100, 1000}) == 0.0);  // no time passed
  BOOST_TEST(base::busy_share({100, 1000}, {50, 2000}) == 0.0);   // counters went back: not a figure
}

BOOST_AUTO_TEST_CASE(this_machines_proc_stat_reads) {
  const auto times = base::read_cpu_times();
  BOOST_TEST_REQUIRE(times.has_value());
  BOOST_TEST(times->busy <= times->total);
  BOOST_TEST(times->stolen <= times->busy);
}
