// SPDX-License-Identifier: Apache-2.0
// mstflint.h: the query parsers table-driven over tests/fixtures/tools/mstflint/ (real captures, see
// its SOURCES.md), version comparison, burn progress across chunk boundaries, and the tool wrappers
// against the fake mstflint and mstfwreset of tests/fake-tools (models of mstflint v4.21.0-1).
#include "agent/platform/mstflint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/reconcilers/fake_tools.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace platform_mstflint_test {

using namespace std::chrono_literals;

std::string fixture(const std::string& name) {
  return test::read_file(test::source_path("tests/fixtures/tools/mstflint/" + name));
}

std::string case_name(const std::string& file) {
  std::string name;
  for (char ch : file.substr(0, file.find('.'))) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

// --- parse_flint_query -------------------------------------------------------------------------

struct FlintCase {
  std::string file;
  FlintQuery want;
};

class FlintQueryParseTest : public ::testing::TestWithParam<FlintCase> {};

TEST_P(FlintQueryParseTest, ReadsTheKeys) {
  const FlintCase& c = GetParam();
  auto q = parse_flint_query(fixture(c.file));
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(q->image_type, c.want.image_type);
  EXPECT_EQ(q->fw_version, c.want.fw_version);
  EXPECT_EQ(q->running_version, c.want.running_version);
  EXPECT_EQ(q->product_version, c.want.product_version);
  EXPECT_EQ(q->psid, c.want.psid);
  EXPECT_EQ(q->security, c.want.security);
}

INSTANTIATE_TEST_SUITE_P(
    Captures, FlintQueryParseTest,
    ::testing::Values(
        // A burnt image waits: FW Version is the one on flash, FW Version(Running) the loaded one.
        FlintCase{"cx6-q-pending.txt", {"FS4", "20.35.1012", "20.34.1002", "20.35.1012", "MT_0000000228", "N/A"}},
        FlintCase{"cx6-i-image-q.txt", {"FS4", "20.36.1012", "", "rel-20_35_1012", "MT_0000000228", "N/A"}},
        FlintCase{"cx7-q-secure-fw.txt", {"FS4", "28.43.1014", "", "28.43.1014", "MT_0000001244", "secure-fw"}},
        FlintCase{"cx6dx-q.txt", {"FS4", "22.27.1016", "", "22.27.1016", "MT_0000000359", "N/A"}},
        FlintCase{"oem-psid-written.txt",
                  {"FS4", "28.43.1014", "", "28.43.1014", "HP_2420110034", "secure-fw, dev"}}),
    [](const ::testing::TestParamInfo<FlintCase>& info) { return case_name(info.param.file); });

struct RefusedCase {
  std::string file;
  std::string message;
};

class FlintQueryRefusedTest : public ::testing::TestWithParam<RefusedCase> {};

TEST_P(FlintQueryRefusedTest, QuotesTheToolsError) {
  auto q = parse_flint_query(fixture(GetParam().file));
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(q.error().message, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Captures, FlintQueryRefusedTest,
    ::testing::Values(
        RefusedCase{"q-no-device.txt",
                    "mstflint: -E- Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR"},
        RefusedCase{"q-image-invalid.txt", "mstflint: -E- Failed to query image: /tmp/t4/zero.bin. No valid image found"},
        RefusedCase{"q-image-missing.txt",
                    "mstflint: -E- Cannot open Image: /tmp/t4/nonexist.bin. Can not open file "
                    "\"/tmp/t4/nonexist.bin\" - No such file or directory"},
        // Another tool's output: no FW Version line.
        RefusedCase{"mstfwreset-q-pci-reset-only.txt", "unexpected mstflint query output: no \"FW Version:\" line"}),
    [](const ::testing::TestParamInfo<RefusedCase>& info) { return case_name(info.param.file); });

TEST(FlintQueryParseTest, CarriageReturnsAndEmptyOutput) {
  auto q = parse_flint_query("Image type:            FS4\r\nFW Version:            28.42.1000\r\n"
                             "PSID:                  DEL0000000027\r\n");
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(q->fw_version, "28.42.1000");
  EXPECT_EQ(q->psid, "DEL0000000027");
  EXPECT_FALSE(q->pending());
  EXPECT_EQ(q->running(), "28.42.1000");
  EXPECT_FALSE(parse_flint_query(""));
}

TEST(FlintQueryParseTest, PendingAndRunning) {
  auto q = parse_flint_query(fixture("cx6-q-pending.txt"));
  ASSERT_TRUE(q);
  EXPECT_TRUE(q->pending());
  EXPECT_EQ(q->running(), "20.34.1002");
}

// The adapter's identity: "Base GUID:"/"Base MAC:" and, when the UIDs in use are not the
// manufacturing ones, "Orig Base ...:" after them (printFs3OrNewerUids); an image file prints N/A.
TEST(FlintQueryParseTest, BaseUidsAndTheManufacturingOnes) {
  auto dx = parse_flint_query(fixture("cx6dx-q.txt"));
  ASSERT_TRUE(dx);
  EXPECT_EQ(dx->base_guid, "1c34da0300a1b2c4");
  EXPECT_EQ(dx->base_mac, "1c34daa1b2c4");
  EXPECT_EQ(dx->orig_base_mac, "");
  EXPECT_EQ(dx->manufacturing_mac(), "1c34daa1b2c4");
  auto cx7 = parse_flint_query(fixture("cx7-q-secure-fw.txt"));
  ASSERT_TRUE(cx7);
  EXPECT_EQ(cx7->manufacturing_mac(), "a088c2f1e2d0");
  EXPECT_EQ(cx7->manufacturing_guid(), "a088c20300f1e2d0");
  auto changed = parse_flint_query(fixture("orig-uids-written.txt"));
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->base_mac, "0002c9a0b0c0");
  EXPECT_EQ(changed->orig_base_mac, "1c34daa1b2c4");
  EXPECT_EQ(changed->manufacturing_mac(), "1c34daa1b2c4") << "mstfwreset pairs by MGIR's manufacturing MAC";
  EXPECT_EQ(changed->manufacturing_guid(), "1c34da0300a1b2c4");
  auto image = parse_flint_query(fixture("cx6-i-image-q.txt"));
  ASSERT_TRUE(image);
  EXPECT_EQ(image->manufacturing_mac(), "") << "N/A";
  EXPECT_EQ(image->manufacturing_guid(), "");
}

// --- parse_mstfwreset_query --------------------------------------------------------------------

struct ResetCase {
  std::string file;
  std::string levels;  // "0:- 3:S* 4:S": S supported, - not, * default
  int default_level;
};

std::string describe(const FwResetQuery& q) {
  std::string out;
  for (const FwResetLevel& l : q.levels) {
    if (!out.empty()) out += ' ';
    out += std::to_string(l.level) + ":" + (l.supported ? "S" : "-") + (l.is_default ? "*" : "");
  }
  return out;
}

class MstfwresetParseTest : public ::testing::TestWithParam<ResetCase> {};

TEST_P(MstfwresetParseTest, ReadsTheResetLevels) {
  auto q = parse_mstfwreset_query(fixture(GetParam().file));
  ASSERT_TRUE(q) << q.error().to_string();
  EXPECT_EQ(describe(*q), GetParam().levels);
  EXPECT_EQ(q->default_level(), GetParam().default_level);
  ASSERT_NE(q->find(0), nullptr);
  EXPECT_EQ(q->find(0)->description, "Driver, PCI link, network link will remain up (\"live-Patch\")");
  EXPECT_EQ(q->find(3)->description, "Driver restart and PCI reset");
  EXPECT_EQ(q->find(4)->description, "Warm Reboot");
  EXPECT_EQ(q->find(1), nullptr);  // Reset-types rows are not levels
}

INSTANTIATE_TEST_SUITE_P(Captures, MstfwresetParseTest,
                         ::testing::Values(ResetCase{"mstfwreset-q-live-patch.txt", "0:S* 3:S 4:S", 0},
                                           ResetCase{"mstfwreset-q-pci-reset-only.txt", "0:- 3:S* 4:S", 3},
                                           ResetCase{"mstfwreset-q-warm-reboot-only.txt", "0:- 3:- 4:S*", 4}),
                         [](const ::testing::TestParamInfo<ResetCase>& info) { return case_name(info.param.file); });

TEST(MstfwresetParseTest, Refusals) {
  auto no_device = parse_mstfwreset_query(fixture("mstfwreset-q-no-device.txt"));
  ASSERT_FALSE(no_device);
  EXPECT_EQ(no_device.error().message,
            "mstfwreset: -E- Failed to Identify Device: 0000:03:00.0, mopen: No such file or directory.");
  auto broken = parse_mstfwreset_query(fixture("mstfwreset-q-broken-written.txt"));
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().message,
            "unexpected mstfwreset output: line 3 \"3: Driver restart and PCI reset  Supported\": expected "
            "\"N: description -Supported|-Not Supported\"");
  auto none = parse_mstfwreset_query(fixture("cx6-q-pending.txt"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "unexpected mstfwreset output: no Reset-levels section");
}

// --- FlintProgressReader -----------------------------------------------------------------------

// What the fake (and advProgressFunc) prints for a FW-controlled burn, shortened.
const std::string kBurnOutput =
    "\n    Current FW version on flash:  20.35.1012\n    New FW version:               20.36.1012\n\n"
    "\rFSMST_INITIALIZE - [.    ]\rFSMST_INITIALIZE -   OK\n"
    "\rWriting Boot image component -   0%\rWriting Boot image component -   7%"
    "\rWriting Boot image component -  45%\rWriting Boot image component -  99%"
    "\rWriting Boot image component -   OK\n-I- To load new FW run mstfwreset or reboot machine.\n";

TEST(FlintProgressReaderTest, WholeOutput) {
  std::vector<int> seen;
  FlintProgressReader reader([&](int p) { seen.push_back(p); });
  reader.feed(kBurnOutput);
  EXPECT_EQ(seen, (std::vector<int>{0, 7, 45, 99, 100}));
}

TEST(FlintProgressReaderTest, EverySplitGivesTheSameUpdates) {
  for (size_t cut = 0; cut <= kBurnOutput.size(); ++cut) {
    std::vector<int> seen;
    FlintProgressReader reader([&](int p) { seen.push_back(p); });
    reader.feed(std::string_view(kBurnOutput).substr(0, cut));
    reader.feed(std::string_view(kBurnOutput).substr(cut));
    EXPECT_EQ(seen, (std::vector<int>{0, 7, 45, 99, 100})) << "split at " << cut;
  }
  std::vector<int> seen;
  FlintProgressReader reader([&](int p) { seen.push_back(p); });
  for (char c : kBurnOutput) reader.feed(std::string_view(&c, 1));
  EXPECT_EQ(seen, (std::vector<int>{0, 7, 45, 99, 100}));
}

TEST(FlintProgressReaderTest, LegacyFs3CallbackAndOtherStages) {
  // SubCommand::CbCommon with burnCbFs3Func: "\r%s%3d%%", then "\r%sOK  \n", then the 101 end string.
  std::vector<int> seen;
  FlintProgressReader reader([&](int p) { seen.push_back(p); });
  reader.feed("\rBurning FW image without signatures -   3%\rBurning FW image without signatures -  50%"
              "\rBurning FW image without signatures - OK  \n\rRestoring signature                     - OK\n");
  // Percent-like text of other stages is not the burn's.
  reader.feed("\rFSMST_DOWNSTREAM_DEVICE_TRANSFER -  12%\rPreparing - 5%\n");
  EXPECT_EQ(seen, (std::vector<int>{3, 50, 100}));
  FlintProgressReader no_callback(nullptr);
  no_callback.feed(kBurnOutput);  // an empty callback is allowed
}

TEST(ToolErrorTextTest, JoinsMarkedLinesAndContinuations) {
  EXPECT_EQ(tool_error_text("\n    Current FW version on flash:  1.2.3\n\n-E- PSID mismatch. A.\n"), "PSID mismatch. A.");
  EXPECT_EQ(tool_error_text("-E- Burning FS4 image failed: This is an old image format.\n-E- please retry with "
                            "--no_fw_ctrl flag\n"),
            "Burning FS4 image failed: This is an old image format. please retry with --no_fw_ctrl flag");
  EXPECT_EQ(tool_error_text("-E- Failed to Identify Device: x, mopen: No such file or directory\n.\n"),
            "Failed to Identify Device: x, mopen: No such file or directory.");
  EXPECT_EQ(tool_error_text("-I- To load new FW run mstfwreset or reboot machine.\n"), "");
}

// --- the wrappers against the fake tools -------------------------------------------------------

class MstflintToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tools_.firmware({"add-fw", "0000:3b:00.0", "MT_0000000228", "20.34.1002"});
    tools_.firmware({"add-fw-function", "0000:3b:00.0", "0000:3b:00.1"});
    image_ = tools_.state_dir() + "/fw-20.36.1012.bin";
    tools_.firmware({"add-image", image_, "MT_0000000228", "20.36.1012"});
  }
  std::string stored(const std::string& pci) {
    auto q = mstflint_query_device(pci);
    EXPECT_TRUE(q) << q.error().to_string();
    return q ? q->fw_version : "";
  }
  std::string running(const std::string& pci) {
    auto q = mstflint_query_device(pci);
    EXPECT_TRUE(q) << q.error().to_string();
    return q ? q->running() : "";
  }
  test::FakeTools tools_;
  std::string image_;
};

