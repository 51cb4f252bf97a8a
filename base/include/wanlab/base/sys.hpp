// Owning a file descriptor (a file, a socket, a namespace, a pipe end) and
// turning a failed system call into an error that says what was attempted.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace wanlab::base {

/// Throws std::system_error for errno (or `err`), with `what` as context:
/// "opening /run/netns/x: No such file or directory".
[[noreturn]] void throw_errno(const std::string& what, int err = errno);

/// Returns ret, or throws with `what` when ret < 0.
inline int check(int ret, const std::string& what) {
  if (ret < 0) throw_errno(what);
  return ret;
}

/// One file descriptor, closed when the owner goes. Move-only.
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

/// The two ends of a pipe, both close-on-exec. Throws naming `what`.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
Pipe make_pipe(const std::string& what = "creating a pipe");

}  // namespace wanlab::base
