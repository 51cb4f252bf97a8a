// How a prefill worker sends its KV caches (prefill/kv_order.hpp): in
// placement order, in gated pieces over a link (on a DC's own link one
// chunk each), and from the decode host itself timed at its NVLink's rate
// with no bytes sent at all.
#include <boost/test/unit_test.hpp>

#include "prefill/kv_order.hpp"

namespace rd = wanlab::harness::run_detail;
namespace ctl = wanlab::harness::control;

// A prefill worker's caches go in placement order (batch ids): a ready cache
// waits for an earlier-placed one still in prefill, and no longer for one
// whose prefill missed.
BOOST_AUTO_TEST_CASE(a_worker_sends_its_caches_in_placement_order) {
  rd::KvSendOrder order;
  for (int batch : {3, 5, 8}) order.placed(batch);
  order.ready(5, 500);
  order.ready(8, 800);
  BOOST_TEST(!order.can_take());  // 3 is still in prefill
  BOOST_TEST(!order.take().has_value());
  order.ready(3, 300);
  BOOST_TEST_REQUIRE(order.can_take());
  BOOST_TEST(order.take()->first == 3);
  BOOST_TEST(order.take()->first == 5);
  order.placed(9);
  order.placed(11);
  order.ready(11, 1100);
  BOOST_TEST(order.take()->second == 800u);
  BOOST_TEST(!order.can_take());  // 9 ahead of 11
  order.dropped(9);               // its prefill missed
  BOOST_TEST(order.take()->first == 11);
  BOOST_TEST(!order.can_take());
}

// On a shared route a ready cache goes ahead of an earlier-placed one whose
// prefill has not ended only where that one still arrives by its deadline
// behind it: from its predicted prefill end, or from when the ready one is
// done if that is later (times in ms).
BOOST_AUTO_TEST_CASE(a_ready_cache_goes_ahead_only_where_the_earlier_one_keeps_its_deadline) {
  constexpr std::int64_t ms = 1'000'000;
  // Ready at 100, delay 10, wire 200, margin 50: arrives at 360 if it starts on time.
  const rd::EarlierCache earlier{100 * ms, 10 * ms, 200 * ms, 50 * ms, 400 * ms};
  BOOST_TEST(rd::may_go_ahead(0, 100 * ms, earlier));        // done at 100: it starts on time
  BOOST_TEST(rd::may_go_ahead(0, 140 * ms, earlier));        // done at 140: it arrives at 400, its deadline
  BOOST_TEST(!rd::may_go_ahead(0, 141 * ms, earlier));       // 1 ms past it
  BOOST_TEST(!rd::may_go_ahead(150 * ms, 1, earlier));       // its prefill ran late: no room left for another first
  BOOST_TEST(rd::may_go_ahead(130 * ms, 10 * ms, earlier));  // late, but 10 ms still fit
}

// Across a gated link: pieces of piece_bytes, the last one the rest, never
// larger than the cache; ungated, the whole cache at once.
BOOST_AUTO_TEST_CASE(a_cache_on_a_link_goes_in_pieces_of_its_bytes) {
  ctl::PrefillAssign gated;
  gated.gated = true;
  gated.piece_bytes = 1'000'000;
  const rd::KvSendShape pieces = rd::kv_send_shape(gated, 2'500'000);
  BOOST_TEST(pieces.piece_bytes == 1'000'000u);
  BOOST_TEST(pieces.pieces == 3);
  BOOST_TEST(pieces.timed_ns == 0);
  BOOST_TEST(pieces.modelled_bytes == 0u);
  BOOST_TEST(rd::kv_send_shape(gated, 300).piece_bytes == 300u);
  BOOST_TEST(rd::kv_send_shape(gated, 300).pieces == 1);

  ctl::PrefillAssign bulk;
  bulk.piece_bytes = 1'000'000;  // ignored without a gate
  const rd::KvSendShape whole = rd::kv_send_shape(bulk, 2'500'000);
  BOOST_TEST(whole.piece_bytes == 2'500'000u);
  BOOST_TEST(whole.pieces == 1);
  BOOST_TEST(whole.modelled_bytes == 0u);
}

// On a DC's own link a piece and its header are one chunk, so the socket
// takes a piece in one write and the worker releases it then; the piece
// sizes KvRoutes gives (kMinPiece..kMaxPiece) all fit, and a chunk never
// leaves the transport's range.
BOOST_AUTO_TEST_CASE(a_piece_on_a_dc_link_is_one_chunk) {
  namespace tp = wanlab::transport;
  for (const std::uint64_t piece : {std::uint64_t{1}, std::uint64_t{4} << 10, std::uint64_t{37'568},
                                    std::uint64_t{150'000}, std::uint64_t{4} << 20}) {
    const std::uint32_t chunk = rd::dc_link_chunk_bytes(piece);
    BOOST_TEST(chunk >= piece + rd::kKvHeaderBytes);
    BOOST_TEST(chunk >= tp::kMinChunkSize);
    BOOST_TEST(chunk <= tp::kMaxChunkSize);
  }
  BOOST_TEST(rd::dc_link_chunk_bytes(37'568) == 37'568u + rd::kKvHeaderBytes);
  BOOST_TEST(rd::dc_link_chunk_bytes(std::uint64_t{1} << 40) == tp::kMaxChunkSize);
}

// On the decode host itself a cache is timed, not sent: 2.5 MB at
// 36 Gbit/s (tp 1, 3600 Gbit/s NVLink at scale 0.01) is 0.556 ms of waiting
// and one header standing for all of its bytes, no zeros on the channel.
BOOST_AUTO_TEST_CASE(a_cache_on_its_decode_host_is_timed_not_sent) {
  ctl::PrefillAssign local;
  local.intra_host_bps = 36'000'000'000;
  local.piece_bytes = 1'000'000;
  const rd::KvSendShape shape = rd::kv_send_shape(local, 2'500'000);
  BOOST_TEST(shape.piece_bytes == 0u);
  BOOST_TEST(shape.pieces == 1);
  BOOST_TEST(shape.modelled_bytes == 2'500'000u);
  BOOST_TEST(shape.timed_ns == 555'556);
  // 8 GiB of a long prompt's cache: seconds of waiting, still not a byte sent.
  const rd::KvSendShape large = rd::kv_send_shape(local, 8ull << 30);
  BOOST_TEST(large.piece_bytes == 0u);
  BOOST_TEST(large.modelled_bytes == 8ull << 30);
  BOOST_TEST(large.timed_ns == 1'908'874'354);
}