TEST_F(MstflintToolTest, QueriesDeviceAndImage) {
  auto dev = mstflint_query_device("3b:00.0");  // without the domain, as the real tool takes it
  ASSERT_TRUE(dev) << dev.error().to_string();
  EXPECT_EQ(dev->psid, "MT_0000000228");
  EXPECT_EQ(dev->fw_version, "20.34.1002");
  EXPECT_FALSE(dev->pending());
  auto img = mstflint_query_image(image_);
  ASSERT_TRUE(img) << img.error().to_string();
  EXPECT_EQ(img->fw_version, "20.36.1012");
  EXPECT_EQ(img->psid, "MT_0000000228");

  auto missing = mstflint_query_device("0000:03:00.0");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(missing.error().message,
            "mstflint -d 0000:03:00.0 q: Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR");
  auto no_image = mstflint_query_image(tools_.state_dir() + "/nonexist.bin");
  ASSERT_FALSE(no_image);
  EXPECT_NE(no_image.error().message.find("Cannot open Image: "), std::string::npos) << no_image.error().message;
}

TEST_F(MstflintToolTest, BurnReportsProgressAndStagesTheImageOnBothFunctions) {
  std::vector<int> seen;
  auto burnt = mstflint_burn("0000:3b:00.0", image_, 30s, [&](int p) { seen.push_back(p); });
  ASSERT_TRUE(burnt) << burnt.error().to_string();
  ASSERT_EQ(seen.size(), 101u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int>(i));
  // One flash behind both functions of the dual-port card.
  for (const std::string pci : {"0000:3b:00.0", "0000:3b:00.1"}) {
    auto q = mstflint_query_device(pci);
    ASSERT_TRUE(q) << q.error().to_string();
    EXPECT_EQ(q->fw_version, "20.36.1012") << pci;
    EXPECT_EQ(q->running_version, "20.34.1002") << pci;
    EXPECT_TRUE(q->pending());
  }
  // A second burn before the reset: the firmware's refusal, verbatim.
  auto again = mstflint_burn("0000:3b:00.1", image_, 30s, nullptr);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, ErrorKind::kPlatform);
  EXPECT_EQ(again.error().message, "Burning FS4 image failed: " + std::string(kFlintPendingResetText));
  EXPECT_EQ(again.error().where, "0000:3b:00.1");
}

