// The one rule for testbed names. A name becomes a directory under
// /run/wanlab, the prefix of namespace names (wanlab-<name>.<host>), a match
// for processes and a word in commands we print; wanlab runs as root, so every
// entry point (scenario `name`, --name, --testbed, $WANLAB_TESTBED, state
// files, directory listings) checks it before using it for any of these.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace wanlab::emulator {

inline constexpr std::size_t kMaxTestbedName = 12;
/// How the rule reads in messages.
inline constexpr std::string_view kTestbedNameRule =
    "1 to 12 characters from [a-z0-9-], starting with a letter or digit";

/// A name that breaks the rule; what() names where it came from.
class InvalidName : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// No separators ('/', '.'), no "", "." or "..", nothing a shell would act on,
/// never long: [a-z0-9-]{1,12} not starting with '-'.
bool is_valid_testbed_name(std::string_view name);
/// Throws InvalidName: `WHERE: testbed name "X": expected 1 to 12 ...`; the
/// name is shown quoted and cut short.
void check_testbed_name(std::string_view name, std::string_view where);

/// Hosts are "<dc>-<index>": a DC name ([a-z][a-z0-9]{0,14}) and a number.
bool is_valid_dc_name(std::string_view name);
bool is_valid_host_name(std::string_view name);

/// A machine's host name (RFC 1123): labels of [A-Za-z0-9-], not starting
/// or ending with '-', joined by '.'; at most 253 characters.
bool is_valid_machine_name(std::string_view name);

/// An interface name we may pass to the kernel and to iptables' argv (where
/// '+' is a wildcard): 1 to 15 of [A-Za-z0-9_.@:-].
bool is_valid_interface_name(std::string_view name);

}  // namespace wanlab::emulator
