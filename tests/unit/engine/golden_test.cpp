// SPDX-License-Identifier: Apache-2.0
// Golden diff cases: tests/golden/<reconciler>/<case>/{spec.yaml,plan.json}, with the recorded
// state tests/golden/host-state.json unless the case has its own state.json.
// Each case loads the spec and the recorded state, plans, and compares the whole Plan report with
// plan.json, which was reviewed by hand against the kernel, driver or tool source the case is
// about (a golden file is a claim about the real host). To regenerate after an intended change:
// RDMACTL_UPDATE_GOLDEN=1 writes every plan.json and fails each case, so that nothing passes until
// the diff was reviewed and the tests were run again without it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent/engine/engine.h"
#include "agent/state/state.h"
#include "reconcilers/table.h"
#include "tests/unit/test_support.h"

namespace rdmactl {
namespace engine_golden_test {

namespace fs = std::filesystem;

std::vector<std::string> golden_cases() {
  std::vector<std::string> cases;
  for (const auto& reconciler : fs::directory_iterator(test::source_path("tests/golden"))) {
    if (!reconciler.is_directory()) continue;
    for (const auto& c : fs::directory_iterator(reconciler.path())) {
      if (c.is_directory()) cases.push_back(reconciler.path().filename().string() + "/" + c.path().filename().string());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

class GoldenPlan : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenPlan, MatchesRecordedPlan) {
  const std::string dir = test::source_path("tests/golden/" + GetParam());
  auto spec = load_spec_text(test::read_file(dir + "/spec.yaml"), "spec.yaml");
  ASSERT_TRUE(spec.has_value()) << spec.error().to_string()
                                << (spec.error().diagnostics.empty() ? "" : "\n" + spec.error().diagnostics[0].to_string());
  const std::string own_state = dir + "/state.json";
  auto state = load_host_state(fs::exists(own_state) ? own_state : test::source_path("tests/golden/host-state.json"));
  ASSERT_TRUE(state.has_value()) << state.error().to_string();
  state->recorded_from = "state.json";  // messages name it; keep them independent of the checkout

  Engine engine(make_reconciler_table());
  Report report = engine.plan(merge_for_node(*spec, state->node), *state);
  report.spec_file = spec->file;
  report.spec_sha256 = spec->sha256;
  const nlohmann::json actual = to_json(report);

  const std::string expected_path = dir + "/plan.json";
  if (const char* update = std::getenv("RDMACTL_UPDATE_GOLDEN"); update && *update) {
    std::ofstream(expected_path) << actual.dump(2) << "\n";
    FAIL() << "wrote " << expected_path << ": review it (git diff), then run the tests without RDMACTL_UPDATE_GOLDEN";
  }
  const std::string expected_text = test::read_file(expected_path);
  ASSERT_FALSE(expected_text.empty()) << "missing " << expected_path;
  EXPECT_EQ(nlohmann::json::parse(expected_text), actual) << "actual plan:\n" << actual.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenPlan, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace engine_golden_test
}  // namespace rdmactl