TEST_F(MstflintToolTest, BurnRefusesAnotherPsid) {
  const std::string other = tools_.state_dir() + "/other-psid.bin";
  tools_.firmware({"add-image", other, "MT_0000000359", "20.36.1012"});
  auto burnt = mstflint_burn("0000:3b:00.0", other, 30s, nullptr);
  ASSERT_FALSE(burnt);
  EXPECT_EQ(burnt.error().message,
            "PSID mismatch. The PSID on flash (MT_0000000228) differs from the PSID in the given image (MT_0000000359).");
  EXPECT_EQ(stored("0000:3b:00.0"), "20.34.1002");  // nothing written
}

TEST_F(MstflintToolTest, BurnFailuresOfDeviceImageAndFirmware) {
  auto no_device = mstflint_burn("0000:03:00.0", image_, 30s, nullptr);
  ASSERT_FALSE(no_device);
  EXPECT_EQ(no_device.error().message, "Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR");
  const std::string nonexist = tools_.state_dir() + "/nonexist.bin";
  auto no_image = mstflint_burn("0000:3b:00.0", nonexist, 30s, nullptr);
  ASSERT_FALSE(no_image);
  EXPECT_EQ(no_image.error().message,
            "Cannot open Image: " + nonexist + ". Can not open file \"" + nonexist + "\" - No such file or directory");
  tools_.firmware({"fail-burn", "0000:3b:00.1", "Failed to access CR-Space"});
  auto refused = mstflint_burn("0000:3b:00.0", image_, 30s, nullptr);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "Burning FS4 image failed: Failed to access CR-Space");
}

