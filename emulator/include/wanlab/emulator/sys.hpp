// Small system-call helpers: an owned file descriptor and errors that name
// what was being attempted.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace wanlab::emulator {

// Throws std::system_error for errno (or `err`), with `what` as context.
[[noreturn]] void throw_errno(const std::string& what, int err = errno);

// Returns ret, or throws with `what` when ret < 0.
inline int check(int ret, const std::string& what) {
  if (ret < 0) throw_errno(what);
  return ret;
}

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Writes `value` to a /proc/sys file in the calling thread's network namespace.
void write_sysctl(const std::string& path, const std::string& value);
// A small file of the kernel's (/proc, /sys); throws base::FileError naming it.
std::string read_file(const std::string& path);

}  // namespace wanlab::emulator
