// SPDX-License-Identifier: Apache-2.0
// DCB netlink (dcbnl, linux/dcbnl.h) through the libmnl helper: the IEEE 802.1Qaz application
// table (DSCP -> priority entries), IEEE PFC, and the app-trust table of newer kernels.
//
// Requests are RTM_GETDCB / RTM_SETDCB on NETLINK_ROUTE with a struct dcbmsg and DCB_ATTR_IFNAME,
// as iproute2's `dcb` tool sends them. Changes are read-modify-write: PFC rewrites only pfc_en
// of the ieee_pfc the kernel returned; app entries are added before replaced ones are deleted
// (`dcb app replace`), so a DSCP is never left without a priority.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/mnl.h"

namespace rdmactl {

// IEEE_8021QAZ_APP_SEL_DSCP: an app entry whose protocol is a DSCP value.
constexpr uint8_t kDcbSelectorDscp = 5;

// uapi values newer than Debian 12's linux/dcbnl.h (6.1), from the kernel's apptrust series
// ("net: dcb: add new pcp selector to app object", "net: dcb: add new apptrust attribute", Linux
// 6.2). Named here, not #defined, so that a newer header's enumerators do not clash with them.
// DCB_APP_SEL_PCP: the non-IEEE selector for PCP (and DEI) app entries and trust.
constexpr uint8_t kDcbSelectorPcp = 255;
// enum ieee_attrs_app DCB_ATTR_DCB_APP: an app entry (or trust selector) with a non-IEEE
// selector; IEEE selectors 1..5 stay DCB_ATTR_IEEE_APP.
constexpr uint16_t kDcbAttrDcbApp = 2;
// enum ieee_attrs DCB_ATTR_DCB_APP_TRUST_TABLE, right after DCB_ATTR_DCB_BUFFER (10): a nest of u8
// selectors (typed DCB_ATTR_IEEE_APP or DCB_ATTR_DCB_APP) in trust order.
constexpr uint16_t kDcbAttrAppTrustTable = 11;

struct DcbApp {
  uint8_t selector = kDcbSelectorDscp;
  uint8_t priority = 0;
  uint16_t protocol = 0;  // the DSCP for kDcbSelectorDscp
  bool operator==(const DcbApp&) const = default;
};

// What DCB_CMD_IEEE_GET returned for one netdev.
struct DcbIeeeState {
  std::vector<DcbApp> apps;           // DCB_ATTR_IEEE_APP_TABLE, in kernel order
  std::optional<uint8_t> pfc_enable;  // ieee_pfc.pfc_en; nullopt when the driver has no PFC
  // DCB_ATTR_DCB_APP_TRUST_TABLE: selectors in trust order (kernel 6.3+ with a driver that
  // implements dcbnl_setapptrust); nullopt when absent.
  std::optional<std::vector<uint8_t>> trust;
  // What the DCBX peer advertises (DCB_ATTR_IEEE_PEER_PFC, DCB_ATTR_IEEE_PEER_APP): nullopt when
  // the driver does not expose it (mlx5, ice, i40e and bnxt_en implement no peer operation; their
  // firmware runs DCBX).
  std::optional<uint8_t> peer_pfc_enable;
  std::optional<std::vector<DcbApp>> peer_apps;
  // DCB_ATTR_DCBX, which dcbnl_ieee_fill (net/dcb/dcbnl.c) appends after the DCB_ATTR_IEEE nest
  // from the driver's getdcbx: the DCB_CAP_DCBX_* flags, the same byte DCB_CMD_GDCBX answers.
  // Without DCB_CAP_DCBX_HOST the device's own DCBX engine (firmware) is in charge and can
  // override PFC and the app table with what the switch advertises (mlx5: mlx5e_dcbnl_initialize
  // sets HOST only when DCBX_PARAM.version_oper is MLX5E_DCBX_PARAM_VER_OPER_HOST).
  // nullopt: the driver has no getdcbx.
  std::optional<uint8_t> dcbx;
};

// DCB_CAP_DCBX_HOST (linux/dcbnl.h): DCBX is run by the host's LLDP agent, or by nobody.
constexpr uint8_t kDcbCapDcbxHost = 0x01;

// Message builders (exposed for golden-byte tests). `pfc` is the whole ieee_pfc struct as read,
// with pfc_en replaced.
void build_ieee_get(MnlMessage& message, const std::string& ifname);
void build_ieee_set_apps(MnlMessage& message, const std::string& ifname, const std::vector<DcbApp>& apps);
void build_ieee_del_apps(MnlMessage& message, const std::string& ifname, const std::vector<DcbApp>& apps);
void build_ieee_set_pfc(MnlMessage& message, const std::string& ifname, const std::vector<uint8_t>& ieee_pfc);
void build_ieee_set_trust(MnlMessage& message, const std::string& ifname, const std::vector<uint8_t>& selectors);

// Reads a DCB_CMD_IEEE_GET reply (RTM_GETDCB, dcbmsg, DCB_ATTR_IFNAME, DCB_ATTR_IEEE nest) as the
// kernel's dcbnl_ieee_fill builds it (DCB_ATTR_DCBX included); attributes not read here (ETS, the
// peer's ETS) are ignored.
Result<DcbIeeeState> parse_ieee_reply(const nlmsghdr* message);

// A DCB client over an MnlSocket on NETLINK_ROUTE. Errors name the netdev; a driver without DCB
// answers EOPNOTSUPP, which becomes kNotSupported.
class DcbClient {
 public:
  explicit DcbClient(MnlSocket& socket) : socket_(socket) {}

  Result<DcbIeeeState> get_ieee(const std::string& ifname);
  Result<void> add_apps(const std::string& ifname, const std::vector<DcbApp>& apps);
  Result<void> delete_apps(const std::string& ifname, const std::vector<DcbApp>& apps);
  // Read-modify-write of pfc_en only: every other ieee_pfc field keeps the kernel's value.
  Result<void> set_pfc_enable(const std::string& ifname, uint8_t pfc_enable);
  Result<void> set_trust(const std::string& ifname, const std::vector<uint8_t>& selectors);

 private:
  MnlSocket& socket_;
};

}  // namespace rdmactl