// Issue 41, 6: a failure during the write prints its -E- text right after the progress, on the
// same line (reportErr has no newline before it): the error is found there, not lost.
TEST_F(MstflintToolTest, AFailureAfterProgressKeepsTheToolsErrorText) {
  tools_.firmware({"fail-burn-at", "0000:3b:00.0", "45", "Failed to update component: Flash access failed"});
  std::vector<int> seen;
  auto burnt = mstflint_burn("0000:3b:00.0", image_, 30s, [&](int p) { seen.push_back(p); });
  ASSERT_FALSE(burnt);
  EXPECT_EQ(burnt.error().message, "Burning FS4 image failed: Failed to update component: Flash access failed");
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(stored("0000:3b:00.0"), "20.34.1002");
}

TEST(ToolErrorText, FindsTheErrorAfterAProgressLineWithoutANewline) {
  EXPECT_EQ(tool_error_text("\rFSMST_INITIALIZE -   OK\n\rWriting Boot image component -  45%-E- Burning FS4 image "
                            "failed: Flash access failed\n"),
            "Burning FS4 image failed: Flash access failed");
  EXPECT_EQ(tool_error_text("-E- Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR\n"),
            "Cannot open Device: 0000:03:00.0. No such file or directory. MFE_CR_ERROR");
}

