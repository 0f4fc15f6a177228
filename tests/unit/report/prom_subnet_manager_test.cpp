// SPDX-License-Identifier: Apache-2.0
// The subnet manager's series in /metrics: the master sminfo named (its GUID as a label), whether
// this node's OpenSM runs and whether it is the master; a failover moves the master's labels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/report/prom.h"
#include "agent/state/state.h"

namespace rdmactl {
namespace report_prom_subnet_manager_test {

using ::testing::HasSubstr;
using ::testing::Not;

HostState ib_host(bool local_active, nlohmann::json master) {
  HostState state;
  state.node = "sm-01";
  DeviceState d;
  d.name = "mlx5_0";
  PortState p;
  p.port = 1;
  p.link_layer = "InfiniBand";
  p.gids.push_back(GidEntry{0, "fe80:0000:0000:0000:946d:ae03:00f1:4a20", "", ""});
  d.ports.push_back(p);
  state.devices.push_back(d);
  state.subnet_manager = {{"local", {{"active", local_active}}}, {"master", std::move(master)}};
  return state;
}

std::string metrics(const HostState& state) {
  PromText out;
  prom_subnet_manager(out, state);
  return out.text();
}

TEST(PromSubnetManager, TheMasterAndWhetherItIsThisNode) {
  const auto local = metrics(ib_host(true, {{"lid", 1}, {"guid", "0x946dae0300f14a20"}, {"priority", 15}, {"state", "SMINFO_MASTER"}}));
  EXPECT_THAT(local, HasSubstr(R"(rdmactl_subnet_manager_master{node="sm-01",guid="0x946dae0300f14a20",lid="1",priority="15"} 1)"));
  EXPECT_THAT(local, HasSubstr(R"(rdmactl_subnet_manager_local_active{node="sm-01"} 1)"));
  EXPECT_THAT(local, HasSubstr(R"(rdmactl_subnet_manager_local_master{node="sm-01"} 1)"));
  // After a failover to the other SM node: this node's OpenSM is a standby.
  const auto standby = metrics(ib_host(true, {{"lid", 6}, {"guid", "0x0002c9030002fb06"}, {"priority", 14}, {"state", "SMINFO_MASTER"}}));
  EXPECT_THAT(standby, HasSubstr(R"(guid="0x0002c9030002fb06",lid="6",priority="14"} 1)"));
  EXPECT_THAT(standby, HasSubstr(R"(rdmactl_subnet_manager_local_master{node="sm-01"} 0)"));
}

TEST(PromSubnetManager, NoMasterIsZeroAndAnSmNotAskedAboutIsLeftOut) {
  EXPECT_THAT(metrics(ib_host(false, nullptr)), HasSubstr(R"(rdmactl_subnet_manager_master{node="sm-01"} 0)"));
  HostState not_asked = ib_host(false, nullptr);
  not_asked.subnet_manager["masterReason"] = "not asked: the spec does not manage the subnet manager";
  EXPECT_THAT(metrics(not_asked), Not(HasSubstr("rdmactl_subnet_manager")));
}

}  // namespace report_prom_subnet_manager_test
}  // namespace rdmactl
