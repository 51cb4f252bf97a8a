// The subcommands' options: the table parser is base's (wanlab/base/options.hpp,
// shared with the benchmarks), driven by each command's table (commands.cpp);
// here what the commands' options have in common beyond it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/options.hpp"
#include "wanlab/emulator/testbed.hpp"
#include "wanlab/emulator/verify.hpp"

namespace wanlab::cli {

using base::HelpRequested;
using base::usage_of;
using base::UsageError;

// --release auto|fq|nfqueue (default auto); a UsageError if it is none of them.
emulator::ReleaseChoice release_option(const Options& options);

// --<tolerance> P%, --<slack> T and --<attempts> N (each optional; defaults as
// VerifyOptions), a UsageError naming the option if malformed. `goodput` is left false.
emulator::VerifyOptions verify_options(const Options& options, const std::string& tolerance, const std::string& slack,
                                       const std::string& attempts);

// --image IMG of `launch` and `train`, checked as podman's argv may carry it
// (emulator::check_image_reference): a UsageError naming --image.
void image_option(const std::string& image);

// --testbed NAME, checked against the testbed name rule (a UsageError if broken).
std::optional<std::string> testbed_option(const Options& options);
// A testbed name from the command line, checked the same way; `where` names
// the option or argument in the message.
std::string checked_testbed_name(const std::string& name, std::string_view where);

// --out DIR: opened (made where absent) and given to `check` (which throws
// base::FileError for an output that could not be written) before any work
// starts, so a bad one is a UsageError naming the option rather than a run's
// work thrown away.
std::optional<base::OutputDir> out_dir_option(const Options& options,
                                              const std::function<void(const base::OutputDir&)>& check = {});
// --out FILE: checked the same way (its directory exists; nothing, or a
// regular file, stands there); its path, for base::write_output_file.
std::optional<std::string> out_file_option(const Options& options);

}  // namespace wanlab::cli
