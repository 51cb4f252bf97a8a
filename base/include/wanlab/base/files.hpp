// Reading and replacing files that others may have tampered with: input files
// people name on the command line, and the state files under the run directory.
// wanlab runs as root, so a read must not hang on a FIFO or swallow /dev/zero,
// and a write must never go through a symbolic link planted where it writes.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace wanlab::base {

/// A file that cannot be read or written as asked. what() is one line that
/// starts with the path: "x.toml: not a regular file (a FIFO)".
class FileError : public std::runtime_error {
 public:
  FileError(const std::string& path, const std::string& reason)
      : std::runtime_error(path + ": " + reason), reason_(reason) {}
  /// The message without the path.
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

struct ReadRules {
  std::size_t max_bytes = 16u << 20;
  /// false: a symbolic link as the last component is refused (O_NOFOLLOW).
  bool follow_symlinks = true;
};

/// The whole of a regular file of at most rules.max_bytes. Opens without
/// blocking (a FIFO is refused, not waited on) and stops reading one byte past
/// the limit (a file that grows while read is refused too). Throws FileError.
std::string read_regular_file(const std::string& path, const ReadRules& rules = {});

/// A small file of the kernel's (/proc, /sys), at most 1 MiB. Throws FileError.
std::string read_kernel_file(const std::string& path);

/// Replaces `path` with `contents`: writes a new file beside it, created with
/// O_EXCL under a random name (so nothing planted there is written through),
/// then renames it over `path`, which replaces a link rather than follow it.
/// Readers see the old or the new contents, never a part. Throws FileError.
void replace_file(const std::string& path, std::string_view contents, mode_t mode = 0644);

/// "1.5 MiB", "512 B": a size for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace wanlab::base
