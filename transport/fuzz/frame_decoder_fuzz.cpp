// libFuzzer target for the frame decoder (FrameReader + Reassembler).
// Build: configure with clang and -DWANLAB_FUZZ=ON, then
//   build/transport/transport_frame_fuzzer tests/data/transport-corpus -max_total_time=60
#include <cstddef>
#include <cstdint>

#include "wanlab/transport/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wanlab::transport::fuzz::decode_fuzz_input({data, size});
  return 0;
}
