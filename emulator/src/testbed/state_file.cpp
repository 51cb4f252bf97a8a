// A testbed's run directory, /run/wanlab/<name>/, the names derived from the
// testbed's, and its state file, state.toml: written by `up` and `attach`,
// read by every later command. Read strictly: what it names becomes
// namespaces we delete, interfaces we change and processes we signal, so each
// such field must be exactly what we would have written for this testbed.
#include <arpa/inet.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <sstream>
#include <toml++/toml.h>

#include "scenario/scenario_reader.hpp"
#include "testbed/strict_toml.hpp"
#include "testbed/testbed_internal.hpp"
#include "wanlab/base/files.hpp"
#include "wanlab/base/parse.hpp"
#include "wanlab/base/sys.hpp"
#include "wanlab/emulator/names.hpp"
#include "wanlab/emulator/rtnl.hpp"

namespace wanlab::emulator {
namespace detail {
namespace {

using namespace std::string_view_literals;

// 128 DCs x 254 hosts at about 250 bytes a host, with room to spare.
constexpr std::size_t kMaxStateBytes = 32u << 20;

constexpr std::array kStateKeys{"name"sv,
                                "scenario"sv,
                                "release"sv,
                                "release_reason"sv,
                                "daemon_pid"sv,
                                "created_unix"sv,
                                "created_mono_ns"sv,
                                "kind"sv,
                                "netns"sv,
                                "queue_num"sv,
                                "dev"sv,
                                "created_clsact"sv,
                                "created_fq"sv,
                                "dcs"sv,
                                "hosts"sv,
                                "sysctls"sv,
                                "machine"sv};
constexpr std::array kMachineKeys{"role"sv, "dc"sv, "address"sv, "gateway_address"sv, "routes"sv};
constexpr std::array kSysctlKeys{"path"sv, "before"sv};
constexpr std::array kHostKeys{"name"sv,  "dc"sv,   "dc_index"sv, "index"sv,
                               "netns"sv, "ipv4"sv, "ipv6"sv,     "core_ifname"sv};

std::optional<std::uint32_t> parse_ipv4(const std::string& text) {
  in_addr addr{};
  if (::inet_pton(AF_INET, text.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

std::optional<std::array<std::uint8_t, 16>> parse_ipv6(const std::string& text) {
  std::array<std::uint8_t, 16> addr{};
  if (::inet_pton(AF_INET6, text.c_str(), addr.data()) != 1) return std::nullopt;
  return addr;
}

// A field that must hold exactly what we derive from the testbed's name.
void expect_equal(const StrictToml& file, const toml::table& table, std::string_view key, std::string_view field,
                  const std::string& expected) {
  const std::string value = file.string(table, key, field);
  if (value != expected)
    file.fail(*table.get(key), field, fmt::format("expected {}, got {}", base::quoted(expected), base::quoted(value)));
}

std::string one_of(const StrictToml& file, const toml::table& table, std::string_view key, std::string_view field,
                   std::initializer_list<std::string_view> allowed) {
  const std::string value = file.string(table, key, field);
  for (std::string_view candidate : allowed)
    if (value == candidate) return value;
  file.fail(*table.get(key), field, fmt::format("unexpected value {}", base::quoted(value)));
}

std::vector<std::string> read_dcs(const StrictToml& file) {
  std::vector<std::string> dcs;
  const toml::array& list = file.array(file.root(), "dcs", "dcs");
  if (list.size() > WANLAB_MAX_DCS) file.fail(list, "dcs", fmt::format("more than {} DCs", WANLAB_MAX_DCS));
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = fmt::format("dcs[{}]", i);
    std::string dc = file.string(list[i], field);
    if (!is_valid_dc_name(dc)) file.fail(list[i], field, fmt::format("not a DC name: {}", base::quoted(dc)));
    dcs.push_back(std::move(dc));
  }
  return dcs;
}

Host read_host(const StrictToml& file, const toml::node& node, std::size_t position, const TestbedState& state) {
  const std::string field = fmt::format("hosts[{}]", position);
  const toml::table& table = file.entry(node, field, kHostKeys);
  Host host;
  const auto dc_count = static_cast<std::int64_t>(state.dcs.size());
  host.dc_index = static_cast<int>(file.integer(table, "dc_index", field + ".dc_index", 0, dc_count - 1));
  host.dc = state.dcs[static_cast<std::size_t>(host.dc_index)];
  expect_equal(file, table, "dc", field + ".dc", host.dc);
  host.index = static_cast<int>(file.integer(table, "index", field + ".index", 0, 253));
  host.name = fmt::format("{}-{}", host.dc, host.index);
  expect_equal(file, table, "name", field + ".name", host.name);
  host.netns = host_netns(state.name, host.name);
  expect_equal(file, table, "netns", field + ".netns", host.netns);
  host.core_ifname = fmt::format("wanlabh{}", position);
  expect_equal(file, table, "core_ifname", field + ".core_ifname", host.core_ifname);
  const auto ipv4 = parse_ipv4(file.string(table, "ipv4", field + ".ipv4"));
  if (!ipv4) file.fail(*table.get("ipv4"), field + ".ipv4", "not an IPv4 address");
  host.ipv4 = *ipv4;
  const auto ipv6 = parse_ipv6(file.string(table, "ipv6", field + ".ipv6"));
  if (!ipv6) file.fail(*table.get("ipv6"), field + ".ipv6", "not an IPv6 address");
  host.ipv6 = *ipv6;
  return host;
}

std::uint32_t read_ipv4(const StrictToml& file, const toml::table& table, std::string_view key,
                        const std::string& field) {
  const auto address = parse_ipv4(file.string(table, key, field));
  if (!address) file.fail(*table.get(key), field, "not an IPv4 address");
  return *address;
}

// The sysctls attach's local detour may have changed, and only from 0 or 1:
// down writes these files back as root, so nothing else may be named here.
void check_sysctl(const StrictToml& file, const toml::node& node, const std::string& field, const std::string& path,
                  const std::string& before, const TestbedState& state) {
  const auto allowed = local_detour_sysctls(state.dev);
  const bool known =
      std::any_of(allowed.begin(), allowed.end(), [&](const auto& sysctl) { return sysctl.first == path; });
  if (!known) file.fail(node, field + ".path", fmt::format("not a sysctl attach changes: {}", base::quoted(path)));
  if (before != "0" && before != "1") file.fail(node, field + ".before", fmt::format("expected \"0\" or \"1\""));
}

// `wanlab join`'s part ([machine]); absent for every other testbed.
void read_machine(const StrictToml& file, TestbedState& state) {
  const toml::node* node = file.root().get("machine");
  if (node == nullptr) {
    if (state.kind == TestbedKind::member) file.fail(file.root(), "machine", "missing; a member testbed has one");
    return;
  }
  if (state.kind == TestbedKind::namespaces) file.fail(*node, "machine", "a namespace testbed has no machine part");
  const toml::table& table = file.entry(*node, "machine", kMachineKeys);
  MachinePart part;
  part.gateway = one_of(file, table, "role", "machine.role", {"gateway", "member"}) == "gateway";
  if (part.gateway != (state.kind == TestbedKind::attached))
    file.fail(*table.get("role"), "machine.role", "does not match the testbed's kind");
  part.dc = file.string(table, "dc", "machine.dc");
  if (std::find(state.dcs.begin(), state.dcs.end(), part.dc) == state.dcs.end())
    file.fail(*table.get("dc"), "machine.dc", fmt::format("not one of the testbed's DCs: {}", base::quoted(part.dc)));
  part.address = read_ipv4(file, table, "address", "machine.address");
  part.gateway_address = read_ipv4(file, table, "gateway_address", "machine.gateway_address");
  const toml::array& routes = file.array(table, "routes", "machine.routes");
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const std::string field = fmt::format("machine.routes[{}]", i);
    try {
      part.routes.push_back(parse_ipv4_prefix(file.string(routes[i], field)));
    } catch (const std::invalid_argument& error) {
      file.fail(routes[i], field, error.what());
    }
  }
  if (part.gateway && !part.routes.empty())
    file.fail(*table.get("routes"), "machine.routes", "a gateway adds no routes; its members do");
  state.machine = std::move(part);
}

// `sysctls`: what attach's detour changed ([] for other testbeds).
void read_sysctls(const StrictToml& file, TestbedState& state) {
  const toml::array& sysctls = file.array(file.root(), "sysctls", "sysctls");
  if (state.kind != TestbedKind::attached && !sysctls.empty())
    file.fail(sysctls, "sysctls", "only an attached testbed changes sysctls");
  for (std::size_t i = 0; i < sysctls.size(); ++i) {
    const std::string field = fmt::format("sysctls[{}]", i);
    const toml::table& entry = file.entry(sysctls[i], field, kSysctlKeys);
    std::string path = file.string(entry, "path", field + ".path");
    std::string before = file.string(entry, "before", field + ".before");
    check_sysctl(file, sysctls[i], field, path, before, state);
    state.sysctls.emplace_back(std::move(path), std::move(before));
  }
}

toml::table machine_table(const MachinePart& part) {
  toml::array routes;
  for (const Ipv4Prefix& prefix : part.routes)
    routes.push_back(fmt::format("{}/{}", ipv4_to_string(prefix.addr), prefix.len));
  return toml::table{{"role", part.gateway ? "gateway" : "member"},
                     {"dc", part.dc},
                     {"address", ipv4_to_string(part.address)},
                     {"gateway_address", ipv4_to_string(part.gateway_address)},
                     {"routes", routes}};
}

const char* kind_name(TestbedKind kind) {
  switch (kind) {
    case TestbedKind::namespaces: return "namespaces";
    case TestbedKind::attached: return "attached";
    case TestbedKind::member: return "member";
  }
  return "namespaces";
}

void read_attachment(const StrictToml& file, TestbedState& state) {
  const toml::table& root = file.root();
  state.dev = file.string(root, "dev", "dev");
  state.created_clsact = file.boolean(root, "created_clsact", "created_clsact");
  state.created_fq = file.boolean(root, "created_fq", "created_fq");
  if (state.kind == TestbedKind::namespaces) {
    if (!state.dev.empty() || state.created_clsact || state.created_fq)
      file.fail(root, "dev", "a namespace testbed is attached to no interface");
    return;
  }
  if (state.kind == TestbedKind::member && (state.created_clsact || state.created_fq))
    file.fail(root, "created_clsact", "a member machine adds no qdisc");
  if (!is_valid_interface_name(state.dev))
    file.fail(*root.get("dev"), "dev", fmt::format("not an interface name: {}", base::quoted(state.dev)));
}

}  // namespace

void make_directory(const std::string& path, mode_t mode, bool may_exist) {
  if (::mkdir(path.c_str(), mode) == 0) return;
  const int err = errno;
  struct stat st {};
  if (err != EEXIST || !may_exist) base::throw_errno("creating " + path, err);
  if (::lstat(path.c_str(), &st) < 0) base::throw_errno("checking " + path);
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": exists and is not a directory; remove it");
}

std::string state_path(const std::string& testbed) { return run_dir(testbed) + "/state.toml"; }
std::string changes_path(const std::string& testbed) { return run_dir(testbed) + "/changes.toml"; }

void create_run_dir(TestbedState& state, const Scenario& scenario) {
  make_directory(kRunRoot, 0755, true);
  make_directory(run_dir(state.name), 0700, false);
  state.scenario_path = run_dir(state.name) + "/scenario.toml";
  // The text that was parsed, not the file again: it may have changed or be a pipe.
  base::replace_file(state.scenario_path, scenario.source, 0600);
  if (!state.hosts.empty()) write_identity_files(state);
  write_state(state);
}

void mount_bpffs(const std::string& testbed) {
  const std::string dir = bpffs_dir(testbed);
  make_directory(dir, 0700, false);
  base::check(::mount("bpf", dir.c_str(), "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700"),
              testbed + ": mounting bpffs at " + dir);
}

void write_state(const TestbedState& state) {
  toml::array hosts;
  for (const Host& host : state.hosts) {
    hosts.push_back(toml::table{{"name", host.name},
                                {"dc", host.dc},
                                {"dc_index", host.dc_index},
                                {"index", host.index},
                                {"netns", host.netns},
                                {"ipv4", ipv4_to_string(host.ipv4)},
                                {"ipv6", ipv6_to_string(host.ipv6)},
                                {"core_ifname", host.core_ifname}});
  }
  toml::array dcs;
  for (const auto& dc : state.dcs) dcs.push_back(dc);
  toml::table root{{"name", state.name},
                   {"scenario", state.scenario_path},
                   {"release", to_string(state.release)},
                   {"release_reason", state.release_reason},
                   {"daemon_pid", static_cast<std::int64_t>(state.daemon_pid)},
                   {"created_unix", state.created_unix},
                   {"created_mono_ns", static_cast<std::int64_t>(state.created_mono_ns)},
                   {"kind", kind_name(state.kind)},
                   {"netns", state.netns},
                   {"queue_num", static_cast<std::int64_t>(state.queue_num)},
                   {"dev", state.dev},
                   {"created_clsact", state.created_clsact},
                   {"created_fq", state.created_fq},
                   {"dcs", dcs},
                   {"hosts", hosts}};
  toml::array sysctls;
  for (const auto& [path, before] : state.sysctls) sysctls.push_back(toml::table{{"path", path}, {"before", before}});
  root.insert("sysctls", sysctls);
  if (state.machine) root.insert("machine", machine_table(*state.machine));
  std::ostringstream text;
  text << root << "\n";
  try {
    base::replace_file(state_path(state.name), text.str());
  } catch (const base::FileError& error) {
    throw std::runtime_error(state.name + ": writing the state file: " + error.what());
  }
}

}  // namespace detail

using namespace detail;

std::string hosts_file_text(const std::vector<Host>& hosts) {
  std::string text =
      "# written by wanlab: the emulated hosts of one testbed\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
      "ip6-loopback\n";
  for (const Host& host : hosts) text += fmt::format("{}\t{}\n", ipv4_to_string(host.ipv4), host.name);
  return text;
}

std::string hosts_file_path(const std::string& testbed) { return run_dir(testbed) + "/hosts"; }
std::string resolv_conf_path(const std::string& testbed) { return run_dir(testbed) + "/resolv.conf"; }

void detail::write_identity_files(const TestbedState& state) {
  base::replace_file(hosts_file_path(state.name), hosts_file_text(state.hosts), 0644);
  // No name server: glibc then asks 127.0.0.1, which refuses at once.
  base::replace_file(resolv_conf_path(state.name),
                     "# written by wanlab: no DNS server is reachable from the emulated hosts;\n"
                     "# their names are in /etc/hosts (wanlab hosts lists them)\n",
                     0644);
}

base::HostIdentity host_identity(const TestbedState& state, const Host& host) {
  if (!std::filesystem::exists(resolv_conf_path(state.name))) write_identity_files(state);
  return {host.name, {{hosts_file_path(state.name), "/etc/hosts"}, {resolv_conf_path(state.name), "/etc/resolv.conf"}}};
}

const Host& TestbedState::host(const std::string& host_name) const {
  for (const Host& h : hosts)
    if (h.name == host_name) return h;
  std::string known;
  for (const Host& h : hosts) known += (known.empty() ? "" : ", ") + h.name;
  throw std::runtime_error(fmt::format("{}: no host {} (hosts: {})", name, base::quoted(host_name), known));
}

std::string run_dir(const std::string& testbed) {
  // The name rule keeps the path one plain component below the run root.
  check_testbed_name(testbed, "testbed");
  return std::string(kRunRoot) + "/" + testbed;
}
std::string bpffs_dir(const std::string& testbed) { return run_dir(testbed) + "/bpf"; }
// '.' cannot appear in a testbed name, so one testbed's names never prefix another's.
std::array<std::uint8_t, 16> dc_prefix_v6(int dc) {
  return {0xfd, 0x77, 0, 0, 0, 0, static_cast<std::uint8_t>(dc >> 8), static_cast<std::uint8_t>(dc), 0, 0,
          0,    0,    0, 0, 0, 0};
}

std::string core_netns(const std::string& testbed) {
  check_testbed_name(testbed, "testbed");
  return kPrefix + testbed + ".core";
}

std::string host_netns(const std::string& testbed, const std::string& host) {
  check_testbed_name(testbed, "testbed");
  if (!is_valid_host_name(host))
    throw InvalidName(fmt::format("host name {}: expected <dc>-<index>", base::quoted(host)));
  return kPrefix + testbed + "." + host;
}

TestbedState load_state(const std::string& name) {
  check_testbed_name(name, "testbed");
  return read_state_file(state_path(name), name);
}

TestbedState read_state_file(const std::string& path, const std::string& name) {
  check_testbed_name(name, "testbed");
  const StrictToml file(path, kMaxStateBytes);
  const toml::table& root = file.root();
  file.only_keys(root, kStateKeys, "state");
  TestbedState state;
  state.name = name;
  expect_equal(file, root, "name", "name", name);
  state.scenario_path = run_dir(name) + "/scenario.toml";
  expect_equal(file, root, "scenario", "scenario", state.scenario_path);
  const std::string kind = one_of(file, root, "kind", "kind", {"namespaces", "attached", "member"});
  state.kind = kind == "attached" ? TestbedKind::attached
               : kind == "member" ? TestbedKind::member
                                  : TestbedKind::namespaces;
  state.netns = state.kind == TestbedKind::namespaces ? core_netns(name) : kPrefix + name + kAttachedSuffix;
  expect_equal(file, root, "netns", "netns", state.netns);
  state.release =
      one_of(file, root, "release", "release", {"fq", "nfqueue"}) == "fq" ? ReleasePath::fq : ReleasePath::nfqueue;
  state.release_reason = file.string(root, "release_reason", "release_reason");
  state.daemon_pid = static_cast<pid_t>(file.integer(root, "daemon_pid", "daemon_pid", 0, 0x3fffffff));
  state.created_unix = file.integer(root, "created_unix", "created_unix", 0, INT64_MAX);
  state.created_mono_ns =
      static_cast<std::uint64_t>(file.integer(root, "created_mono_ns", "created_mono_ns", 0, INT64_MAX));
  state.queue_num = static_cast<std::uint16_t>(file.integer(root, "queue_num", "queue_num", 0, 65535));
  read_attachment(file, state);
  state.dcs = read_dcs(file);
  const toml::array& hosts = file.array(root, "hosts", "hosts");
  if (state.kind != TestbedKind::namespaces && !hosts.empty())
    file.fail(hosts, "hosts", "an attached testbed has no hosts of its own");
  for (std::size_t i = 0; i < hosts.size(); ++i) state.hosts.push_back(read_host(file, hosts[i], i, state));
  read_sysctls(file, state);
  read_machine(file, state);
  return state;
}

}  // namespace wanlab::emulator
