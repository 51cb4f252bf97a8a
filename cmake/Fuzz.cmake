# libFuzzer targets: the transport frame decoder, scenario files, experiment
# files. Needs clang and its libFuzzer runtime (Debian: clang, libclang-rt-dev):
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DWANLAB_FUZZ=ON
#   cmake --build build-fuzz --target fuzzers && ctest --test-dir build-fuzz
# A fuzz build registers only the fuzz tests (label fuzz; tests/CMakeLists.txt).
option(WANLAB_FUZZ "Build the libFuzzer targets and register only their tests (needs clang)" OFF)
set(WANLAB_FUZZ_SECONDS 60 CACHE STRING "How long each fuzz test fuzzes (-max_total_time)")

if(NOT WANLAB_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "WANLAB_FUZZ needs clang (-fsanitize=fuzzer); this is ${CMAKE_CXX_COMPILER_ID}: "
                      "configure with CC=clang CXX=clang++")
endif()

# UBSan only reports and goes on unless told not to recover; libFuzzer then
# would never see the finding. Library assertions catch out-of-range [] too.
# cmake/fuzz-ignorelist.txt: known bugs outside wanlab, each with its reason.
set(WANLAB_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fsanitize-ignorelist=${PROJECT_SOURCE_DIR}/cmake/fuzz-ignorelist.txt
                      -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS)
set(WANLAB_FUZZ_LINK_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LINK_OPTIONS ${WANLAB_FUZZ_LINK_FLAGS})
check_cxx_source_compiles(
  "#include <cstddef>
   #include <cstdint>
   extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }"
  WANLAB_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT WANLAB_HAVE_LIBFUZZER)
  message(FATAL_ERROR "clang cannot link -fsanitize=fuzzer: its runtime is missing "
                      "(Debian: apt-get install libclang-rt-dev)")
endif()

# toml++ compiled into the fuzzers (header-only) rather than Debian's shared
# library, so that the TOML parser is instrumented and its paths guide the
# mutations too.
add_library(wanlab_toml_fuzzing INTERFACE)
target_compile_definitions(wanlab_toml_fuzzing INTERFACE TOML_HEADER_ONLY=1)
get_target_property(toml_includes tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
target_include_directories(wanlab_toml_fuzzing SYSTEM INTERFACE ${toml_includes})

# The sources a fuzzer exercises, instrumented: a second build of a library's
# files, used only by fuzzers.
function(wanlab_fuzz_library name)
  add_library(${name} STATIC ${ARGN})
  target_compile_options(${name} PRIVATE ${WANLAB_FUZZ_FLAGS})
endfunction()

add_custom_target(fuzzers)

# wanlab_fuzzer(NAME SOURCE LIBRARIES...): one libFuzzer executable, part of `fuzzers`.
function(wanlab_fuzzer name source)
  add_executable(${name} ${source})
  target_compile_options(${name} PRIVATE ${WANLAB_FUZZ_FLAGS})
  target_link_options(${name} PRIVATE ${WANLAB_FUZZ_LINK_FLAGS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/base/fuzz)
  target_link_libraries(${name} PRIVATE ${ARGN})
  add_dependencies(fuzzers ${name})
endfunction()