TEST_F(MstflintToolTest, BurnTimesOutAndLeavesTheFlashAlone) {
  tools_.firmware({"burn-seconds", "20"});
  std::vector<int> seen;
  auto burnt = mstflint_burn("0000:3b:00.0", image_, 700ms, [&](int p) { seen.push_back(p); });
  ASSERT_FALSE(burnt);
  EXPECT_EQ(burnt.error().kind, ErrorKind::kTimeout);
  EXPECT_FALSE(seen.empty());  // progress arrived while it ran
  EXPECT_LT(seen.back(), 100);
  EXPECT_EQ(stored("0000:3b:00.0"), "20.34.1002");
}

TEST_F(MstflintToolTest, ResetAtASupportedLevelLoadsTheImage) {
  ASSERT_TRUE(mstflint_burn("0000:3b:00.0", image_, 30s, nullptr));
  auto levels = mstfwreset_query("3b:00.1");
  ASSERT_TRUE(levels) << levels.error().to_string();
  EXPECT_EQ(describe(*levels), "0:- 3:S* 4:S");

  auto live = mstfwreset_reset("0000:3b:00.1", 0, 30s);
  ASSERT_FALSE(live);
  EXPECT_EQ(live.error().message, "Reset-level '0' is not supported in the current state of this device.");
  EXPECT_EQ(running("0000:3b:00.0"), "20.34.1002");

  auto reset = mstfwreset_reset("0000:3b:00.1", 3, 30s);
  ASSERT_TRUE(reset) << reset.error().to_string();
  for (const std::string pci : {"0000:3b:00.0", "0000:3b:00.1"}) {
    auto q = mstflint_query_device(pci);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->fw_version, "20.36.1012");
    EXPECT_FALSE(q->pending()) << pci;
  }
  // calls.log is shared by the fake tools (FakeTools names it after mstconfig).
  const std::vector<std::string> calls = tools_.mstconfig_calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "-d 0000:3b:00.1 --level 3 -y reset"), calls.end());
}

