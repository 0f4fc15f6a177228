// SPDX-License-Identifier: Apache-2.0
// FakeDcbKernel: dcb_doit, dcbnl_ieee_get/set/del and dcbnl_ieee_fill re-told over the fake's
// per-netdev state (see fake_dcbnl.h). Requests are parsed with plain libmnl, not with the
// dcbnl.cpp code under test, so a bug there cannot hide itself here.
#include "tests/unit/platform/fake_dcbnl.h"

#include "tests/unit/platform/fake_genl.h"

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

namespace rdmactl::test {
namespace {

// Indexed by attribute type, one past the largest read.
constexpr size_t kTopAttrs = DCB_ATTR_DCBX + 1;
constexpr size_t kIeeeAttrs = kDcbAttrAppTrustTable + 1;

// What dcb_doit ends in: an NLMSG_ERROR, or the command's reply message followed by the ack.
struct Outcome {
  int error = 0;          // positive errno for an NLMSG_ERROR; 0 when `reply` is sent
  std::string ext_ack;    // NLMSGERR_ATTR_MSG with the error, when non-empty
  std::optional<MnlMessage> reply;
};

Outcome refuse(int error, std::string ext_ack = {}) { return Outcome{error, std::move(ext_ack), {}}; }

// dcbnl_app_attr_type_get: how dcbnl_ieee_fill types an entry or trusted selector.
uint16_t app_attr_type(uint8_t selector) {
  return selector == kDcbSelectorPcp ? kDcbAttrDcbApp : uint16_t{DCB_ATTR_IEEE_APP};
}

// dcbnl_app_attr_type_validate + dcbnl_app_selector_validate (6.2+): IEEE selectors 1..5 as
// DCB_ATTR_IEEE_APP, the PCP selector as DCB_ATTR_DCB_APP, anything else refused.
bool app_type_valid(uint16_t type) { return type == DCB_ATTR_IEEE_APP || type == kDcbAttrDcbApp; }
bool selector_valid(uint16_t type, uint8_t selector) {
  if (selector >= IEEE_8021QAZ_APP_SEL_ETHERTYPE && selector <= IEEE_8021QAZ_APP_SEL_DSCP) {
    return type == DCB_ATTR_IEEE_APP;
  }
  return selector == kDcbSelectorPcp && type == kDcbAttrDcbApp;
}

MnlMessage kernel_message(const nlmsghdr* request, uint16_t type, uint16_t flags) {
  return test::kernel_message(request, type, flags, FakeDcbKernel::kPortId);
}

// dcbnl_newmsg: the command's reply type, dcbmsg with the request's cmd.
MnlMessage dcb_reply(const nlmsghdr* request, uint16_t type, uint8_t cmd) {
  MnlMessage message = kernel_message(request, type, 0);
  dcbmsg header{};
  header.dcb_family = AF_UNSPEC;
  header.cmd = cmd;
  message.put_extra_header(header);
  return message;
}

// netlink_ack on a socket with NETLINK_CAP_ACK (as MnlSocket::open sets).
Bytes ack(const nlmsghdr* request, int error, const std::string& ext_ack) {
  return netlink_ack(request, error, ext_ack, FakeDcbKernel::kPortId);
}

dcb_app raw_app(const DcbApp& app) {
  dcb_app raw{};
  raw.selector = app.selector;
  raw.priority = app.priority;
  raw.protocol = app.protocol;
  return raw;
}

ieee_pfc mlx5_getpfc(const FakeMlx5Dcb& hw);

// dcbnl_ieee_fill, in its attribute order.
MnlMessage ieee_fill(const nlmsghdr* request, const std::string& name, const FakeDcbNetdev& dev) {
  MnlMessage reply = dcb_reply(request, RTM_GETDCB, DCB_CMD_IEEE_GET);
  reply.put_str(DCB_ATTR_IFNAME, name);
  const MnlMessage::Nest ieee = reply.nest_start(DCB_ATTR_IEEE);
  if (dev.ets) reply.put(DCB_ATTR_IEEE_ETS, &*dev.ets, sizeof *dev.ets);
  if (dev.mlx5) {
    const ieee_pfc pfc = mlx5_getpfc(*dev.mlx5);
    reply.put(DCB_ATTR_IEEE_PFC, &pfc, sizeof pfc);
  } else if (dev.pfc) {
    reply.put(DCB_ATTR_IEEE_PFC, &*dev.pfc, sizeof *dev.pfc);
  }
  const MnlMessage::Nest table = reply.nest_start(DCB_ATTR_IEEE_APP_TABLE);
  for (const DcbApp& app : dev.apps) {
    const dcb_app raw = raw_app(app);
    reply.put(app_attr_type(app.selector), &raw, sizeof raw);
  }
  reply.nest_end(table);
  if (dev.trust) {
    const MnlMessage::Nest trust = reply.nest_start(kDcbAttrAppTrustTable);
    for (const uint8_t selector : *dev.trust) {
      reply.put_u8(app_attr_type(selector), selector);
    }
    reply.nest_end(trust);
  }
  // The DCBX peer, after the trust table (dcbnl_ieee_fill, net/dcb/dcbnl.c 6.12 lines 1273-1300):
  // DCB_ATTR_IEEE_PEER_PFC from ieee_peer_getpfc, DCB_ATTR_IEEE_PEER_APP from
  // dcbnl_build_peer_app with no info attribute (app_info_type DCB_ATTR_IEEE_APP_UNSPEC) and one
  // DCB_ATTR_IEEE_APP a peer entry.
  if (dev.peer_pfc) reply.put(DCB_ATTR_IEEE_PEER_PFC, &*dev.peer_pfc, sizeof *dev.peer_pfc);
  if (dev.peer_apps) {
    const MnlMessage::Nest peer = reply.nest_start(DCB_ATTR_IEEE_PEER_APP);
    for (const DcbApp& app : *dev.peer_apps) {
      const dcb_app raw = raw_app(app);
      reply.put(DCB_ATTR_IEEE_APP, &raw, sizeof raw);
    }
    reply.nest_end(peer);
  }
  reply.nest_end(ieee);
  if (dev.dcbx) reply.put_u8(DCB_ATTR_DCBX, *dev.dcbx);
  return reply;
}

// Reads one app-table entry as dcbnl_ieee_set/del do: 0 with `out` set, -1 for an entry type
// the kernel skips, or a positive errno.
int read_app_entry(const nlattr* attr, DcbApp& out) {
  const uint16_t type = mnl_attr_get_type(attr);
  if (!app_type_valid(type)) return -1;
  if (mnl_attr_get_payload_len(attr) < sizeof(dcb_app)) return ERANGE;
  dcb_app raw{};
  std::memcpy(&raw, mnl_attr_get_payload(attr), sizeof raw);
  if (!selector_valid(type, raw.selector)) return EINVAL;
  out = {raw.selector, raw.priority, raw.protocol};
  return 0;
}

// dcb_ieee_setapp (net/dcb/dcbnl.c): several priorities per protocol are allowed, an exact
// duplicate (selector, protocol and priority) is EEXIST, and dcb_app_add inserts at the head.
int generic_setapp(FakeDcbNetdev& dev, const DcbApp& app) {
  if (std::find(dev.apps.begin(), dev.apps.end(), app) != dev.apps.end()) return EEXIST;
  dev.apps.insert(dev.apps.begin(), app);
  return 0;
}

// dcb_ieee_delapp: removes the entry matching selector, protocol and priority exactly; ENOENT
// otherwise.
int generic_delapp(FakeDcbNetdev& dev, const DcbApp& app) {
  auto found = std::find(dev.apps.begin(), dev.apps.end(), app);
  if (found == dev.apps.end()) return ENOENT;
  dev.apps.erase(found);
  return 0;
}

// The firmware's answer to a QPDPM write refused by failure injection: mlx5_cmd_exec maps a bad
// command status to an errno; which one depends on the status, so the model uses EIO.
constexpr int kFirmwareError = EIO;

// mlx5e_set_trust_state -> mlx5e_update_trust_state_hw: a QPTS write, even of the same value.
void mlx5_set_trust(FakeMlx5Dcb& hw, int trust) {
  hw.trust = trust;
  ++hw.trust_writes;
}

// mlx5e_set_dscp2prio: QPDPM read-modify-write of one DSCP; the cache follows on success.
int mlx5_set_dscp2prio(FakeMlx5Dcb& hw, uint16_t dscp, uint8_t priority) {
  if (auto refused = hw.refuse_dscp.find(dscp); refused != hw.refuse_dscp.end()) {
    hw.refuse_dscp.erase(refused);
    return kFirmwareError;
  }
  // QPDPM's prio is a 4-bit field (mlx5_ifc_qpdpm_dscp_reg_bits) and the driver never range-checks
  // app->priority: MLX5_SET16 masks it.
  hw.dscp2prio[dscp] = priority & 0x0f;
  ++hw.dscp2prio_writes;
  return 0;
}

// mlx5e_dcbnl_ieee_setapp.
int mlx5_setapp(FakeDcbNetdev& dev, const DcbApp& app) {
  FakeMlx5Dcb& hw = *dev.mlx5;
  if (!hw.vport_group_manager || !hw.dscp_supported) return EOPNOTSUPP;
  if (app.selector != IEEE_8021QAZ_APP_SEL_DSCP || app.protocol >= 64) return EINVAL;
  // "Save the old entry info": the old entry is assumed to hold the cached firmware priority.
  const DcbApp old{IEEE_8021QAZ_APP_SEL_DSCP, hw.dscp2prio[app.protocol], app.protocol};
  // "Check if need to switch to dscp trust state": the first DSCP entry turns DSCP trust on,
  // before the table is written.
  if (hw.dscp_app_cnt == 0) mlx5_set_trust(hw, FakeMlx5Dcb::kTrustDscp);
  // "Skip the fw command if new and old mapping are the same".
  if (app.priority != hw.dscp2prio[app.protocol]) {
    if (const int err = mlx5_set_dscp2prio(hw, app.protocol, app.priority); err != 0) {
      // fw_err: trust goes back to PCP even while other DSCP entries remain; the list and the
      // counter are left as they were.
      mlx5_set_trust(hw, FakeMlx5Dcb::kTrustPcp);
      return err;
    }
  }
  // "Delete the old entry if exists", then add the new one: one list entry per DSCP, no EEXIST.
  const bool is_new = generic_delapp(dev, old) != 0;
  if (const int err = generic_setapp(dev, app); err != 0) return err;
  if (is_new) ++hw.dscp_app_cnt;
  return 0;
}

// mlx5e_dcbnl_ieee_delapp.
int mlx5_delapp(FakeDcbNetdev& dev, const DcbApp& app) {
  FakeMlx5Dcb& hw = *dev.mlx5;
  if (!hw.vport_group_manager || !hw.dscp_supported) return EOPNOTSUPP;
  if (app.selector != IEEE_8021QAZ_APP_SEL_DSCP || app.protocol >= 64) return EINVAL;
  // "Skip if no dscp app entry".
  if (hw.dscp_app_cnt == 0) return ENOENT;
  // "Check if the entry matches fw setting": a delete must name the current priority.
  if (app.priority != hw.dscp2prio[app.protocol]) return ENOENT;
  if (const int err = generic_delapp(dev, app); err != 0) return err;
  // "Reset the priority mapping back to zero": to 0, not to any default.
  if (const int err = mlx5_set_dscp2prio(hw, app.protocol, 0); err != 0) {
    // fw_err: the entry is gone from the list but the counter is not decremented.
    mlx5_set_trust(hw, FakeMlx5Dcb::kTrustPcp);
    return err;
  }
  // "Check if need to switch to pcp trust state": the last delete turns PCP trust back on.
  if (--hw.dscp_app_cnt == 0) mlx5_set_trust(hw, FakeMlx5Dcb::kTrustPcp);
  return 0;
}

// mlx5e_dcbnl_ieee_getpfc: pfc_cap = mlx5_max_tc + 1 (8), pfc_en from PFCC, delay = the cable
// length only where the port has buffers. (requests/indications carry pause counters: 0 here.)
ieee_pfc mlx5_getpfc(const FakeMlx5Dcb& hw) {
  ieee_pfc pfc{};
  pfc.pfc_cap = IEEE_8021QAZ_MAX_TCS;
  pfc.pfc_en = hw.pfc_en;
  if (hw.buffer_supported) pfc.delay = hw.cable_len;
  return pfc;
}

// mlx5e_dcbnl_ieee_setpfc: pfc_en written (tx and rx) and the link toggled only when it changes;
// a delay is taken only when non-zero, below MLX5E_MAX_CABLE_LENGTH (1000) and different; pfc_cap,
// mbc, requests and indications are ignored.
int mlx5_setpfc(FakeMlx5Dcb& hw, const ieee_pfc& pfc) {
  if (pfc.pfc_en != hw.pfc_en) {
    if (hw.refuse_pfc) return kFirmwareError;
    hw.pfc_en = pfc.pfc_en;
    ++hw.link_toggles;  // mlx5_toggle_port_link
  }
  if (pfc.delay != 0 && pfc.delay < 1000 && pfc.delay != hw.cable_len) hw.cable_len = pfc.delay;
  return 0;
}

// dcbnl_ieee_set: each present attribute in the kernel's order; the first driver error stops
// the rest (earlier ones stay applied) and becomes the status.
int ieee_set(FakeDcbNetdev& dev, const nlattr* const* ieee) {
  // An attribute whose op the driver lacks is skipped without an error (`if (ieee[...] &&
  // ops->ieee_set...)`); only the app table and app trust are refused.
  if (const nlattr* ets = ieee[DCB_ATTR_IEEE_ETS]; ets != nullptr && dev.ets) {
    std::memcpy(&*dev.ets, mnl_attr_get_payload(ets), sizeof *dev.ets);
  }
  if (const nlattr* pfc = ieee[DCB_ATTR_IEEE_PFC]; pfc != nullptr) {
    ieee_pfc written{};
    std::memcpy(&written, mnl_attr_get_payload(pfc), sizeof written);
    if (dev.mlx5) {
      if (const int err = mlx5_setpfc(*dev.mlx5, written); err != 0) return err;
    } else if (dev.pfc) {
      // The generic model's driver keeps what it is given, pfc_cap excepted.
      dev.pfc->pfc_en = written.pfc_en;
      dev.pfc->mbc = written.mbc;
      dev.pfc->delay = written.delay;
    }
  }
  if (const nlattr* table = ieee[DCB_ATTR_IEEE_APP_TABLE]; table != nullptr) {
    // dcbnl_app_table_setdel: entries in message order, ops->ieee_setapp ?: dcb_ieee_setapp.
    for (const nlattr* attr : nested_entries(table)) {
      DcbApp app;
      const int rc = read_app_entry(attr, app);
      if (rc < 0) continue;
      if (rc > 0) return rc;
      if (const int err = dev.mlx5 ? mlx5_setapp(dev, app) : generic_setapp(dev, app); err != 0) return err;
    }
  }
  if (const nlattr* table = ieee[kDcbAttrAppTrustTable]; table != nullptr) {
    // No dcbnl_setapptrust (mlx5 has none): EOPNOTSUPP.
    if (!dev.trust) return EOPNOTSUPP;
    std::vector<uint8_t> selectors;
    for (const nlattr* attr : nested_entries(table)) {
      const uint16_t type = mnl_attr_get_type(attr);
      if (!app_type_valid(type) || mnl_attr_get_payload_len(attr) != 1) return EINVAL;
      const uint8_t selector = mnl_attr_get_u8(attr);
      if (!selector_valid(type, selector)) return EINVAL;
      if (std::find(selectors.begin(), selectors.end(), selector) != selectors.end()) {
        return EINVAL;  // a selector trusted twice
      }
      selectors.push_back(selector);
    }
    dev.trust = std::move(selectors);
  }
  return 0;
}

// dcbnl_ieee_del: only the app table (ops->ieee_delapp ?: dcb_ieee_delapp), entries in message
// order, the first error stops the rest.
int ieee_del(FakeDcbNetdev& dev, const nlattr* const* ieee) {
  const nlattr* table = ieee[DCB_ATTR_IEEE_APP_TABLE];
  if (table == nullptr) return 0;
  for (const nlattr* attr : nested_entries(table)) {
    DcbApp app;
    const int rc = read_app_entry(attr, app);
    if (rc < 0) continue;
    if (rc > 0) return rc;
    if (const int err = dev.mlx5 ? mlx5_delapp(dev, app) : generic_delapp(dev, app); err != 0) return err;
  }
  return 0;
}

// nla_parse of DCB_ATTR_IEEE with dcbnl_ieee_policy: ETS and PFC at least their struct, the
// tables nests. A violation fails the whole request before any driver op runs.
int parse_ieee(const nlattr* nest, const nlattr** ieee) {
  for (const nlattr* attr : nested_entries(nest)) {
    const uint16_t type = mnl_attr_get_type(attr);
    if (type >= kIeeeAttrs) continue;
    const size_t length = mnl_attr_get_payload_len(attr);
    if (type == DCB_ATTR_IEEE_ETS && length < sizeof(ieee_ets)) return ERANGE;
    if (type == DCB_ATTR_IEEE_PFC && length < sizeof(ieee_pfc)) return ERANGE;
    ieee[type] = attr;
  }
  return 0;
}

[[noreturn]] void missing_netdev(const std::string& name) {
  std::fprintf(stderr, "FakeDcbKernel: no netdev %s was added\n", name.c_str());
  std::abort();
}

}  // namespace

FakeDcbNetdev& FakeDcbKernel::add_netdev(const std::string& name) {
  FakeDcbNetdev dev;
  ieee_pfc pfc{};
  pfc.pfc_cap = IEEE_8021QAZ_MAX_TCS;
  dev.pfc = pfc;
  ieee_ets ets{};
  ets.ets_cap = IEEE_8021QAZ_MAX_TCS;
  ets.tc_tx_bw[0] = 100;
  ets.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
  dev.ets = ets;
  dev.dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
  return netdevs_[name] = std::move(dev);
}

std::array<uint8_t, 64> mlx5_default_dscp2prio() {
  std::array<uint8_t, 64> table{};
  for (size_t dscp = 0; dscp < table.size(); ++dscp) table[dscp] = static_cast<uint8_t>(dscp >> 3);
  return table;
}

FakeDcbNetdev& FakeDcbKernel::add_mlx5_netdev(const std::string& name, const Mlx5Boot& boot) {
  FakeDcbNetdev dev;
  FakeMlx5Dcb hw;
  // mlx5e_trust_initialize: trust and the DSCP table are read from the firmware, never written.
  hw.trust = boot.trust;
  hw.dscp2prio = boot.dscp2prio.value_or(mlx5_default_dscp2prio());
  dev.mlx5 = hw;
  // mlx5e_dcbnl_initialize: DCBX capabilities (host mode), then mlx5e_ets_init rewrites ETS: every
  // TC vendor-TSA at 100%, priority 0 on TC 1 and priority 1 on TC 0. (Its ETS validation rules
  // are not modelled: rdmactl never writes ETS.)
  dev.dcbx = DCB_CAP_DCBX_VER_CEE | DCB_CAP_DCBX_VER_IEEE;
  if (!boot.firmware_dcbx) *dev.dcbx |= DCB_CAP_DCBX_HOST;
  ieee_ets ets{};
  ets.ets_cap = IEEE_8021QAZ_MAX_TCS;
  for (int tc = 0; tc < IEEE_8021QAZ_MAX_TCS; ++tc) {
    ets.tc_tx_bw[tc] = 100;
    ets.tc_tsa[tc] = IEEE_8021QAZ_TSA_VENDOR;
    ets.prio_tc[tc] = static_cast<uint8_t>(tc);
  }
  ets.prio_tc[0] = 1;
  ets.prio_tc[1] = 0;
  dev.ets = ets;
  // mlx5e_dcbnl_init_app -> mlx5e_dcbnl_dscp_app(INIT): only under DSCP trust, every DSCP 0..63 is
  // added with its firmware priority (dcb_ieee_setapp, so the list ends up 63..0), count 64.
  if (hw.trust == FakeMlx5Dcb::kTrustDscp) {
    for (uint16_t dscp = 0; dscp < 64; ++dscp) {
      generic_setapp(dev, {IEEE_8021QAZ_APP_SEL_DSCP, hw.dscp2prio[dscp], dscp});
    }
    dev.mlx5->dscp_app_cnt = 64;
  }
  return netdevs_[name] = std::move(dev);
}

FakeDcbNetdev& FakeDcbKernel::add_unsupported_netdev(const std::string& name) {
  FakeDcbNetdev dev;
  dev.supported = false;
  return netdevs_[name] = std::move(dev);
}

FakeDcbNetdev& FakeDcbKernel::netdev(const std::string& name) {
  auto found = netdevs_.find(name);
  if (found == netdevs_.end()) missing_netdev(name);
  return found->second;
}

MnlSocket FakeDcbKernel::connect() {
  return MnlSocket::over(std::make_unique<ScriptedKernel>(
      [this](const nlmsghdr* request) { return answer(request); }, kPortId));
}

size_t FakeDcbKernel::count(uint8_t cmd) const {
  return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(),
                                           [cmd](const FakeDcbRequest& r) { return r.cmd == cmd; }));
}

