// SPDX-License-Identifier: Apache-2.0
// A stateful model of the kernel's DCB netlink (net/dcb/dcbnl.c) for tests of dcbnl users: the QoS
// reconciler's apply/verify/idempotence tests and DcbClient's own. It parses each request from its
// bytes as dcb_doit does, keeps per-netdev state (app table, ieee_pfc, ieee_ets, app trust), and
// answers with the messages the kernel sends: the command's reply (RTM_GETDCB with the
// dcbnl_ieee_fill attributes, or RTM_SETDCB with the u8 driver status in DCB_ATTR_IEEE), then the
// ack; or an NLMSG_ERROR for what dcb_doit refuses itself (unknown netdev, no DCB ops).
//
// Two drivers are modelled, each rule beside a comment naming the function it follows:
//  - a driver without its own ieee_setapp/ieee_delapp (add_netdev): dcbnl_ieee_set and _del call
//    the generic dcb_ieee_setapp / dcb_ieee_delapp on the shared app list;
//  - mlx5e (add_mlx5_netdev), from drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c: its own
//    setapp/delapp over a 64-entry firmware DSCP table, trust switching, PFC with the link toggle.
//    The rules were read in torvalds/linux 84a83eba (5.x) and Debian's linux-source-6.12 6.12.117,
//    where mlx5e_dcbnl_ieee_setapp/_delapp/_dscp_app read the same.
//
// Every request is recorded, so a test can assert that a converged reconcile writes nothing.
//
//   test::FakeDcbKernel kernel;
//   kernel.add_netdev("eth0").apps = {{kDcbSelectorDscp, 3, 26}};
//   MnlSocket socket = kernel.connect();
//   DcbClient dcb(socket);
//   ... apply ...; EXPECT_EQ(kernel.write_count(), 0u);
#pragma once

#include <linux/dcbnl.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/platform/dcbnl.h"
#include "agent/platform/mnl.h"
#include "tests/unit/platform/scripted_kernel.h"

namespace rdmactl::test {

// What mlx5e keeps beside the kernel's app list (en/dcbnl.h struct mlx5e_dcbx_dp and mlx5e_dcbx),
// and what its firmware registers hold (QPTS trust_state, QPDPM dscp2prio, PFCC pfc_en).
struct FakeMlx5Dcb {
  static constexpr int kTrustPcp = 1;   // MLX5_QPTS_TRUST_PCP (include/linux/mlx5/driver.h)
  static constexpr int kTrustDscp = 2;  // MLX5_QPTS_TRUST_DSCP
  // Capabilities: setapp/delapp answer EOPNOTSUPP without both (mlx5e_dcbnl_ieee_setapp:
  // !vport_group_manager || !MLX5_DSCP_SUPPORTED).
  bool vport_group_manager = true;
  bool dscp_supported = true;
  int trust = kTrustPcp;
  // The firmware's QPDPM table; the driver's cache (priv->dcbx_dp.dscp2prio) follows it after each
  // successful write (mlx5e_set_dscp2prio), so one array stands for both.
  std::array<uint8_t, 64> dscp2prio{};
  int dscp_app_cnt = 0;  // priv->dcbx.dscp_app_cnt
  uint8_t pfc_en = 0;    // PFCC pfctx/pfcrx (mlx5_set_port_pfc writes both with one mask)
  // MLX5_BUFFER_SUPPORTED: getpfc reports delay = cable_len only then (mlx5e_dcbnl_ieee_getpfc).
  bool buffer_supported = true;
  uint16_t cable_len = 7;  // MLX5E_DEFAULT_CABLE_LEN, set at load by mlx5e_dcbnl_initialize