TEST_F(MstflintToolTest, LivePatchWhereSupported) {
  tools_.firmware({"reset-levels", "0000:3b:00.0", "0:yes 3:yes 4:yes"});
  ASSERT_TRUE(mstflint_burn("0000:3b:00.0", image_, 30s, nullptr));
  auto levels = mstfwreset_query("0000:3b:00.0");
  ASSERT_TRUE(levels);
  EXPECT_EQ(levels->default_level(), 0);
  ASSERT_TRUE(mstfwreset_reset("0000:3b:00.0", 0, 30s));
  EXPECT_EQ(running("0000:3b:00.0"), "20.36.1012");
}

TEST_F(MstflintToolTest, WarmRebootLoadsTheImageOnlyWhenLevel4ArmedIt) {
  const std::string root = tools_.state_dir() + "/root";
  ASSERT_TRUE(mstflint_burn("0000:3b:00.0", image_, 30s, nullptr));
  tools_.firmware({"reboot", "warm", root});
  EXPECT_EQ(running("0000:3b:00.0"), "20.34.1002");
  ASSERT_TRUE(mstfwreset_reset("0000:3b:00.0", 4, 30s));
  EXPECT_EQ(running("0000:3b:00.0"), "20.34.1002");  // mstfwreset ran `reboot`; the host has not rebooted yet
  tools_.firmware({"reboot", "warm", root});
  EXPECT_EQ(running("0000:3b:00.0"), "20.36.1012");
}

TEST_F(MstflintToolTest, ColdRebootLoadsTheImage) {
  ASSERT_TRUE(mstflint_burn("0000:3b:00.0", image_, 30s, nullptr));
  tools_.firmware({"reboot", "cold", tools_.state_dir() + "/root"});
  EXPECT_EQ(running("0000:3b:00.1"), "20.36.1012");
}

TEST_F(MstflintToolTest, ResetLevelsThatDoNotExistAreNotRun) {
  auto bad = mstfwreset_reset("0000:3b:00.0", 2, 30s);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kUsage);
  auto no_device = mstfwreset_query("0000:03:00.0");
  ASSERT_FALSE(no_device);
  EXPECT_EQ(no_device.error().message,
            "mstfwreset -d 0000:03:00.0 q: Failed to Identify Device: 0000:03:00.0, mopen: No such file or directory.");
}

// Issue 41 item 2: cmd_reg_mcam.py reset_sync_query_text, "1: Driver is the owner" "Supported" or
// "Not supported" (MCAM mng_feature_cap_mask bit 19).
TEST(MstfwresetParseTest, ReadsTheDriverOwnedResetSync) {
  auto q = parse_mstfwreset_query(fixture("mstfwreset-q-pci-reset-only.txt"));
  ASSERT_TRUE(q);
  EXPECT_EQ(q->driver_sync, std::optional<bool>(true));
  std::string text = fixture("mstfwreset-q-pci-reset-only.txt");
  const std::string row = "1: Driver is the owner                                           -Supported     ";
  const std::string no = "1: Driver is the owner                                           -Not supported ";
  ASSERT_NE(text.find(row), std::string::npos);
  text.replace(text.find(row), row.size(), no);
  auto not_supported = parse_mstfwreset_query(text);
  ASSERT_TRUE(not_supported);
  EXPECT_EQ(not_supported->driver_sync, std::optional<bool>(false));
  auto no_section = parse_mstfwreset_query(text.substr(0, text.find("Reset-sync")));
  ASSERT_TRUE(no_section);
  EXPECT_FALSE(no_section->driver_sync);
}

