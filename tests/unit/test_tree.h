// SPDX-License-Identifier: Apache-2.0
// A temporary directory tree for --root tests, removed when the test ends.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rdmactl::test {

class TempTree {
 public:
  TempTree() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rdmactl-test-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  ~TempTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  const std::string& root() const { return root_; }
  // Writes `content` to root + host_path, creating directories.
  void write(const std::string& host_path, const std::string& content) const {
    const std::filesystem::path full = root_ + host_path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full) << content;
  }
  void symlink(const std::string& target, const std::string& host_path) const {
    const std::filesystem::path full = root_ + host_path;
    std::filesystem::create_directories(full.parent_path());
    std::filesystem::create_symlink(target, full);
  }
  std::string read(const std::string& host_path) const {
    std::ifstream in(root_ + host_path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string root_;
};

}  // namespace rdmactl::test
