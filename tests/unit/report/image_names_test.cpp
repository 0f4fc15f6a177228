// SPDX-License-Identifier: Apache-2.0
// A firmware image's file name in the text plan. The firmware reconciler takes every regular file
// of the spec's `images` directory (reconcilers/firmware/firmware.cpp scan_images), and a file name
// is any bytes but '/' and NUL: a line feed too, which the netdev names of control_bytes_test.cpp
// cannot hold (dev_valid_name refuses isspace()). The name reaches the text through the burn's
// `via` ("mstflint -d PCI -i FILE -y burn, ...") and the errors that list the images (choose_image:
// "found: FILE (PSID VERSION)", "several images ...: FILE, FILE"). A line feed there must show as
// "\n" within its line, never start a line of its own that reads as the report's.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "agent/report/format.h"

namespace rdmactl {
namespace report_image_names_test {

// A name made to pass for the report's own lines, with a colour sequence for good measure.
const std::string kImage = "/srv/fw/fw.bin\nNo drift: the host matches the spec.\n\x1b[32mok";
const std::string kImageShown = "/srv/fw/fw.bin\\nNo drift: the host matches the spec.\\n\\x1b[32mok";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The burn as diff_burn plans it (firmware.cpp), its image in `via`, and an apply that failed
// naming the image in its error.
Report burn_report(const std::string& kind) {
  Report r;
  r.kind = kind;
  r.node = "gpu-01";
  Change c;
  c.resource = "pci/0000:3b:00.0";
  c.field = "firmware.version";
  c.current = "22.39.1002";
  c.desired = "22.41.1000";
  c.reconciler = "firmware";
  c.requires_ = "reboot";
  c.via = "mstflint -d 0000:3b:00.0 -i " + kImage + " -y burn, then a reboot";
  c.note = "burnt once for the adapter's 2 function(s), before any other change; the image " + kImage;
  if (kind != "Plan") {
    c.status = ChangeStatus::kFailed;
    c.error = "mstflint -i " + kImage + ": exit 1";
  }
  r.changes.push_back(c);
  return r;
}

TEST(ImageNames, ALineFeedInAnImageNameStaysWithinItsLineInTheTextPlan) {
  for (const std::string kind : {"Plan", "ApplyReport"}) {
    const std::string text = render_report(burn_report(kind), Format::kText);
    const std::vector<std::string> lines = lines_of(text);
    for (const std::string& line : lines) {
      EXPECT_NE(line, "No drift: the host matches the spec.") << "a line the image name made:\n" << text;
      EXPECT_EQ(line.find("\x1b"), std::string::npos) << text;
    }
    // Header, resource, the change, its note (and its error), the summary.
    EXPECT_EQ(lines.size(), kind == "Plan" ? 5u : 6u) << text;
    EXPECT_NE(text.find("via mstflint -d 0000:3b:00.0 -i " + kImageShown + " -y burn, then a reboot)\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("the image " + kImageShown + "\n"), std::string::npos) << text;
    if (kind != "Plan") {
      EXPECT_NE(text.find("    mstflint -i " + kImageShown + ": exit 1\n"), std::string::npos) << text;
    }
  }
}

TEST(ImageNames, ALineFeedInAnImageNameStaysWithinTheErrorThatListsIt) {
  Report r;
  r.node = "gpu-01";
  // As choose_image words it when no image matches.
  r.errors.push_back(make_error(ErrorKind::kNotFound, "no image in /srv/fw has PSID MT_0000000359 and version "
                                                      "22.42.1000; found: " + kImage + " (MT_0000000359 22.40.1000)"));
  const std::string text = render_report(r, Format::kText);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(lines.size(), 3u) << text;  // header, the error, the summary
  EXPECT_NE(lines[1].find("found: " + kImageShown + " (MT_0000000359 22.40.1000)"), std::string::npos) << text;
  EXPECT_EQ(lines[2], "1 error(s); nothing planned.");
}

TEST(ImageNames, TheDataKeepsTheNameAsItIs) {
  // Escaping is the text's: the JSON report carries the very bytes (as \n and \u001b).
  const std::string json = render_report(burn_report("Plan"), Format::kJson);
  EXPECT_NE(json.find("fw.bin\\nNo drift: the host matches the spec.\\n\\u001b[32mok"), std::string::npos) << json;
}

}  // namespace report_image_names_test
}  // namespace rdmactl