TEST_F(MstflintToolTest, TheDriverOwnedSyncIsAskedForWithSyncOneAtLevelThreeOnly) {
  ASSERT_TRUE(mstflint_burn("0000:3b:00.0", image_, 30s, nullptr));
  tools_.firmware({"reset-sync", "0000:3b:00.0", "no"});
  auto q = mstfwreset_query("0000:3b:00.0");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->driver_sync, std::optional<bool>(false));
  auto refused = mstfwreset_reset("0000:3b:00.0", 3, 30s, {}, ResetSync::kDriver);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "Synchronization by driver is not supported in the current state of this device.");
  auto level0 = mstfwreset_reset("0000:3b:00.0", 0, 30s, {}, ResetSync::kDriver);
  ASSERT_FALSE(level0);
  EXPECT_EQ(level0.error().kind, ErrorKind::kUsage);
  tools_.firmware({"reset-sync", "0000:3b:00.0", "yes"});
  ASSERT_TRUE(mstfwreset_reset("0000:3b:00.0", 3, 30s, {}, ResetSync::kDriver));
  EXPECT_EQ(running("0000:3b:00.0"), "20.36.1012");
  const std::vector<std::string> calls = tools_.mstconfig_calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "-d 0000:3b:00.0 --level 3 --sync 1 -y reset"), calls.end());
  // The driver resets: the tool stops no driver and removes no VF.
  EXPECT_EQ(std::find(calls.begin(), calls.end(), "sriov_numvfs 0"), calls.end());
}

// Issue 41 item 7: at its deadline mstfwreset gets SIGTERM, whose handler (mstfwreset.py sigHndl)
// puts the multi-host reset FSM back to idle; SIGKILL would leave the other hosts waiting.
TEST_F(MstflintToolTest, AResetPastItsDeadlineIsEndedWithSigtermSoItRestoresTheResetFsm) {
  ASSERT_TRUE(mstflint_burn("0000:3b:00.0", image_, 30s, nullptr));
  tools_.firmware({"reset-seconds", "20"});
  auto reset = mstfwreset_reset("0000:3b:00.0", 3, 700ms);
  ASSERT_FALSE(reset);
  EXPECT_EQ(reset.error().kind, ErrorKind::kTimeout);
  EXPECT_THAT(reset.error().message, ::testing::HasSubstr("was ended with SIGTERM"));
  const std::vector<std::string> calls = tools_.mstconfig_calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "reset_fsm_register"), calls.end());
  EXPECT_EQ(running("0000:3b:00.0"), "20.34.1002");
}

TEST(MstflintMissingTest, NotFoundWithInstallHint) {
  test::TempTree empty;
  test::ScopedEnv path("PATH", empty.root());
  auto q = mstflint_query_device("0000:3b:00.0");
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(q.error().message,
            "mstflint was not found in PATH: install the Debian package mstflint (apt-get install mstflint)");
  auto burn = mstflint_burn("0000:3b:00.0", "/tmp/x.bin", 1s, nullptr);
  ASSERT_FALSE(burn);
  EXPECT_EQ(burn.error().kind, ErrorKind::kNotFound);
  auto reset = mstfwreset_query("0000:3b:00.0");
  ASSERT_FALSE(reset);
  EXPECT_EQ(reset.error().kind, ErrorKind::kNotFound);
  EXPECT_NE(reset.error().message.find("mstfwreset was not found"), std::string::npos);
}

}  // namespace platform_mstflint_test
}  // namespace rdmactl
