// Independent work on several threads with its reports in order: what
// `wanlab plan --jobs` runs its candidates on. Internal to the harness library.
#pragma once

#include <cstddef>
#include <functional>

namespace wanlab::harness::detail {

// Runs work(i) for every i in [0, count) on up to `jobs` threads (this one
// among them), each index once; in_order(i) follows in index order, one at a
// time, as soon as work(0..i) are done. work must touch only what index i
// owns. The first exception thrown stops the indices not yet begun and is
// rethrown here once the threads have ended.
void for_each_index(std::size_t count, int jobs, const std::function<void(std::size_t)>& work,
                    const std::function<void(std::size_t)>& in_order);

}  // namespace wanlab::harness::detail
