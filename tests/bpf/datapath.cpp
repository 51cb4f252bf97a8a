// The loader (wanlab::emulator::Datapath): argument checks, error messages,
// pinning into a bpffs and reopening from the pins. Needs root.
#include <boost/test/unit_test.hpp>

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/pkt_cls.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "wanlab/base/clock.hpp"
#include "wanlab/emulator/datapath.hpp"

using wanlab::emulator::Datapath;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

// The data plane's clock (base/clock.hpp), unsigned as its timestamps are.
std::uint64_t monotonic_ns() { return static_cast<std::uint64_t>(wanlab::base::monotonic_ns()); }

// A private bpffs on a fresh temporary directory, gone with everything
// pinned in it when this goes out of scope.
class BpfFs {
 public:
  BpfFs() {
    char pattern[] = "/tmp/wanlab-bpffs-XXXXXX";
    BOOST_REQUIRE_MESSAGE(::mkdtemp(pattern), "mkdtemp: " << std::strerror(errno));
    dir_ = pattern;
    if (::mount("bpf", dir_.c_str(), "bpf", 0, nullptr) != 0) {
      int err = errno;
      ::rmdir(dir_.c_str());
      BOOST_FAIL("mounting bpffs on " << dir_ << ": " << std::strerror(err));
    }
  }
  ~BpfFs() {
    ::umount2(dir_.c_str(), MNT_DETACH);
    ::rmdir(dir_.c_str());
  }
  BpfFs(const BpfFs&) = delete;
  BpfFs& operator=(const BpfFs&) = delete;
  const std::string& dir() const { return dir_; }
  std::string path(const char* name) const { return dir_ + "/" + name; }
  bool exists(const char* name) const {
    struct stat st {};
    return ::stat(path(name).c_str(), &st) == 0;
  }

 private:
  std::string dir_;
};

template <typename Exception, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  }
  BOOST_FAIL("no exception");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// 10.0.0.1 -> 10.1.0.1 over UDP, 100 bytes.
std::vector<std::uint8_t> packet_0_to_1() {
  std::vector<std::uint8_t> out{0x02, 0, 0,  0,  0, 2, 0x02, 0,    0,    0,    0, 1,  0x08, 0x00,
                                0x45, 0, 0,  86, 0, 1, 0x40, 0,    64,   17,   0, 0,  10,   0,
                                0,    1, 10, 1,  0, 1, 0x0f, 0xa0, 0x13, 0x88, 0, 66, 0,    0};
  out.resize(100, 0xab);
  return out;
}

struct Run {
  int verdict;
  std::uint64_t tstamp, before, after;
};

Run run(const Datapath& datapath) {
  std::vector<std::uint8_t> packet = packet_0_to_1();
  __sk_buff ctx{};
  bpf_test_run_opts opts{};
  opts.sz = sizeof(opts);
  opts.data_in = packet.data();
  opts.data_size_in = static_cast<__u32>(packet.size());
  opts.ctx_in = &ctx;
  opts.ctx_size_in = sizeof(ctx);
  opts.ctx_out = &ctx;
  opts.ctx_size_out = sizeof(ctx);
  Run out{};
  out.before = monotonic_ns();
  BOOST_REQUIRE_MESSAGE(bpf_prog_test_run_opts(datapath.program_fd(), &opts) == 0,
                        "BPF_PROG_TEST_RUN: " << std::strerror(errno));
  out.after = monotonic_ns();
  out.verdict = static_cast<int>(opts.retval);
  out.tstamp = ctx.tstamp;
  return out;
}

Datapath two_dcs() {
  Datapath datapath = Datapath::load(2, WANLAB_RELEASE_FQ);
  datapath.set_dc_prefix_v4(0x0a000000, 16, 0);
  datapath.set_dc_prefix_v4(0x0a010000, 16, 1);
  return datapath;
}

wanlab_pair_config delay_of(std::uint64_t delay_ns) {
  wanlab_pair_config config{};
  config.delay_ns = delay_ns;
  config.flags = WANLAB_PAIR_ENABLED;
  config.generation = 1;
  return config;
}

}  // namespace

