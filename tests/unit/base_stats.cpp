// base::percentile: linear interpolation between the closest ranks.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "wanlab/base/stats.hpp"

using wanlab::base::percentile;

BOOST_AUTO_TEST_CASE(interpolates_between_the_closest_ranks) {
  std::vector<double> values{4, 1, 3, 2};
  BOOST_TEST(percentile(values, 0) == 1.0);
  BOOST_TEST(percentile(values, 100) == 4.0);
  BOOST_TEST(percentile(values, 50) == 2.5);
  BOOST_TEST(percentile(values, 90) == 3.7, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(percentile({7}, 99) == 7.0);
}

BOOST_AUTO_TEST_CASE(no_values_give_nan_and_p_is_clamped) {
  BOOST_TEST(std::isnan(percentile({}, 50)));
  BOOST_TEST(percentile({1, 2}, 150) == 2.0);
  BOOST_TEST(percentile({1, 2}, -5) == 1.0);
}
