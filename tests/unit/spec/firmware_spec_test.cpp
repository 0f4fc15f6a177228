// SPDX-License-Identifier: Apache-2.0
// The spec's firmware: read with its defaults left unset, images relative to the spec file,
// merged field by field, and two PCI functions of one adapter asking for different versions
// refused with both places (plan refuses the same through netdev and RDMA device selectors).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agent/spec/spec.h"

namespace rdmactl {
namespace spec_firmware_spec_test {

using ::testing::HasSubstr;

const std::string kHeader =
    "apiVersion: rdmactl/v1\n"
    "kind: FabricSpec\n"
    "metadata:\n"
    "  name: fw\n";

std::string all_problems(const Error& error) {
  std::string out;
  for (const Diagnostic& d : error.diagnostics) out += d.to_string() + "\n";
  return out;
}

TEST(FirmwareSpec, IsReadWithImagesRelativeToTheSpecFile) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      firmware: {version: "28.42.1000", images: firmware, policy: update, activation: reset, allowManagementOutage: true}
    - rdmaDevice: mlx5_2
      firmware: {version: "28.42.1000", images: /srv/fw}
)",
                             "/etc/rdmactl/fabric.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  const FirmwareSpec& f = spec->defaults.interfaces[0].firmware;
  EXPECT_EQ(f.version, "28.42.1000");
  EXPECT_EQ(f.images, "/etc/rdmactl/firmware");
  EXPECT_EQ(f.policy, "update");
  EXPECT_EQ(f.activation, "reset");
  EXPECT_EQ(f.allow_management_outage, std::optional<bool>(true));
  EXPECT_EQ(f.origin.line, 8);
  const FirmwareSpec& g = spec->defaults.interfaces[1].firmware;
  EXPECT_EQ(g.images, "/srv/fw");
  EXPECT_FALSE(g.policy) << "unset: validate, decided where it is used";
  EXPECT_FALSE(g.activation);
  EXPECT_FALSE(g.allow_management_outage);
}

TEST(FirmwareSpec, TheSchemaRefusesWhatIsNotAVersionPolicyOrActivation) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      firmware: {version: "28.42", policy: burn, activation: now, image: x}
    - rdmaDevice: mlx5_1
      firmware: {images: /srv/fw}
)",
                             "fabric.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("fabric.yaml:8:"));
  EXPECT_THAT(problems, HasSubstr("firmware version such as 28.42.1000"));
  EXPECT_THAT(problems, HasSubstr("burn"));
  EXPECT_THAT(problems, HasSubstr("now"));
  EXPECT_THAT(problems, HasSubstr("image"));
  EXPECT_THAT(problems, HasSubstr("version")) << "the second entry has none";
}

TEST(FirmwareSpec, TwoFunctionsOfOneAdapterAskingForDifferentVersionsIsInvalid) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - pci: "0000:3b:00.0"
      firmware: {version: "22.41.1000"}
    - pci: "0000:3b:00.1"
      firmware: {version: "22.39.1002"}
    - pci: "0000:af:00.0"
      firmware: {version: "22.39.1002"}
)",
                             "fabric.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_THAT(problems, HasSubstr("fabric.yaml:10:"));
  EXPECT_THAT(problems, HasSubstr("defaults.interfaces[0].firmware, line 8"));
  EXPECT_THAT(problems, HasSubstr("same adapter (0000:3b:00)"));
  EXPECT_EQ(spec.error().diagnostics.size(), 1u) << problems;
}

TEST(FirmwareSpec, ANodesEntryIsCheckedAgainstTheDefaultsItIsMergedOver) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - pci: "0000:3b:00.0"
      firmware: {version: "22.39.1002"}
nodes:
  - match: canary
    interfaces:
      - pci: "0000:3b:00.0"
        firmware: {version: "22.41.1000", policy: update, images: /srv/fw}
  - match: odd
    interfaces:
      - pci: "0000:3b:00.1"
        firmware: {version: "22.41.1000"}
)",
                             "fabric.yaml");
  ASSERT_FALSE(spec.has_value());
  const std::string problems = all_problems(spec.error());
  EXPECT_EQ(spec.error().diagnostics.size(), 1u) << "the canary overrides the same selector: " << problems;
  EXPECT_THAT(problems, HasSubstr("nodes[1].interfaces[0].firmware.version"));
}

TEST(FirmwareSpec, MergesFieldByField) {
  auto spec = load_spec_text(kHeader + R"(defaults:
  interfaces:
    - rdmaDevice: mlx5_0
      firmware: {version: "22.39.1002", images: /srv/fw}
nodes:
  - match: canary
    interfaces:
      - rdmaDevice: mlx5_0
        firmware: {version: "22.41.1000", policy: update}
)",
                             "fabric.yaml");
  ASSERT_TRUE(spec.has_value()) << all_problems(spec.error());
  const NodeSpec node = merge_for_node(*spec, "canary");
  ASSERT_EQ(node.interfaces.size(), 1u);
  const FirmwareSpec& f = node.interfaces[0].firmware;
  EXPECT_EQ(f.version, "22.41.1000");
  EXPECT_EQ(f.images, "/srv/fw");
  EXPECT_EQ(f.policy, "update");
  EXPECT_EQ(f.origin.path, "nodes[0].interfaces[0].firmware");
  EXPECT_EQ(merge_for_node(*spec, "other").interfaces[0].firmware.version, "22.39.1002");
}

}  // namespace spec_firmware_spec_test
}  // namespace rdmactl
