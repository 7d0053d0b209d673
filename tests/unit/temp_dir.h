#pragma once
// Files for tests: a fresh directory under the system's temp dir, removed with everything in it
// when the test ends (one for policy files too), and a file written whole (aside, then renamed over its path) as editors and
// ConfigMap updates do, so a watcher never reads half of it.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace kiln::testing {

class TempDir {
 public:
  // The directory is named <prefix>-<pid>-<n>: tests of one process and of parallel processes
  // never share one.
  explicit TempDir(std::string_view prefix = "kiln-test") {
    path_ = std::filesystem::temp_directory_path() /
            (std::string(prefix) + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter_++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  static inline int counter_ = 0;
};

// A directory of policy files (what --policy-dir names); path() is the string providers take.
class PolicyDir {
 public:
  void Write(const std::string& file, const std::string& text) const {
    std::ofstream(dir_.path() / file) << text;
  }
  std::string path() const { return dir_.path().string(); }

 private:
  TempDir dir_{"kiln-policies"};
};

inline void WriteFileWhole(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace kiln::testing
