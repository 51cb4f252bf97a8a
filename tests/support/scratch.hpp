// A scratch directory for a test's files, removed with the object.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace wanlab::test {

struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& what)
      : dir(std::filesystem::temp_directory_path() / ("wanlab-" + what + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // Writes `text` to `name` in the directory; returns its path.
  std::string file(const std::string& name, const std::string& text) const {
    const std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

}  // namespace wanlab::test
