#include "options.hpp"

#include "wanlab/emulator/launch.hpp"
#include "wanlab/emulator/names.hpp"

namespace wanlab::cli {

emulator::VerifyOptions verify_options(const Options& options, const std::string& tolerance, const std::string& slack,
                                       const std::string& attempts) {
  emulator::VerifyOptions verify;
  verify.attempts = base::parsed_option(options, attempts, emulator::parse_verify_attempts).value_or(verify.attempts);
  verify.tolerance =
      base::parsed_option(options, tolerance, emulator::parse_verify_tolerance).value_or(verify.tolerance);
  verify.slack_ns = base::parsed_option(options, slack, emulator::parse_verify_slack).value_or(verify.slack_ns);
  return verify;
}

std::string checked_testbed_name(const std::string& name, std::string_view where) {
  try {
    emulator::check_testbed_name(name, where);
  } catch (const emulator::InvalidName& error) {
    throw UsageError(error.what());
  }
  return name;
}

emulator::ReleaseChoice release_option(const Options& options) {
  try {
    return emulator::parse_release_choice(options.get("release").value_or("auto"));
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

void image_option(const std::string& image) {
  try {
    emulator::check_image_reference(image);
  } catch (const std::invalid_argument& error) {
    throw UsageError(std::string("--image: ") + error.what());
  }
}

std::optional<std::string> testbed_option(const Options& options) {
  const auto name = options.get("testbed");
  if (!name) return std::nullopt;
  return checked_testbed_name(*name, "--testbed");
}

std::optional<base::OutputDir> out_dir_option(const Options& options,
                                              const std::function<void(const base::OutputDir&)>& check) {
  return base::output_dir_option(options, "out", check);
}

std::optional<std::string> out_file_option(const Options& options) { return base::output_file_option(options, "out"); }

}  // namespace wanlab::cli
