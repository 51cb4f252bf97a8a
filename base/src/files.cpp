#include "wanlab/base/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <utility>

#include "wanlab/base/parse.hpp"
#include "wanlab/base/sys.hpp"

namespace wanlab::base {
namespace {

[[noreturn]] void fail(const std::string& path, std::string_view what, int err = errno) {
  throw FileError(path, fmt::format("{}: {}", what, std::strerror(err)));
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a plain file";
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string format_bytes(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1ull << 10));
  return fmt::format("{} B", bytes);
}

std::string read_regular_file(const std::string& path, const ReadRules& rules) {
  // open() would see the name up to the NUL: another file.
  if (path.find('\0') != std::string::npos) throw FileError(quoted(path, 256), "a file name with a NUL byte");
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (rules.follow_symlinks ? 0 : O_NOFOLLOW);
  UniqueFd file(::open(path.c_str(), flags));
  if (file.get() < 0) {
    if (errno == ELOOP && !rules.follow_symlinks) throw FileError(path, "is a symbolic link; refusing to follow it");
    fail(path, "cannot open");
  }
  struct stat st {};
  if (::fstat(file.get(), &st) < 0) fail(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) throw FileError(path, fmt::format("not a regular file ({})", file_kind(st.st_mode)));
  if (static_cast<std::uint64_t>(st.st_size) > rules.max_bytes)
    throw FileError(path,
                    fmt::format("{} is over the limit of {}", format_bytes(static_cast<std::uint64_t>(st.st_size)),
                                format_bytes(rules.max_bytes)));
  std::string contents;
  contents.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t filled = 0;
  for (;;) {
    if (filled == contents.size()) {
      if (contents.size() > rules.max_bytes)
        throw FileError(path, fmt::format("grew past the limit of {} while being read", format_bytes(rules.max_bytes)));
      contents.resize(std::min(contents.size() * 2, rules.max_bytes + 1));
    }
    const ssize_t got = ::read(file.get(), contents.data() + filled, contents.size() - filled);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot read");
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  contents.resize(filled);
  return contents;
}

std::string read_kernel_file(const std::string& path) {
  // Regular and small, though their size reads as 0 until they are read.
  return read_regular_file(path, ReadRules{1u << 20, true});
}

void replace_file(const std::string& path, std::string_view contents, mode_t mode) {
  std::string temporary = path + ".XXXXXX";
  UniqueFd file(::mkostemp(temporary.data(), O_CLOEXEC));  // O_CREAT | O_EXCL, mode 0600
  if (file.get() < 0) fail(path, "creating a file in " + directory_of(path));
  auto discard = [&] { ::unlink(temporary.c_str()); };
  std::size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(file.get(), contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      discard();
      fail(path, "writing " + temporary, err);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(file.get(), mode) < 0 || ::close(file.release()) < 0) {
    const int err = errno;
    discard();
    fail(path, "writing " + temporary, err);
  }
  if (::rename(temporary.c_str(), path.c_str()) < 0) {
    const int err = errno;
    discard();
    fail(path, "replacing it", err);
  }
}

}  // namespace wanlab::base
