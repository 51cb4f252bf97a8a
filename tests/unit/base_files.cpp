// Reading input and state files without hanging, swallowing a device or
// following a planted link; replacing files without writing through one.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "wanlab/base/files.hpp"

namespace fs = std::filesystem;
namespace b = wanlab::base;

namespace {

// A fresh directory under the temporary directory, removed afterwards.
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "wanlab-files-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string at(const std::string& name) const { return (dir / name).string(); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(at(name)) << text; }
  std::string read(const std::string& name) const {
    std::ifstream in(at(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

std::string error_of(const std::string& path, const b::ReadRules& rules = {}) {
  try {
    b::read_regular_file(path, rules);
  } catch (const b::FileError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_regular_file_is_read_whole) {
  Scratch scratch;
  scratch.write("a.toml", "name = \"a\"\n");
  BOOST_TEST(b::read_regular_file(scratch.at("a.toml")) == "name = \"a\"\n");
  scratch.write("empty", "");
  BOOST_TEST(b::read_regular_file(scratch.at("empty")).empty());
}

BOOST_AUTO_TEST_CASE(devices_fifos_and_directories_are_refused_at_once) {
  Scratch scratch;
  BOOST_TEST(error_of("/dev/zero") == "/dev/zero: not a regular file (a character device)");
  BOOST_TEST(error_of(scratch.dir.string()) == scratch.dir.string() + ": not a regular file (a directory)");
  BOOST_REQUIRE(::mkfifo(scratch.at("fifo").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(error_of(scratch.at("fifo")) == scratch.at("fifo") + ": not a regular file (a FIFO)");
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(2)));  // no writer: it must not wait
  BOOST_TEST(error_of(scratch.at("missing")) == scratch.at("missing") + ": cannot open: No such file or directory");
}

BOOST_AUTO_TEST_CASE(files_over_the_limit_are_refused_before_reading) {
  Scratch scratch;
  scratch.write("big", std::string(2000, 'x'));
  BOOST_TEST(error_of(scratch.at("big"), b::ReadRules{1024, true}) ==
             scratch.at("big") + ": 2.0 KiB is over the limit of 1.0 KiB");
  BOOST_TEST(b::read_regular_file(scratch.at("big"), b::ReadRules{2000, true}).size() == 2000u);
}

BOOST_AUTO_TEST_CASE(links_are_refused_where_asked) {
  Scratch scratch;
  scratch.write("target", "secret");
  fs::create_symlink(scratch.at("target"), scratch.at("link"));
  BOOST_TEST(b::read_regular_file(scratch.at("link")) == "secret");
  BOOST_TEST(error_of(scratch.at("link"), b::ReadRules{1024, false}) ==
             scratch.at("link") + ": is a symbolic link; refusing to follow it");
}

// A name from a TOML string may hold a NUL: open() would read the file named
// by what comes before it.
BOOST_AUTO_TEST_CASE(a_name_with_a_nul_byte_is_refused_not_cut) {
  Scratch scratch;
  scratch.write("a", "the prefix's contents");
  const std::string name = scratch.at("a") + std::string(1, '\0') + "b";
  BOOST_TEST(error_of(name) == "\"" + scratch.at("a") + "\\x00b\": a file name with a NUL byte");
}

// A link planted where a root process writes must not have its
// target overwritten.
BOOST_AUTO_TEST_CASE(replacing_never_writes_through_a_planted_link) {
  Scratch scratch;
  scratch.write("victim", "keep me");
  fs::create_symlink(scratch.at("victim"), scratch.at("stats.toml.tmp"));  // the old fixed temporary name
  fs::create_symlink(scratch.at("victim"), scratch.at("stats.toml"));      // the file itself
  b::replace_file(scratch.at("stats.toml"), "packets = 1\n");
  BOOST_TEST(scratch.read("victim") == "keep me");
  BOOST_TEST(!fs::is_symlink(scratch.at("stats.toml")));
  BOOST_TEST(scratch.read("stats.toml") == "packets = 1\n");
  b::replace_file(scratch.at("stats.toml"), "packets = 2\n", 0600);
  BOOST_TEST(scratch.read("stats.toml") == "packets = 2\n");
  struct stat st {};
  BOOST_REQUIRE(::stat(scratch.at("stats.toml").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  // Nothing but the file, the victim and the planted link are left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(scratch.dir)) ++entries;
  BOOST_TEST(entries == 3);
}

BOOST_AUTO_TEST_CASE(replacing_in_a_missing_directory_names_the_path) {
  try {
    b::replace_file("/nonexistent-dir/x.toml", "x");
    BOOST_FAIL("wrote");
  } catch (const b::FileError& error) {
    BOOST_TEST(std::string(error.what()).starts_with("/nonexistent-dir/x.toml: creating a file in /nonexistent-dir"));
  }
}

// --- outputs a user names (--out): OutputDir and write_output_file ---

namespace {

std::string output_error(const std::function<void()>& write) {
  try {
    write();
  } catch (const b::FileError& error) {
    return error.what();
  }
  return "(no error)";
}

std::size_t entries_in(const fs::path& dir) {
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++entries;
  return entries;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_output_dir_is_made_with_its_parents_and_written) {
  Scratch scratch;
  const auto out = b::OutputDir::open(scratch.at("a/b/c"));
  out.write("results.json", "{}\n");
  out.subdir("ranks").write("rank-0.json", [](std::ostream& file) { file << "[" << 0 << "]"; });
  BOOST_TEST(scratch.read("a/b/c/results.json") == "{}\n");
  BOOST_TEST(scratch.read("a/b/c/ranks/rank-0.json") == "[0]");
  out.write("results.json", "{\"again\": 1}\n");  // a regular file is replaced
  BOOST_TEST(scratch.read("a/b/c/results.json") == "{\"again\": 1}\n");
  BOOST_TEST(entries_in(scratch.dir / "a/b/c") == 2u);  // no temporary left beside them
  BOOST_TEST(out.path_of("trace.json") == scratch.at("a/b/c") + "/trace.json");
}

// A link planted in DIR where a run writes is refused, never written through
// nor replaced; its target keeps what it had.
BOOST_AUTO_TEST_CASE(links_planted_in_an_output_dir_are_refused) {
  Scratch scratch;
  scratch.write("victim", "keep me");
  fs::create_directory(scratch.at("victim-dir"));
  const auto out = b::OutputDir::open(scratch.at("out"));
  fs::create_symlink(scratch.at("victim"), scratch.at("out/results.json"));
  fs::create_symlink(scratch.at("victim-dir"), scratch.at("out/ranks"));
  BOOST_TEST(output_error([&] { out.write("results.json", "x"); }) ==
             scratch.at("out/results.json") + ": a symbolic link; outputs are written only as regular files");
  BOOST_TEST(output_error([&] { out.check("results.json"); }) ==
             scratch.at("out/results.json") + ": a symbolic link; outputs are written only as regular files");
  BOOST_TEST(output_error([&] { out.subdir("ranks"); }) ==
             scratch.at("out/ranks") + ": a symbolic link; refusing to write through it");
  BOOST_TEST(output_error([&] { out.check("ranks", true); }) ==
             scratch.at("out/ranks") + ": a symbolic link; refusing to write through it");
  BOOST_TEST(scratch.read("victim") == "keep me");
  BOOST_TEST(entries_in(scratch.dir / "victim-dir") == 0u);
  BOOST_TEST(entries_in(scratch.dir / "out") == 2u);  // the two links, nothing beside them
}

// What stands at an output's name must be a regular file or nothing: a
// device node (made here, in the scratch directory: never the real
// /dev/null), a FIFO or a directory stays what it was.
BOOST_AUTO_TEST_CASE(devices_fifos_and_directories_are_never_replaced_by_an_output) {
  Scratch scratch;
  BOOST_REQUIRE(::mknod(scratch.at("null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
  BOOST_REQUIRE(::mkfifo(scratch.at("fifo").c_str(), 0600) == 0);
  fs::create_directory(scratch.at("dir"));
  BOOST_TEST(output_error([&] { b::write_output_file(scratch.at("null"), "x"); }) ==
             scratch.at("null") + ": a character device; outputs are written only as regular files");
  BOOST_TEST(output_error([&] { b::check_output_file(scratch.at("fifo")); }) ==
             scratch.at("fifo") + ": a FIFO; outputs are written only as regular files");
  BOOST_TEST(output_error([&] { b::write_output_file(scratch.at("dir"), "x"); }) ==
             scratch.at("dir") + ": a directory; outputs are written only as regular files");
  BOOST_TEST(output_error([&] { b::write_output_file(scratch.at("dir") + "/", "x"); }) ==
             scratch.at("dir") + "/: names a directory, not a file");
  BOOST_TEST(output_error([&] {
               b::write_output_file(scratch.at("missing/plot.svg"), "x");
             }).starts_with(scratch.at("missing/plot.svg") + ": its directory " + scratch.at("missing")));
  struct stat st {};
  BOOST_REQUIRE(::lstat(scratch.at("null").c_str(), &st) == 0);
  BOOST_TEST(S_ISCHR(st.st_mode));
  BOOST_REQUIRE(::lstat(scratch.at("fifo").c_str(), &st) == 0);
  BOOST_TEST(S_ISFIFO(st.st_mode));
  BOOST_TEST(entries_in(scratch.dir) == 3u);
  b::write_output_file(scratch.at("plot.svg"), "<svg/>");
  BOOST_TEST(scratch.read("plot.svg") == "<svg/>");
}

// The directory a user names may itself be a link (theirs); what the run
// makes below it is not followed.
BOOST_AUTO_TEST_CASE(a_named_output_dir_may_be_a_link_the_user_made) {
  Scratch scratch;
  fs::create_directory(scratch.at("real"));
  fs::create_directory_symlink(scratch.at("real"), scratch.at("results"));
  b::OutputDir::open(scratch.at("results/run1")).write("results.json", "{}");
  BOOST_TEST(scratch.read("real/run1/results.json") == "{}");
  scratch.write("file", "");
  BOOST_TEST(output_error([&] { b::OutputDir::open(scratch.at("file/x")); }) ==
             scratch.at("file") + ": not a directory (a regular file)");
}

BOOST_AUTO_TEST_CASE(output_names_stay_in_their_directory) {
  Scratch scratch;
  const auto out = b::OutputDir::open(scratch.at("out"));
  for (const std::string& name : std::vector<std::string>{"..", ".", "", "a/b", std::string("a\0b", 3)})
    BOOST_TEST(output_error([&] { out.write(name, "x"); }).ends_with(": not a plain file name"), name);
  BOOST_TEST(output_error([&] { b::OutputDir::open(std::string("out\0x", 5)); }).ends_with(": a NUL byte in the path"));
  BOOST_TEST(entries_in(scratch.dir / "out") == 0u);
}
