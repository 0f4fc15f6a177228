// SPDX-License-Identifier: Apache-2.0
// The spec cache's entries (agent/spec/cache.h): every field survives the round trip, and an
// entry's name tells builds, names and texts apart. (Its directory: tests/unit/cli/spec_cache_test.cpp.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "agent/spec/cache.h"
#include "agent/spec/spec.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace spec_spec_cache_test {

namespace fs = std::filesystem;

SourceMark mark(const std::string& path, int line) { return SourceMark{"f.yaml", line, line + 1, path}; }

// A FabricSpec with every field of every type set to something other than its default.
FabricSpec full_spec() {
  InterfaceSpec interface;
  interface.selector = Selector{Selector::Kind::kPci, "0000:3b:00.0", 2};
  interface.link_type = "ethernet";
  interface.firmware = FirmwareSpec{"28.42.1000", "/srv/fw", "update", "reset", true, mark("firmware", 3)};
  interface.mtu = 9000;
  interface.state = "up";
  interface.addresses = std::vector<std::string>{"10.0.0.1/24", "fd00::1/64"};
  interface.qos = QosSpec{"roce-lossless", 4, "dscp", std::map<int, int>{{26, 3}, {48, 6}}, std::vector<int>{3}};
  interface.ecn = EcnSpec{std::vector<int>{3, 4}, 48};
  interface.roce = RoceSpec{"v2", 106};
  interface.ipoib = IpoibSpec{"connected"};
  interface.sriov.num_vfs = 8;
  interface.nvconfig = {{"ADVANCED_PCI_SETTINGS", "True"}, {"MAX_ACC_OUT_READ", "0"}};
  interface.pcie.max_read_request = 4096;
  interface.irq_affinity = "local";
  interface.ethtool.rings = EthtoolRingsSpec{8192, 1, 2, 4096};
  interface.ethtool.channels = EthtoolChannelsSpec{3, 4, 1, 32};
  interface.ethtool.pause = EthtoolPauseSpec{false, true, false};
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

// The entry of a spec that sets MTU 9000, its text and name.
struct SpecCacheEntry {
  FabricSpec spec;
  std::string bytes;
};
SpecCacheEntry mtu_9000_entry() {
  auto spec = load_spec_text(
      "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: bits}\n"
      "defaults:\n  interfaces:\n    - {name: eth0, mtu: 9000, addresses: [10.0.0.1/24]}\n",
      "f.yaml");
  EXPECT_TRUE(spec.has_value()) << spec.error().to_string();
  if (!spec) return {};
  std::string bytes = spec_cache_bytes(*spec, "f.yaml");
  return {std::move(*spec), std::move(bytes)};
}

TEST(SpecCache, AFlippedBitInTheMtuIsAMissNotMtu9001) {
  const SpecCacheEntry entry = mtu_9000_entry();
  ASSERT_FALSE(entry.bytes.empty());
  // 9000 as the entry writes an int: zigzag 18000, LEB128 d0 8c 01. Its lowest bit flipped but one
  // (d2 8c 01) reads as 9001.
  const std::string mtu = "\xd0\x8c\x01";
  const std::size_t at = entry.bytes.find(mtu);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(entry.bytes.find(mtu, at + 1), std::string::npos) << "the MTU is the entry's one 9000";
  std::string flipped = entry.bytes;
  flipped[at] = static_cast<char>(flipped[at] ^ 0x02);
  const auto back = spec_from_cache_bytes(flipped, "f.yaml", entry.spec.text);
  EXPECT_FALSE(back.has_value()) << "read back with MTU "
                                 << (back ? back->defaults.interfaces.at(0).mtu.value_or(0) : 0);
  // The entry as written is still a hit.
  const auto intact = spec_from_cache_bytes(entry.bytes, "f.yaml", entry.spec.text);
  ASSERT_TRUE(intact.has_value());
  EXPECT_TRUE(*intact == entry.spec);
}

TEST(SpecCache, EveryFlippedBitOfAnEntryIsAMiss) {
  const SpecCacheEntry entry = mtu_9000_entry();
  ASSERT_FALSE(entry.bytes.empty());
  std::size_t different = 0;
  std::string first;
  for (std::size_t i = 0; i < entry.bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = entry.bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      if (spec_from_cache_bytes(flipped, "f.yaml", entry.spec.text).has_value()) {
        if (different++ == 0) first = "byte " + std::to_string(i) + " bit " + std::to_string(bit);
      }
    }
  }
  EXPECT_EQ(different, 0u) << "of " << entry.bytes.size() * 8 << " single-bit flips were read as a spec, the first at "
                           << first;
}

}  // namespace spec_spec_cache_test
}  // namespace rdmactl
