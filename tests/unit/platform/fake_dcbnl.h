// A stateful fake of the kernel's DCB netlink (net/dcb/dcbnl.c) for tests of dcbnl users: the QoS
// reconciler's apply/verify/idempotence tests and DcbClient's own. It parses each request from its
// bytes as dcb_doit does, keeps per-netdev state (app table, ieee_pfc, ieee_ets, app trust), and
// answers with the messages the kernel sends: the command's reply (RTM_GETDCB with the
// dcbnl_ieee_fill attributes, or RTM_SETDCB with the u8 driver status in DCB_ATTR_IEEE), then the
// ack; or an NLMSG_ERROR for what dcb_doit refuses itself (unknown netdev, no DCB ops).
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

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/platform/dcbnl.h"
#include "agent/platform/mnl.h"
#include "tests/unit/platform/scripted_kernel.h"

namespace rdmactl::test {

// One netdev as its driver's dcbnl_ops and the kernel's dcb_app_list see it.
struct FakeDcbNetdev {
  // false: a driver without dcbnl_ops; dcb_doit answers every command with EOPNOTSUPP.
  bool supported = true;
  // This netdev's dcb_app_list entries, in insertion order (as dcbnl_ieee_fill lists them).
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
