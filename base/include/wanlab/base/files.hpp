// Reading and replacing files that others may have tampered with: input files
// people name on the command line, and the state files under the run directory.
// wanlab runs as root, so a read must not hang on a FIFO or swallow /dev/zero,
// and a write must never go through a symbolic link planted where it writes,
// nor replace a device or FIFO someone named as an output.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "wanlab/base/sys.hpp"

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

/// Fills a file being written (an output stream over its descriptor).
using FillFile = std::function<void(std::ostream&)>;

/// Replaces `path` with `contents`: writes a new file beside it, created with
/// O_EXCL under a random name (so nothing planted there is written through),
/// then renames it over `path`, which replaces a link rather than follow it.
/// Readers see the old or the new contents, never a part. For wanlab's own
/// files (the run directory); what a user names goes through OutputDir or
/// write_output_file. Throws FileError.
void replace_file(const std::string& path, std::string_view contents, mode_t mode = 0644);

/// A directory a user named for a command's outputs (`--out DIR`), held open
/// from before the work starts until the last file is written.
///
/// The components of the path that exist are taken as the user named them
/// (a link there is the user's); every directory this creates, and every
/// subdirectory and file it writes inside, is opened relative to the held
/// descriptor with O_NOFOLLOW, so a link planted inside redirects nothing.
/// A file is written only where nothing, or a regular file, stands: a
/// symbolic link, a device, a FIFO, a socket or a directory at its name is
/// refused, not replaced or written through. Every error is a FileError whose
/// message starts with the path: "out/ranks: a symbolic link; refusing to
/// write through it".
class OutputDir {
 public:
  /// Opens `path`, creating it and its missing parents (mode 0755).
  static OutputDir open(const std::string& path);

  /// The subdirectory `name` (one component), created if absent.
  OutputDir subdir(std::string_view name) const;
  /// Replaces the file `name` (one component) with what `fill` writes, or
  /// with `contents`, atomically (a temporary beside it, renamed over it).
  void write(std::string_view name, const FillFile& fill, mode_t mode = 0644) const;
  void write(std::string_view name, std::string_view contents, mode_t mode = 0644) const;
  /// Throws unless a file `name` could be written (nothing or a regular file
  /// there), or with `directory`, a subdirectory made: for checking every
  /// output before a long run rather than after it.
  void check(std::string_view name, bool directory = false) const;

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view name) const;

 private:
  OutputDir(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  UniqueFd fd_;
};

/// One output file a user named (`--out FILE`): its directory must exist;
/// at `path` nothing or a regular file (never /dev/null, a FIFO, a link);
/// replaced atomically. Throws FileError.
void write_output_file(const std::string& path, std::string_view contents, mode_t mode = 0644);
void write_output_file(const std::string& path, const FillFile& fill, mode_t mode = 0644);
/// The same checks without writing: for before the work starts.
void check_output_file(const std::string& path);

/// "1.5 MiB", "512 B": a size for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace wanlab::base