BOOST_AUTO_TEST_CASE(load_sizes_pair_maps_and_starts_disabled) {
  for (int dcs : {1, 5, WANLAB_MAX_DCS}) {
    for (auto mode : {WANLAB_RELEASE_FQ, WANLAB_RELEASE_NFQUEUE}) {
      Datapath datapath = Datapath::load(dcs, mode);
      BOOST_TEST(datapath.program_fd() >= 0);
      BOOST_TEST(datapath.num_dcs() == dcs);
      wanlab_pair_config last = datapath.pair(dcs - 1, dcs - 1);
      BOOST_TEST(last.flags == 0u);
      BOOST_TEST(datapath.stats(dcs - 1, 0).packets == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(load_rejects_bad_arguments_with_a_message) {
  BOOST_TEST(contains(error_of<std::invalid_argument>([] { Datapath::load(0, WANLAB_RELEASE_FQ); }),
                      "0 DCs, expected 1..128"));
  BOOST_TEST(contains(error_of<std::invalid_argument>([] { Datapath::load(129, WANLAB_RELEASE_FQ); }), "129 DCs"));
  BOOST_TEST(contains(error_of<std::invalid_argument>([] { Datapath::load(2, static_cast<wanlab_release_mode>(7)); }),
                      "release mode 7"));
}

BOOST_AUTO_TEST_CASE(unprivileged_load_fails_with_context_and_prints_nothing) {
  // In a child that gave up root: the error names the step and the cause,
  // and libbpf's own messages go into it instead of onto stderr.
  int message_pipe[2], stderr_pipe[2];
  BOOST_REQUIRE(::pipe(message_pipe) == 0 && ::pipe(stderr_pipe) == 0);
  pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(stderr_pipe[1], STDERR_FILENO);
    std::string message = "no error";
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      message = "could not drop root";
    } else {
      try {
        Datapath::load(2, WANLAB_RELEASE_FQ);
      } catch (const std::exception& e) {
        message = e.what();
      }
    }
    ssize_t written = ::write(message_pipe[1], message.data(), message.size());
    ::_exit(written == static_cast<ssize_t>(message.size()) ? 0 : 1);
  }
  ::close(message_pipe[1]);
  ::close(stderr_pipe[1]);
  auto read_all = [](int fd) {
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) text.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    return text;
  };
  std::string message = read_all(message_pipe[0]);
  std::string printed = read_all(stderr_pipe[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST_MESSAGE("unprivileged load: " << message);
  BOOST_TEST(message.starts_with("loading tc program: Operation not permitted"), message);
  BOOST_TEST(contains(message, "CAP_BPF"));
  BOOST_TEST(printed.empty(), "stderr: " << printed);
}

BOOST_AUTO_TEST_CASE(index_and_config_errors_name_the_pair) {
  Datapath datapath = Datapath::load(3, WANLAB_RELEASE_FQ);
  wanlab_pair_config config = delay_of(kMs);
  BOOST_TEST(error_of<std::out_of_range>([&] { datapath.set_pair(3, 0, config); }) ==
             "pair 3->0: DC index out of range 0..2");
  BOOST_TEST(contains(error_of<std::out_of_range>([&] { datapath.stats(0, -1); }), "pair 0->-1"));
  BOOST_TEST(contains(error_of<std::out_of_range>([&] { datapath.pair(5, 5); }), "pair 5->5"));
  BOOST_TEST(contains(error_of<std::out_of_range>([&] { datapath.state(0, 3); }), "pair 0->3"));
  config.loss_model = 9;
  BOOST_TEST(error_of<std::invalid_argument>([&] { datapath.set_pair(0, 1, config); }) ==
             "pair 0->1: loss model 9 unknown");
  config.loss_model = WANLAB_LOSS_BERNOULLI;
  config.flags = 0x10 | WANLAB_PAIR_ENABLED;
  BOOST_TEST(error_of<std::invalid_argument>([&] { datapath.set_pair(0, 1, config); }) ==
             "pair 0->1: unknown flags 0x11");
  BOOST_TEST(datapath.pair(0, 1).delay_ns == 0u);  // nothing half-written
}

BOOST_AUTO_TEST_CASE(prefix_errors_name_the_prefix) {
  Datapath datapath = Datapath::load(2, WANLAB_RELEASE_FQ);
  BOOST_TEST(error_of<std::invalid_argument>([&] { datapath.set_dc_prefix_v4(0x0a010000, 33, 0); }) ==
             "DC prefix 10.1.0.0/33: prefix length out of range 0..32");
  BOOST_TEST(error_of<std::out_of_range>([&] { datapath.set_dc_prefix_v4(0x0a010000, 16, 2); }) ==
             "DC prefix 10.1.0.0/16: DC 2 out of range 0..1");
  std::array<std::uint8_t, 16> v6{0x20, 0x01, 0x0d, 0xb8};
  BOOST_TEST(error_of<std::invalid_argument>([&] { datapath.set_dc_prefix_v6(v6, 129, 0); }) ==
             "DC prefix 2001:db8::/129: prefix length out of range 0..128");
  BOOST_TEST(
      contains(error_of<std::out_of_range>([&] { datapath.set_dc_prefix_v6(v6, 32, -1); }), "DC -1 out of range"));
}

BOOST_AUTO_TEST_CASE(pair_config_round_trips) {
  Datapath datapath = Datapath::load(4, WANLAB_RELEASE_NFQUEUE);
  wanlab_pair_config config{};
  config.rate_bps = 123'000'000;
  config.flow_rate_bps = 4'000'000;
  config.delay_ns = 35 * kMs;
  config.jitter_ns = 2 * kMs;
  config.queue_limit_ns = 70 * kMs;
  config.loss_model = WANLAB_LOSS_GILBERT_ELLIOTT;
  config.loss_p32 = 11;
  config.ge_r32 = 22;
  config.ge_bad_loss32 = 33;
  config.ge_good_loss32 = 44;
  config.flags = WANLAB_PAIR_ENABLED | WANLAB_PAIR_REORDER;
  config.seed = 0xfeedface;
  config.generation = 5;
  datapath.set_pair(3, 2, config);
  wanlab_pair_config back = datapath.pair(3, 2);
  BOOST_TEST(std::memcmp(&back, &config, sizeof(config)) == 0);
  BOOST_TEST(datapath.pair(2, 3).flags == 0u);  // the reverse direction is its own pair
}

BOOST_AUTO_TEST_CASE(host_bits_of_a_prefix_are_ignored) {
  Datapath datapath = two_dcs();
  datapath.set_pair(0, 1, delay_of(30 * kMs));
  // 10.1.77.77/16 is 10.1.0.0/16: it replaces DC 1's entry rather than adding one.
  datapath.set_dc_prefix_v4(0x0a014d4d, 16, 0);
  Run out = run(datapath);  // now 10.0.0.1 -> 10.1.0.1 is pair 0 -> 0, not enabled
  BOOST_TEST(out.tstamp == 0u);
  datapath.set_dc_prefix_v4(0x0a01ffff, 16, 1);
  out = run(datapath);
  BOOST_TEST(out.tstamp >= out.before + 30 * kMs);
}

BOOST_AUTO_TEST_CASE(moved_datapath_keeps_its_program) {
  Datapath first = two_dcs();
  int fd = first.program_fd();
  Datapath second = std::move(first);
  BOOST_TEST(second.program_fd() == fd);
  second.set_pair(0, 1, delay_of(10 * kMs));
  Run out = run(second);
  BOOST_TEST(out.tstamp >= out.before + 10 * kMs);
  first = std::move(second);  // and back
  BOOST_TEST(first.program_fd() == fd);
}

BOOST_AUTO_TEST_CASE(pinned_maps_reopen_in_another_handle) {
  BpfFs bpffs;
  Datapath loaded = two_dcs();
  loaded.pin(bpffs.dir());
  for (const char* name :
       {"dc_of_v4", "dc_of_v6", "pair_config", "pair_state", "pair_stats", "flow_state", "wanlab_tc"}) {
    BOOST_TEST_INFO(name);
    BOOST_TEST(bpffs.exists(name));
  }

  Datapath pinned = Datapath::open_pinned(bpffs.dir());
  BOOST_TEST(pinned.num_dcs() == 2);
  BOOST_TEST(pinned.program_fd() == -1);

  // A change through the pins reaches the running program ...
  pinned.set_pair(0, 1, delay_of(42 * kMs));
  BOOST_TEST(loaded.pair(0, 1).delay_ns == 42 * kMs);
  Run out = run(loaded);
  BOOST_TEST(out.verdict == TC_ACT_OK);
  BOOST_TEST(out.tstamp >= out.before + 42 * kMs);
  BOOST_TEST(out.tstamp <= out.after + 42 * kMs);
  // ... and its counters and state read back through them.
  BOOST_TEST(pinned.stats(0, 1).packets == 1u);
  BOOST_TEST(pinned.stats(0, 1).bytes == 100u);
  BOOST_TEST(pinned.state(0, 1).last_depart_ns == out.tstamp);
  pinned.set_dc_prefix_v4(0x0a010000, 16, 0);  // prefixes too
  BOOST_TEST(run(loaded).tstamp == 0u);

  // The pins keep the maps alive without the loader.
  { Datapath gone = std::move(loaded); }
  BOOST_TEST(pinned.pair(0, 1).delay_ns == 42 * kMs);
  BOOST_TEST(Datapath::open_pinned(bpffs.dir()).stats(0, 1).packets == 1u);
}

BOOST_AUTO_TEST_CASE(pinning_is_all_or_nothing) {
  BpfFs bpffs;
  Datapath first = two_dcs();
  Datapath second = two_dcs();
  // Someone else's pin where pair_state would go.
  int stranger = bpf_map_create(BPF_MAP_TYPE_ARRAY, "stranger", 4, 8, 1, nullptr);
  BOOST_REQUIRE(stranger >= 0);
  BOOST_REQUIRE(bpf_obj_pin(stranger, bpffs.path("pair_state").c_str()) == 0);
  ::close(stranger);

  std::string error = error_of<std::runtime_error>([&] { first.pin(bpffs.dir()); });
  BOOST_TEST(error == "pinning " + bpffs.path("pair_state") + ": File exists");
  for (const char* name : {"dc_of_v4", "dc_of_v6", "pair_config", "pair_stats", "wanlab_tc"}) {
    BOOST_TEST_INFO(name);
    BOOST_TEST(!bpffs.exists(name));
  }
  BOOST_TEST(bpffs.exists("pair_state"));  // the stranger's pin is left alone
  // Reopening finds the stranger and says what is wrong with it.
  error = error_of<std::runtime_error>([&] { Datapath::open_pinned(bpffs.dir()); });
  BOOST_TEST(contains(error, "opening pinned map " + bpffs.path("dc_of_v4")));
  BOOST_TEST(contains(error, "No such file or directory"));
  ::unlink(bpffs.path("pair_state").c_str());
  second.pin(bpffs.dir());
  BOOST_TEST(Datapath::open_pinned(bpffs.dir()).num_dcs() == 2);
}

BOOST_AUTO_TEST_CASE(open_pinned_rejects_maps_of_another_layout) {
  BpfFs bpffs;
  Datapath datapath = two_dcs();
  datapath.pin(bpffs.dir());
  ::unlink(bpffs.path("pair_config").c_str());
  int wrong = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pair_config", 4, 72, 4, nullptr);
  BOOST_REQUIRE(wrong >= 0);
  BOOST_REQUIRE(bpf_obj_pin(wrong, bpffs.path("pair_config").c_str()) == 0);
  ::close(wrong);
  BOOST_TEST(error_of<std::runtime_error>([&] { Datapath::open_pinned(bpffs.dir()); }) ==
             bpffs.path("pair_config") + ": value size 72, expected 80 (pinned by a different wanlab build?)");
}

BOOST_AUTO_TEST_CASE(open_pinned_on_a_missing_directory_names_it) {
  std::string error = error_of<std::runtime_error>([] { Datapath::open_pinned("/nonexistent/wanlab"); });
  BOOST_TEST(error == "opening pinned map /nonexistent/wanlab/dc_of_v4: No such file or directory");
}