  // Failure injection: DSCPs whose next QPDPM write the firmware refuses (once per occurrence),
  // and a refused PFCC write.
  std::multiset<int> refuse_dscp;
  bool refuse_pfc = false;
  // What the firmware saw, for assertions: QPDPM and QPTS writes, link toggles.
  int dscp2prio_writes = 0;
  int trust_writes = 0;
  int link_toggles = 0;
};

// The firmware state an mlx5 netdev finds at driver load (what mlx5e_trust_initialize reads).
struct Mlx5Boot {
  int trust = FakeMlx5Dcb::kTrustPcp;
  // nullopt: dscp >> 3 for every DSCP. No kernel or driver source states the firmware's default
  // table; mlnx-tools' mlnx_qos writes exactly this when it turns DSCP trust on
  // (python/mlnx_qos setDefaultAppEntry, commented "#firmware default"), so it is taken from there.
  std::optional<std::array<uint8_t, 64>> dscp2prio;
  // DCBX_PARAM.version_oper not 0 ("disabled - host is in charge"): the firmware runs DCBX, and
  // mlx5e_dcbnl_query_dcbx_mode reports MLX5E_DCBX_PARAM_VER_OPER_AUTO, so mlx5e_dcbnl_initialize
  // leaves DCB_CAP_DCBX_HOST out of priv->dcbx.cap (what getdcbx returns).
  bool firmware_dcbx = false;
};

// The table mlnx_qos calls the firmware default: priority dscp >> 3.
std::array<uint8_t, 64> mlx5_default_dscp2prio();

// One netdev as its driver's dcbnl_ops and the kernel's dcb_app_list see it.
struct FakeDcbNetdev {
  // false: a driver without dcbnl_ops; dcb_doit answers every command with EOPNOTSUPP.
  bool supported = true;
  // This netdev's dcb_app_list entries in list order: dcb_app_add inserts at the head (list_add),
  // so dcbnl_ieee_fill lists the newest first.
  std::vector<DcbApp> apps;
  // nullopt: the driver has no ieee_getpfc/ieee_setpfc. pfc_cap is the hardware's and never
  // changes by a SET; pfc_en, mbc and delay take the values written.
  std::optional<ieee_pfc> pfc;
  // nullopt: no ieee_getets/ieee_setets. A SET replaces it whole.
  std::optional<ieee_ets> ets;
  // nullopt: no dcbnl_getapptrust/setapptrust (kernels before 6.2, or drivers like mlx5).
  std::optional<std::vector<uint8_t>> trust;
  // DCB_ATTR_DCBX after the nest (getdcbx); nullopt: not sent.
  std::optional<uint8_t> dcbx;
  // Present for an mlx5e netdev: its setapp/delapp/getpfc/setpfc replace the generic behaviour.
  std::optional<FakeMlx5Dcb> mlx5;
  // What the DCBX peer advertised, for a driver with the peer operations (qede:
  // qede_dcbnl_ieee_peer_getpfc, qede_dcbnl_peer_getappinfo/_getapptable in
  // drivers/net/ethernet/qlogic/qede/qede_dcbnl.c); nullopt for one without (mlx5e, whose
  // mlx5e_dcbnl_ops have none).
  std::optional<ieee_pfc> peer_pfc;
  std::optional<std::vector<DcbApp>> peer_apps;
};

// A request as the fake parsed it, with its bytes.
struct FakeDcbRequest {
  uint16_t type = 0;  // RTM_GETDCB or RTM_SETDCB
  uint8_t cmd = 0;    // dcbmsg.cmd: DCB_CMD_IEEE_GET, _SET or _DEL
  std::string ifname;
  Bytes bytes;
};

class FakeDcbKernel {
 public:
  static constexpr uint32_t kPortId = 5150;
  // The ext-ack text the fake sends with EOPNOTSUPP for a netdev without DCB. dcb_doit itself sets
  // none (the caller then sees only the errno); a text here checks that one survives when present.
  static constexpr const char* kNoDcbOpsText = "fake dcbnl: device has no DCB ops";

  FakeDcbKernel() = default;
  // connect() hands out sockets that point back here.
  FakeDcbKernel(const FakeDcbKernel&) = delete;
  FakeDcbKernel& operator=(const FakeDcbKernel&) = delete;

  // A netdev with a ConnectX-like DCB driver: PFC on 8 TCs (nothing enabled, mbc 0, delay 0),
  // ETS with every priority on TC 0, an empty app table, DCBX host-managed IEEE, no app trust.
  FakeDcbNetdev& add_netdev(const std::string& name);
  // An mlx5e netdev as the driver leaves it after probe (mlx5e_dcbnl_initialize, then
  // mlx5e_dcbnl_init_app once registered): trust and table read from the firmware; with DSCP trust
  // every DSCP has an app entry (64, added 0..63, so listed 63..0).
  FakeDcbNetdev& add_mlx5_netdev(const std::string& name, const Mlx5Boot& boot = {});
  // A netdev whose driver has no DCB (veth, most virtual devices).
  FakeDcbNetdev& add_unsupported_netdev(const std::string& name);
  // An existing netdev's state, to set up or inspect; aborts the test binary if unknown.
  FakeDcbNetdev& netdev(const std::string& name);

  // An MnlSocket whose requests this fake answers; it must not outlive the fake.
  MnlSocket connect();

  const std::vector<FakeDcbRequest>& requests() const { return requests_; }
  // Requests with this dcbmsg.cmd, whatever their outcome.
  size_t count(uint8_t cmd) const;
  // RTM_SETDCB requests (IEEE_SET and IEEE_DEL), refused ones included: a converged host
  // reconciled again must see none.
  size_t write_count() const;
  void clear_requests() { requests_.clear(); }

  // The datagrams the kernel would send for one request (what connect()'s transport replies).
  std::vector<Bytes> answer(const nlmsghdr* request);

 private:
  std::map<std::string, FakeDcbNetdev> netdevs_;
  std::vector<FakeDcbRequest> requests_;
};

}  // namespace rdmactl::test
