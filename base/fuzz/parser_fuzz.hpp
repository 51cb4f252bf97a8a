// The check every file-parser fuzzer makes (cmake/Fuzz.cmake): the input is
// parsed, or refused with the parser's own error type and a one-line message
// (base::one_line_problem). Anything else aborts, which libFuzzer reports
// with the input: another exception type, a message of several lines; crashes
// and sanitizer reports abort by themselves.
#pragma once

#include <cxxabi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>

#include "wanlab/base/one_line.hpp"
#include "wanlab/base/parse.hpp"

namespace wanlab::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "==wanlab fuzz== %s\n", what.c_str());
  std::abort();
}

inline std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type.name();
}

// Feeds `data` as text to `parse(std::string_view)`; only Error is allowed out.
template <typename Error, typename Parse>
int check_parser(const std::uint8_t* data, std::size_t size, Parse parse) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    parse(text);
  } catch (const Error& error) {
    const std::string problem = base::one_line_problem(error.what());
    if (!problem.empty()) fail("error message is not one line (" + problem + "): " + base::quoted(error.what(), 4096));
  } catch (const std::exception& error) {
    fail("uncaught " + type_name(typeid(error)) + ": " + base::quoted(error.what(), 4096));
  } catch (...) {
    fail("uncaught exception of a type not derived from std::exception");
  }
  return 0;
}

}  // namespace wanlab::fuzz