size_t FakeDcbKernel::write_count() const {
  return static_cast<size_t>(
      std::count_if(requests_.begin(), requests_.end(),
                    [](const FakeDcbRequest& r) { return r.type == RTM_SETDCB; }));
}

std::vector<Bytes> FakeDcbKernel::answer(const nlmsghdr* request) {
  FakeDcbRequest& record = requests_.emplace_back();
  record.type = request->nlmsg_type;
  const auto* begin = reinterpret_cast<const uint8_t*>(request);
  record.bytes.assign(begin, begin + request->nlmsg_len);

  const Outcome outcome = [&]() -> Outcome {
    if (request->nlmsg_type != RTM_GETDCB && request->nlmsg_type != RTM_SETDCB) {
      return refuse(EOPNOTSUPP, "fake dcbnl: not a DCB request");
    }
    if (request->nlmsg_len < NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg))) return refuse(EINVAL);
    const auto* header = static_cast<const dcbmsg*>(mnl_nlmsg_get_payload(request));
    record.cmd = header->cmd;

    const nlattr* top[kTopAttrs] = {};
    mnl_attr_parse(
        request, sizeof(dcbmsg),
        [](const nlattr* attr, void* data) {
          if (mnl_attr_get_type(attr) < kTopAttrs) {
            static_cast<const nlattr**>(data)[mnl_attr_get_type(attr)] = attr;
          }
          return MNL_CB_OK;
        },
        top);
    // dcbnl_rtnl_policy: DCB_ATTR_IFNAME is an NLA_NUL_STRING, and dcb_doit needs it.
    const nlattr* ifname = top[DCB_ATTR_IFNAME];
    if (ifname == nullptr || mnl_attr_validate(ifname, MNL_TYPE_NUL_STRING) < 0) {
      return refuse(EINVAL);
    }
    record.ifname = mnl_attr_get_str(ifname);

    // The kernel also answers the CEE and older commands; this fake knows the IEEE ones.
    uint16_t expected_type = 0;
    switch (header->cmd) {
      case DCB_CMD_IEEE_GET: expected_type = RTM_GETDCB; break;
      case DCB_CMD_IEEE_SET:
      case DCB_CMD_IEEE_DEL: expected_type = RTM_SETDCB; break;
      default: return refuse(EOPNOTSUPP, "fake dcbnl: only IEEE commands are modelled");
    }
    // Stricter than dcb_doit, which lets a CAP_NET_ADMIN caller send any command under either
    // type: an unprivileged reader would get EPERM for a GET sent as RTM_SETDCB, so a builder
    // that mixes them up is caught here rather than on a host.
    if (request->nlmsg_type != expected_type) {
      return refuse(EINVAL, "fake dcbnl: message type does not match the command");
    }

    auto found = netdevs_.find(record.ifname);
    if (found == netdevs_.end()) return refuse(ENODEV);
    FakeDcbNetdev& dev = found->second;
    if (!dev.supported) return refuse(EOPNOTSUPP, kNoDcbOpsText);

    if (header->cmd == DCB_CMD_IEEE_GET) return Outcome{0, {}, ieee_fill(request, found->first, dev)};

    if (top[DCB_ATTR_IEEE] == nullptr) return refuse(EINVAL);
    const nlattr* ieee[kIeeeAttrs] = {};
    if (const int rc = parse_ieee(top[DCB_ATTR_IEEE], ieee); rc != 0) return refuse(rc);
    const int status = header->cmd == DCB_CMD_IEEE_SET ? ieee_set(dev, ieee) : ieee_del(dev, ieee);
    MnlMessage reply = dcb_reply(request, RTM_SETDCB, header->cmd);
    // nla_put_u8(skb, DCB_ATTR_IEEE, err) with err the driver's negative errno.
    reply.put_u8(DCB_ATTR_IEEE, static_cast<uint8_t>(-status));
    return Outcome{0, {}, std::move(reply)};
  }();

  if (outcome.error != 0) return {ack(request, outcome.error, outcome.ext_ack)};
  std::vector<Bytes> datagrams;
  datagrams.emplace_back(outcome.reply->bytes().begin(), outcome.reply->bytes().end());
  if (request->nlmsg_flags & NLM_F_ACK) datagrams.push_back(ack(request, 0, {}));
  return datagrams;
}

}  // namespace rdmactl::test
