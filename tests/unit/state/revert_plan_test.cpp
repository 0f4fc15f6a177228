// SPDX-License-Identifier: Apache-2.0
// revert_plan_for: the order a failed apply's changes are put back in. Reverse order of apply,
// except a netdev's IPoIB mode before its MTU: apply writes the mode first (the kernel resets an
// IPoIB netdev's MTU when its mode changes, ipoib_set_mode), and a revert from datagram back to
// connected that put the MTU (65520) back first was refused by datagram mode (ipoib_change_mtu:
// EINVAL above the broadcast group's MTU - 4).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/state/change.h"

namespace rdmactl {
namespace state_revert_plan_test {

Change planned(const std::string& resource, const std::string& field, nlohmann::json from, nlohmann::json to) {
  Change c;
  c.resource = resource;
  c.field = field;
  c.current = std::move(from);
  c.desired = std::move(to);
  c.status = ChangeStatus::kPlanned;
  return c;
}

std::vector<std::string> order(const std::vector<Change>& plan) {
  std::vector<std::string> out;
  for (const Change& c : plan) out.push_back(c.resource + " " + c.field + " " + c.desired.dump());
  return out;
}

TEST(RevertPlan, IsTheReverseOfApplyWithTheIpoibModeBeforeItsMtu) {
  // As the engine applies connected -> datagram with MTU 4092: the ipoib reconciler's mode, then
  // the netdev reconciler's MTU, then an address.
  const std::vector<Change> applied = {
      planned("netdev/ib0", "ipoib.mode", "connected", "datagram"),
      planned("netdev/ib0", "mtu", 65520, 4092),
      planned("netdev/ib1", "mtu", 2044, 4092),
      planned("netdev/ib0", "addresses", nlohmann::json::array(), nlohmann::json::array({"10.0.0.1/24"})),
  };
  EXPECT_EQ(order(revert_plan_for(applied)), (std::vector<std::string>{
                                                 "netdev/ib0 addresses []",
                                                 "netdev/ib1 mtu 2044",
                                                 "netdev/ib0 ipoib.mode \"connected\"",
                                                 "netdev/ib0 mtu 65520",
                                             }));
}

TEST(RevertPlan, OnlyPlannedChangesAreReverted) {
  std::vector<Change> applied = {planned("netdev/a", "mtu", 1500, 9000), planned("netdev/b", "mtu", 1500, 9000)};
  applied[1].status = ChangeStatus::kPendingReboot;
  ASSERT_EQ(revert_plan_for(applied).size(), 1u);
  EXPECT_EQ(revert_plan_for(applied)[0].resource, "netdev/a");
}

}  // namespace state_revert_plan_test
}  // namespace rdmactl
