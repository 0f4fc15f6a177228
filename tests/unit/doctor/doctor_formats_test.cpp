// SPDX-License-Identifier: Apache-2.0
// doctor's JUnit and Prometheus formats (agent/doctor/doctor_formats.cpp), and that the list of
// checks they report on is every check the doctor's sources can add.
#include "agent/doctor/doctor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace rdmactl {
namespace doctor_formats_test {

DoctorReport two_findings() {
  DoctorReport r;
  r.node = "gpu-01";
  r.findings.push_back({"memlock", "warning", "host", "limit is 64 KiB & <low>", "set \"unlimited\""});
  r.findings.push_back({"port-state", "error", "rdma/mlx5_1/1", "port is DOWN", "bring it up"});
  return r;
}

TEST(DoctorFormats, EveryCheckTheSourcesAddIsListed) {
  // A check added to a doctor source and not to doctor_checks() would have no passing case in
  // JUnit and no zero gauge in prom: the list is compared with the sources' add("...") calls.
  std::set<std::string> in_sources;
  const std::regex add_call("add\\(\"([a-z-]+)\"");
  for (const auto& entry : std::filesystem::directory_iterator(std::string(RDMACTL_SOURCE_DIR) + "/agent/doctor")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (std::sregex_iterator it(source.begin(), source.end(), add_call), end; it != end; ++it) in_sources.insert((*it)[1]);
  }
  const std::set<std::string> listed(doctor_checks().begin(), doctor_checks().end());
  EXPECT_EQ(listed, in_sources);
  EXPECT_EQ(listed.size(), doctor_checks().size()) << "a check listed twice";
}

TEST(DoctorFormats, JunitHasAPassingCasePerCleanCheckAndAFailurePerFinding) {
  const std::string xml = render_doctor_junit(two_findings());
  const size_t checks = doctor_checks().size();
  EXPECT_NE(xml.find("<testsuite name=\"rdmactl doctor gpu-01\" tests=\"" + std::to_string(checks) +
                     "\" failures=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01 doctor\" name=\"memlock host\" time=\"0\">\n      <failure "
                     "message=\"limit is 64 KiB &amp; &lt;low&gt;\" type=\"warning\">fix: set &quot;unlimited&quot;"
                     "</failure>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gpu-01 doctor\" name=\"pfc\" time=\"0\"/>"), std::string::npos);
  EXPECT_EQ(xml.find("name=\"memlock\" time=\"0\"/>"), std::string::npos) << "a check with a finding has no passing case";
}

TEST(DoctorFormats, PromHasAGaugePerCheckAndSeverityAndOnePerFinding) {
  const std::string text = render_doctor_prom(two_findings());
  EXPECT_NE(text.find("rdmactl_doctor_findings{node=\"gpu-01\",check=\"memlock\",severity=\"warning\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("rdmactl_doctor_findings{node=\"gpu-01\",check=\"pfc\",severity=\"error\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("rdmactl_doctor_finding{node=\"gpu-01\",check=\"port-state\",severity=\"error\",resource=\"rdma/"
                      "mlx5_1/1\"} 1\n"), std::string::npos) << text;
  const size_t gauges = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_EQ(gauges, 2 + 2 * doctor_checks().size() + 2 + 2) << "findings per check and severity, one per "
                                                                "finding, with HELP and TYPE each";
  EXPECT_EQ(text.find("rdmactl_build_info"), std::string::npos) << "plan's prom has it: one textfile directory";
  // Two findings of one check on one resource are one series counting them: never a duplicate.
  DoctorReport twice = two_findings();
  twice.findings.push_back(twice.findings[0]);
  const std::string counted = render_doctor_prom(twice);
  EXPECT_NE(counted.find("rdmactl_doctor_finding{node=\"gpu-01\",check=\"memlock\",severity=\"warning\",resource=\"host\"} 2\n"),
            std::string::npos) << counted;
}

}  // namespace doctor_formats_test
}  // namespace rdmactl
