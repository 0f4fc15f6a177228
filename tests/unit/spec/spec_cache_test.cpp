// SPDX-License-Identifier: Apache-2.0
// The spec cache (agent/spec/cache.h): every field survives the round trip, a hit is what was
// kept, and anything odd in the cache directory is a miss that loads the spec as without a cache.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/spec/cache.h"
#include "agent/spec/spec.h"
#include "tests/unit/test_support.h"
#include "tests/unit/test_tree.h"

namespace rdmactl {
namespace {

namespace fs = std::filesystem;

SourceMark mark(const std::string& path, int line) { return SourceMark{"f.yaml", line, line + 1, path}; }

// A FabricSpec with every field of every type set to something other than its default.
FabricSpec full_spec() {
  InterfaceSpec interface;
  interface.selector = Selector{Selector::Kind::kPci, "0000:3b:00.0", 2};
  interface.link_type = "ethernet";
  interface.firmware = FirmwareSpec{"28.42.1000", "/srv/fw", "update", "reset", mark("firmware", 3)};
  interface.mtu = 9000;
  interface.state = "up";
  interface.addresses = std::vector<std::string>{"10.0.0.1/24", "fd00::1/64"};
  interface.qos = QosSpec{"roce-lossless", 4, "dscp", std::map<int, int>{{26, 3}, {48, 6}}, std::vector<int>{3}};
  interface.ecn = EcnSpec{std::vector<int>{3, 4}, 48};
  interface.roce = RoceSpec{"v2", 106};
  interface.ipoib = IpoibSpec{"connected"};
  interface.rail = "rail0";
  interface.origin = mark("defaults.interfaces[0]", 5);
  interface.field_origins = {{"mtu", mark("nodes[0].interfaces[0]", 30)}};
  interface.field_marks = {{"mtu", mark("defaults.interfaces[0].mtu", 6)}, {"qos.pfc", mark("q", 7)}};

  PartitionSpec partition{"storage", 0x8001 & 0x7fff, true, 4096, 100.0, 2,
                          {PartitionMemberSpec{"ALL", "full"}, PartitionMemberSpec{"0x0002c90300a1b2c3", "limited"}},
                          mark("defaults.subnetManager.partitions[0]", 9)};
  SubnetManagerSpec sm{true, 14, Selector{Selector::Kind::kRdmaDevice, "mlx5_1", 1},
                       std::vector<PartitionSpec>{partition}, "north", mark("defaults.subnetManager", 8)};
  RailSpec rail{"rail0", {"10.0.0.0/24", "10.1.0.0/24"}, 4200, mark("rails[0]", 2)};

  NodeSpec defaults;
  defaults.interfaces = {interface};
  defaults.subnet_manager = sm;
  defaults.sysctl = {{"net.ipv4.tcp_ecn", "1"}};
  defaults.sysctl_origins = {{"net.ipv4.tcp_ecn", mark("defaults.sysctl", 12)}};
  defaults.selftest = SelftestSpec{true, 0.75, std::vector<std::string>{"10.0.0.2"}};
  defaults.rails = {rail};

  FabricSpec spec;
  spec.file = "f.yaml";
  spec.sha256 = "";  // set by the caller from the text
  spec.name = "everything";
  spec.defaults = defaults;
  NodeEntry entry;
  entry.match = {"gpu-*", "cpu-[0-9]"};
  entry.spec = defaults;
  entry.spec.interfaces[0].selector = Selector{Selector::Kind::kName, "ens1f0np0", 1};
  entry.origin = mark("nodes[0]", 20);
  spec.nodes = {entry};
  spec.fabric = FabricExpectation{4, "HDR", 2, 16, 1, {{"SymbolErrorCounter", 10}, {"LinkDownedCounter", 1ull << 40}},
                                  mark("fabric", 40)};
  spec.rails = {rail};
  spec.warnings = {SpecWarning{"cnp-pfc", Diagnostic{"f.yaml", 7, 9, "defaults.interfaces[0].ecn", "CNPs on PFC"}}};
  return spec;
}

TEST(SpecCache, EveryFieldOfAFullSpecSurvives) {
  const std::string text = "the spec's bytes\n";
  FabricSpec spec = full_spec();
  spec.text = text;
  spec.sha256 = "a8b6f84d5fb6ba6d2dbe3be42a4b4f7e6e2bd04e0d5e8e6b39cbdbd19bc1bb86";
  // Only the true sha256 of the text is accepted back.
  const auto wrong = spec_from_cache_bytes(spec_cache_bytes(spec, "f.yaml"), "f.yaml", text);
  EXPECT_FALSE(wrong.has_value());

  auto loaded = load_spec_text(
      "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: x}\n", "f.yaml");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  spec.text = loaded->text;
  spec.sha256 = loaded->sha256;
  const auto back = spec_from_cache_bytes(spec_cache_bytes(spec, "f.yaml"), "f.yaml", spec.text);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == spec);
  // The comparison sees a change anywhere (it is the structs' own, field by field).
  FabricSpec changed = spec;
  changed.nodes[0].spec.interfaces[0].field_marks["qos.pfc"].column = 99;
  EXPECT_FALSE(changed == spec);
}

TEST(SpecCache, EveryExampleAndFixtureSpecSurvives) {
  std::vector<std::string> files;
  for (const auto& dir : {"examples", "examples/fleet", "tests/fixtures/specs"}) {
    const fs::path path = test::source_path(dir);
    if (!fs::is_directory(path)) continue;
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
    }
  }
  ASSERT_GE(files.size(), 5u);
  for (const std::string& file : files) {
    auto spec = load_spec(file);
    if (!spec) continue;  // fleet state directories hold other YAML
    const auto back = spec_from_cache_bytes(spec_cache_bytes(*spec, spec->file), spec->file, spec->text);
    ASSERT_TRUE(back.has_value()) << file;
    EXPECT_TRUE(*back == *spec) << file;
  }
}

