#include "wanlab/base/files.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <streambuf>
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
  if (S_ISREG(mode)) return "a regular file";
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

namespace {

// An output stream over a file descriptor, for writers that stream (a long
// run's trace.json) rather than build a string first.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (sync() < 0) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override {
    const char* next = pbase();
    while (next < pptr()) {
      const ssize_t n = ::write(fd_, next, static_cast<std::size_t>(pptr() - next));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_ = errno;
        return -1;
      }
      next += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return 0;
  }

 private:
  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buffer_{};
};

std::string join(std::string_view dir, std::string_view name) {
  if (dir.empty() || dir == ".") return std::string(name);
  return dir.back() == '/' ? fmt::format("{}{}", dir, name) : fmt::format("{}/{}", dir, name);
}

// A path for a message: as it is, or quoted and escaped where it holds a
// byte a terminal or a C string would mangle (a NUL would cut the message).
std::string shown_path(std::string_view path) {
  const bool plain =
      std::all_of(path.begin(), path.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
  return plain ? std::string(path) : quoted(path, 256);
}

// "name" must be one path component: outputs never climb out of their directory.
void check_component(const std::string& shown, std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    throw FileError(shown_path(shown), "not a plain file name");
}

// What stands at `name` in `dir_fd`, without following a link; 0 if nothing.
mode_t kind_at(int dir_fd, const std::string& shown, std::string_view name) {
  struct stat st {};
  if (::fstatat(dir_fd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return st.st_mode;
  if (errno == ENOENT) return 0;
  fail(shown, "cannot stat");
}

// Outputs replace only regular files: renaming over /dev/null would replace
// the host's /dev/null, and a link there may be the user's own.
void refuse_unless_regular(mode_t mode, const std::string& shown) {
  if (mode != 0 && !S_ISREG(mode))
    throw FileError(shown, fmt::format("{}; outputs are written only as regular files", file_kind(mode)));
}

std::string random_suffix() {
  std::array<unsigned char, 6> bytes{};
  if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) fail("getrandom", "reading");
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string suffix;
  for (unsigned char byte : bytes) suffix += kAlphabet[byte % (sizeof kAlphabet - 1)];
  return suffix;
}

enum class Target { anything, regular_only };

// Writes a new file in `dir_fd` under a random name (O_EXCL, O_NOFOLLOW: nothing
// planted is written through) and renames it over `name`.
void replace_at(int dir_fd, const std::string& dir_shown, std::string_view name, const FillFile& fill, mode_t mode,
                Target target) {
  const std::string shown = join(dir_shown, name);
  if (target == Target::regular_only) refuse_unless_regular(kind_at(dir_fd, shown, name), shown);
  std::string temporary;
  UniqueFd file;
  for (int attempt = 0; !file && attempt < 16; ++attempt) {
    temporary = fmt::format("{}.{}", name, random_suffix());
    file = UniqueFd(::openat(dir_fd, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file && errno != EEXIST) break;
  }
  if (!file) fail(shown, "creating a file in " + (dir_shown.empty() ? std::string(".") : dir_shown));
  auto discard = [&](int err) {
    ::unlinkat(dir_fd, temporary.c_str(), 0);
    fail(shown, "writing " + join(dir_shown, temporary), err);
  };
  FdStreamBuf buffer(file.get());
  std::ostream stream(&buffer);
  try {
    fill(stream);
  } catch (...) {
    ::unlinkat(dir_fd, temporary.c_str(), 0);
    throw;
  }
  stream.flush();
  if (!stream) discard(buffer.error() ? buffer.error() : EIO);
  if (::fchmod(file.get(), mode) < 0 || ::close(file.release()) < 0) discard(errno);
  // Where nothing stood, nothing may appear meanwhile and be replaced unseen.
  const unsigned flags = target == Target::regular_only && kind_at(dir_fd, shown, name) == 0 ? RENAME_NOREPLACE : 0;
  if (::renameat2(dir_fd, temporary.c_str(), dir_fd, std::string(name).c_str(), flags) == 0) return;
  int err = errno;
  // File systems without RENAME_NOREPLACE (9p, as QEMU shares a folder; some
  // NFS servers, as clusters share them) refuse the flag with EINVAL: a plain
  // rename then. It replaces a name that appeared meanwhile, never writes
  // through it (a link is replaced, not followed).
  if (err == EINVAL && flags != 0) {
    if (::renameat(dir_fd, temporary.c_str(), dir_fd, std::string(name).c_str()) == 0) return;
    err = errno;
  }
  ::unlinkat(dir_fd, temporary.c_str(), 0);
  if (err == EEXIST) refuse_unless_regular(kind_at(dir_fd, shown, name), shown);
  fail(shown, "replacing it", err);
}

FillFile fill_with(std::string_view contents) {
  return [contents](std::ostream& out) { out.write(contents.data(), static_cast<std::streamsize>(contents.size())); };
}

// The directory `path` names, as the user named it (links followed); throws
// naming `shown`, with the reason that it is missing or not a directory.
UniqueFd open_named_directory(const std::string& path, const std::string& shown, std::string_view what) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) fail(shown, std::string(what));
  return dir;
}

std::pair<std::string, std::string> split_last(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

void replace_file(const std::string& path, std::string_view contents, mode_t mode) {
  const auto [dir, name] = split_last(path);
  const UniqueFd dir_fd =
      open_named_directory(dir.empty() ? "." : dir, path, "creating a file in " + directory_of(path));
  replace_at(dir_fd.get(), dir, name, fill_with(contents), mode, Target::anything);
}

OutputDir OutputDir::open(const std::string& path) {
  if (path.empty()) throw FileError(path, "an empty path");
  if (path.find('\0') != std::string::npos) throw FileError(shown_path(path), "a NUL byte in the path");
  UniqueFd dir = open_named_directory(path.front() == '/' ? "/" : ".", path, "cannot open");
  std::string walked = path.front() == '/' ? "/" : "";
  bool created = false;  // below a directory made here, nothing is the user's
  for (std::string_view rest = path; !rest.empty();) {
    const auto slash = rest.find('/');
    const std::string component(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    if (component.empty() || component == ".") continue;
    const std::string parent = walked;
    walked = join(walked, component);
    if (!created || component == "..") {
      UniqueFd existing(::openat(dir.get(), component.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (existing) {
        dir = std::move(existing);
        continue;
      }
      if (errno != ENOENT || component == "..") {
        const int err = errno;
        if (const mode_t mode = kind_at(dir.get(), walked, component); mode != 0 && !S_ISDIR(mode))
          throw FileError(walked, fmt::format("not a directory ({})", file_kind(mode)));
        fail(walked, "cannot open", err);
      }
    }
    if (::mkdirat(dir.get(), component.c_str(), 0755) < 0 && errno != EEXIST) fail(walked, "cannot create");
    created = true;
    dir = OutputDir(parent, std::move(dir)).subdir(component).fd_;
  }
  return OutputDir(path, std::move(dir));
}

OutputDir OutputDir::subdir(std::string_view name) const {
  const std::string shown = path_of(name);
  check_component(shown, name);
  const std::string component(name);
  if (::mkdirat(fd_.get(), component.c_str(), 0755) < 0 && errno != EEXIST) fail(shown, "cannot create");
  UniqueFd dir(::openat(fd_.get(), component.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    const int err = errno;
    if (const mode_t mode = kind_at(fd_.get(), shown, name); mode != 0 && !S_ISDIR(mode))
      throw FileError(shown, S_ISLNK(mode) ? "a symbolic link; refusing to write through it"
                                           : fmt::format("not a directory ({})", file_kind(mode)));
    fail(shown, "cannot open", err);
  }
  return OutputDir(shown, std::move(dir));
}

void OutputDir::write(std::string_view name, const FillFile& fill, mode_t mode) const {
  check_component(path_of(name), name);
  replace_at(fd_.get(), path_, name, fill, mode, Target::regular_only);
}

void OutputDir::write(std::string_view name, std::string_view contents, mode_t mode) const {
  write(name, fill_with(contents), mode);
}

void OutputDir::check(std::string_view name, bool directory) const {
  const std::string shown = path_of(name);
  check_component(shown, name);
  const mode_t mode = kind_at(fd_.get(), shown, name);
  if (!directory) return refuse_unless_regular(mode, shown);
  if (S_ISLNK(mode)) throw FileError(shown, "a symbolic link; refusing to write through it");
  if (mode != 0 && !S_ISDIR(mode)) throw FileError(shown, fmt::format("not a directory ({})", file_kind(mode)));
}

std::string OutputDir::path_of(std::string_view name) const { return join(path_, name); }

namespace {

// The directory an output file goes in, which must exist, and the file's name.
std::pair<OutputDir, std::string> output_file_place(const std::string& path) {
  if (path.find('\0') != std::string::npos) throw FileError(shown_path(path), "a NUL byte in the path");
  const auto [dir, name] = split_last(path);
  if (name.empty() || name == "." || name == "..") throw FileError(path, "names a directory, not a file");
  if (!dir.empty()) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) < 0) fail(path, "its directory " + dir + " cannot be used");
    if (!S_ISDIR(st.st_mode)) throw FileError(path, fmt::format("{} is not a directory", dir));
  }
  return {OutputDir::open(dir.empty() ? "." : dir), name};
}

}  // namespace

void write_output_file(const std::string& path, const FillFile& fill, mode_t mode) {
  const auto [dir, name] = output_file_place(path);
  dir.write(name, fill, mode);
}

void write_output_file(const std::string& path, std::string_view contents, mode_t mode) {
  write_output_file(path, fill_with(contents), mode);
}

void check_output_file(const std::string& path) {
  const auto [dir, name] = output_file_place(path);
  dir.check(name);
}

}  // namespace wanlab::base
