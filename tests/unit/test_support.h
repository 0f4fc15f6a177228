// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the unit tests: source-tree paths and file reading.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace rdmactl::test {

inline std::string source_path(const std::string& relative) {
  return std::string(RDMACTL_SOURCE_DIR) + "/" + relative;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace rdmactl::test