TEST(SpecCache, TheNameTellsBuildFileAndTextApart) {
  EXPECT_FALSE(program_build_id().empty()) << "the test program has no GNU build ID (ld --build-id)";
  const std::string base = spec_cache_name("b1", "f.yaml", "text");
  EXPECT_EQ(base, spec_cache_name("b1", "f.yaml", "text"));
  EXPECT_NE(base, spec_cache_name("b2", "f.yaml", "text"));
  EXPECT_NE(base, spec_cache_name("b1", "g.yaml", "text"));
  EXPECT_NE(base, spec_cache_name("b1", "f.yaml", "text2"));
  // The separator keeps "f" + "a.yaml" from meeting "fa" + ".yaml".
  EXPECT_NE(spec_cache_name("b1", "f", "a.yaml"), spec_cache_name("b1", "fa", ".yaml"));
}

class SpecCacheDir : public testing::Test {
 protected:
  const std::string kText =
      "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: cached}\n"
      "defaults:\n  interfaces:\n    - {name: eth0, mtu: 9000}\n";
  test::TempTree tree;
  std::string dir = tree.root() + kSpecCacheDirectory;
  std::string spec_path = tree.root() + "/fabric.yaml";

  void SetUp() override { tree.write("/fabric.yaml", kText); }
  std::string entry() const { return dir + "/" + spec_cache_name(program_build_id(), spec_path, kText); }
};

TEST_F(SpecCacheDir, AMissKeepsTheSpecAndAHitReadsIt) {
  auto first = load_spec_cached(spec_path, dir);
  ASSERT_TRUE(first.has_value()) << first.error().to_string();
  ASSERT_TRUE(fs::exists(entry()));
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(entry().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // A hit returns what the entry holds: an entry kept with another name for the same key shows it.
  FabricSpec planted = *first;
  planted.name = "from the cache";
  std::ofstream(entry(), std::ios::trunc | std::ios::binary) << spec_cache_bytes(planted, spec_path);
  auto second = load_spec_cached(spec_path, dir);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->name, "from the cache");
  EXPECT_EQ(second->text, kText);
  EXPECT_EQ(second->sha256, first->sha256);
  planted.text = kText;
  EXPECT_TRUE(*second == planted);
}

TEST_F(SpecCacheDir, ABrokenEntryIsAMissAndIsReplaced) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  std::ofstream(entry(), std::ios::binary) << "\xff\x00 not an entry";
  auto spec = load_spec_cached(spec_path, dir);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "cached");
  const auto back = spec_from_cache_bytes(tree.read(entry().substr(tree.root().size())), spec_path, kText);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(*back == *spec);
}

TEST_F(SpecCacheDir, ALinkInTheCacheIsNotFollowed) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  FabricSpec planted = *load_spec_text(kText, spec_path);
  planted.name = "through a link";
  tree.write("/elsewhere.bin", spec_cache_bytes(planted, spec_path));
  fs::create_symlink(tree.root() + "/elsewhere.bin", entry());
  auto spec = load_spec_cached(spec_path, dir);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "cached");
}

TEST_F(SpecCacheDir, AnInvalidSpecIsNeverKept) {
  tree.write("/fabric.yaml", kText + "bogus: 1\n");
  auto spec = load_spec_cached(spec_path, dir);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().kind, ErrorKind::kInvalidSpec);
  ASSERT_FALSE(spec.error().diagnostics.empty());
  EXPECT_EQ(spec.error().diagnostics[0].line, 7);
  EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir));
}

TEST_F(SpecCacheDir, NoCacheWhereTheDirectoryCannotBeMade) {
  tree.write("/var/cache", "a file where the directory would go");
  auto spec = load_spec_cached(spec_path, dir);
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string();
  EXPECT_EQ(spec->name, "cached");
  // A directory that others may write (anyone could plant an entry) is not used either.
  test::TempTree other;
  const std::string open_dir = other.root() + "/cache";
  fs::create_directories(open_dir);
  fs::permissions(open_dir, fs::perms::all, fs::perm_options::replace);
  FabricSpec planted = *spec;
  planted.name = "planted";
  std::ofstream(open_dir + "/" + spec_cache_name(program_build_id(), spec_path, kText), std::ios::binary)
      << spec_cache_bytes(planted, spec_path);
  auto again = load_spec_cached(spec_path, open_dir);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->name, "cached");
}

TEST_F(SpecCacheDir, OnlyTheNewestEntriesStay) {
  for (std::size_t i = 0; i < kSpecCacheEntries + 4; ++i) {
    tree.write("/fabric.yaml", kText + "# revision " + std::to_string(i) + "\n");
    ASSERT_TRUE(load_spec_cached(spec_path, dir).has_value());
  }
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().extension() == ".bin";
  EXPECT_EQ(entries, kSpecCacheEntries);
  // The newest is among them.
  const std::string newest = kText + "# revision " + std::to_string(kSpecCacheEntries + 3) + "\n";
  EXPECT_TRUE(fs::exists(dir + "/" + spec_cache_name(program_build_id(), spec_path, newest)));
}

}  // namespace
}  // namespace rdmactl
