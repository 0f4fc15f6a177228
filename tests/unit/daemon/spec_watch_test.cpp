// SPDX-License-Identifier: Apache-2.0
// SpecWatch on a real directory: each way a spec file is replaced (spec_watch.h), and what the
// events say. inotify queues an event when the syscall happens, so each read follows its writes.
#include "agent/daemon/spec_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace daemon_spec_watch_test {

namespace fs = std::filesystem;
using Seen = SpecWatch::Seen;

class SpecWatchTest : public ::testing::Test {
 protected:
  SpecWatch watch(const std::string& spec) {
    auto opened = SpecWatch::open(tree_.root() + spec);
    EXPECT_TRUE(opened) << opened.error().to_string();
    return std::move(opened).value();
  }
  std::string path(const std::string& p) const { return tree_.root() + p; }
  test::TempTree tree_;
};

TEST_F(SpecWatchTest, ARenameOverTheSpecIsWhole) {
  tree_.write("/fabric.yaml", "a: 1\n");
  SpecWatch w = watch("/fabric.yaml");
  EXPECT_EQ(w.read_events(), Seen::kNothing);
  tree_.write("/.fabric.yaml.swp", "a: 2\n");  // an editor's temporary: not the spec
  EXPECT_EQ(w.read_events(), Seen::kNothing);
  fs::rename(path("/.fabric.yaml.swp"), path("/fabric.yaml"));
  EXPECT_EQ(w.read_events(), Seen::kWhole);
}

TEST_F(SpecWatchTest, AWriteInPlaceIsChangingUntilItsWriterCloses) {
  tree_.write("/fabric.yaml", "a: 1\n");
  SpecWatch w = watch("/fabric.yaml");
  {
    std::ofstream out(path("/fabric.yaml"), std::ios::trunc);
    out << "a: " << std::flush;
    EXPECT_EQ(w.read_events(), Seen::kChanging);
    out << "2\n" << std::flush;
    EXPECT_EQ(w.read_events(), Seen::kChanging);
  }
  EXPECT_EQ(w.read_events(), Seen::kWhole);  // IN_CLOSE_WRITE
}

TEST_F(SpecWatchTest, RemovingTheSpecIsAChange) {
  tree_.write("/fabric.yaml", "a: 1\n");
  SpecWatch w = watch("/fabric.yaml");
  fs::remove(path("/fabric.yaml"));
  EXPECT_EQ(w.read_events(), Seen::kChanging);
}

// A ConfigMap volume as kubelet's AtomicWriter lays it out: fabric.yaml -> ..data/fabric.yaml,
// ..data -> ..<timestamp>; an update writes a new timestamped directory, points ..data_tmp at it
// and renames ..data_tmp over ..data.
TEST_F(SpecWatchTest, AConfigMapDataSwapIsWhole) {
  tree_.write("/..2026_12_02_10_00_00.1/fabric.yaml", "a: 1\n");
  tree_.symlink("..2026_12_02_10_00_00.1", "/..data");
  tree_.symlink("..data/fabric.yaml", "/fabric.yaml");
  SpecWatch w = watch("/fabric.yaml");
  tree_.write("/..2026_12_02_10_05_00.2/fabric.yaml", "a: 2\n");
  EXPECT_EQ(w.read_events(), Seen::kNothing) << "the new directory's file is not the spec yet";
  tree_.symlink("..2026_12_02_10_05_00.2", "/..data_tmp");
  EXPECT_EQ(w.read_events(), Seen::kNothing);
  fs::rename(path("/..data_tmp"), path("/..data"));
  EXPECT_EQ(w.read_events(), Seen::kWhole);
  std::ifstream in(path("/fabric.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "a: 2\n");
}

// A spec that is a symlink into another directory (a GitOps checkout): writes there are seen,
// and after the link is pointed elsewhere, writes in the new place are.
TEST_F(SpecWatchTest, ASymlinkedSpecIsWatchedWhereItPoints) {
  tree_.write("/git/a/fabric.yaml", "a: 1\n");
  tree_.write("/git/b/fabric.yaml", "a: 1\n");
  tree_.symlink(path("/git/a/fabric.yaml"), "/etc/fabric.yaml");
  SpecWatch w = watch("/etc/fabric.yaml");
  tree_.write("/git/a/fabric.yaml.new", "a: 2\n");
  fs::rename(path("/git/a/fabric.yaml.new"), path("/git/a/fabric.yaml"));
  EXPECT_EQ(w.read_events(), Seen::kWhole);
  // ln -sfn: a new link renamed over the old one.
  fs::create_symlink(path("/git/b/fabric.yaml"), path("/etc/.fabric.yaml.tmp"));
  fs::rename(path("/etc/.fabric.yaml.tmp"), path("/etc/fabric.yaml"));
  EXPECT_EQ(w.read_events(), Seen::kWhole);
  tree_.write("/git/b/fabric.yaml.new", "a: 3\n");
  fs::rename(path("/git/b/fabric.yaml.new"), path("/git/b/fabric.yaml"));
  EXPECT_EQ(w.read_events(), Seen::kWhole) << "the new target's directory is watched";
}

TEST_F(SpecWatchTest, AMissingDirectoryIsAnError) {
  EXPECT_FALSE(SpecWatch::open(tree_.root() + "/nowhere/fabric.yaml"));
}

}  // namespace daemon_spec_watch_test
}  // namespace rdmactl
