// FakeDcbKernel: dcb_doit, dcbnl_ieee_get/set/del and dcbnl_ieee_fill re-told over the fake's
// per-netdev state (see fake_dcbnl.h). Requests are parsed with plain libmnl, not with the
// dcbnl.cpp code under test, so a bug there cannot hide itself here.
#include "tests/unit/platform/fake_dcbnl.h"

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
  MnlMessage message;
  message.put_header(type, flags);
  message.header()->nlmsg_seq = request->nlmsg_seq;
  message.header()->nlmsg_pid = FakeDcbKernel::kPortId;
  return message;
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

// netlink_ack on a socket with NETLINK_CAP_ACK (as MnlSocket::open sets): the request's header
// only, then the ext-ack message when there is one.
Bytes ack(const nlmsghdr* request, int error, const std::string& ext_ack) {
  uint16_t flags = NLM_F_CAPPED;
  if (!ext_ack.empty()) flags |= NLM_F_ACK_TLVS;
  MnlMessage message = kernel_message(request, NLMSG_ERROR, flags);
  nlmsgerr err{};
  err.error = -error;
  err.msg = *request;
  message.put_extra_header(err);
  if (!ext_ack.empty()) message.put_str(NLMSGERR_ATTR_MSG, ext_ack);
  return Bytes(message.bytes().begin(), message.bytes().end());
}

dcb_app raw_app(const DcbApp& app) {
  dcb_app raw{};
  raw.selector = app.selector;
  raw.priority = app.priority;
  raw.protocol = app.protocol;
  return raw;
}

// dcbnl_ieee_fill, in its attribute order.
MnlMessage ieee_fill(const nlmsghdr* request, const std::string& name, const FakeDcbNetdev& dev) {
  MnlMessage reply = dcb_reply(request, RTM_GETDCB, DCB_CMD_IEEE_GET);
  reply.put_str(DCB_ATTR_IFNAME, name);
  const MnlMessage::Nest ieee = reply.nest_start(DCB_ATTR_IEEE);
  if (dev.ets) reply.put(DCB_ATTR_IEEE_ETS, &*dev.ets, sizeof *dev.ets);
  if (dev.pfc) reply.put(DCB_ATTR_IEEE_PFC, &*dev.pfc, sizeof *dev.pfc);
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

// dcbnl_ieee_set: each present attribute in the kernel's order; the first driver error stops
// the rest (earlier ones stay applied) and becomes the status.
int ieee_set(FakeDcbNetdev& dev, const nlattr* const* ieee) {
  if (const nlattr* ets = ieee[DCB_ATTR_IEEE_ETS]; ets != nullptr) {
    if (!dev.ets) return EOPNOTSUPP;
    std::memcpy(&*dev.ets, mnl_attr_get_payload(ets), sizeof *dev.ets);
  }
  if (const nlattr* pfc = ieee[DCB_ATTR_IEEE_PFC]; pfc != nullptr) {
    if (!dev.pfc) return EOPNOTSUPP;
    ieee_pfc written{};
    std::memcpy(&written, mnl_attr_get_payload(pfc), sizeof written);
    // As mlx5e_dcbnl_ieee_setpfc: the capability is the hardware's, the rest is configuration.
    dev.pfc->pfc_en = written.pfc_en;
    dev.pfc->mbc = written.mbc;
    dev.pfc->delay = written.delay;
  }
  if (const nlattr* table = ieee[DCB_ATTR_IEEE_APP_TABLE]; table != nullptr) {
    for (const nlattr* attr : nested_entries(table)) {
      DcbApp app;
      const int rc = read_app_entry(attr, app);
      if (rc < 0) continue;
      if (rc > 0) return rc;
      // dcb_ieee_setapp refuses an exact duplicate (selector, protocol and priority) with
      // EEXIST; drivers with their own ieee_setapp differ (mlx5 deletes the old DSCP mapping
      // and re-adds, so a duplicate "succeeds"). The fake refuses, so that a reconciler that
      // re-adds entries already present is caught rather than passing on the lenient drivers.
      // The same DSCP with another priority is a second entry, as in dcb_app_list.
      if (std::find(dev.apps.begin(), dev.apps.end(), app) != dev.apps.end()) return EEXIST;
      dev.apps.push_back(app);
    }
  }
  if (const nlattr* table = ieee[kDcbAttrAppTrustTable]; table != nullptr) {
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

// dcbnl_ieee_del: only the app table can be deleted from; a missing entry is dcb_ieee_delapp's
// ENOENT.
int ieee_del(FakeDcbNetdev& dev, const nlattr* const* ieee) {
  const nlattr* table = ieee[DCB_ATTR_IEEE_APP_TABLE];
  if (table == nullptr) return 0;
  for (const nlattr* attr : nested_entries(table)) {
    DcbApp app;
    const int rc = read_app_entry(attr, app);
    if (rc < 0) continue;
    if (rc > 0) return rc;
    auto found = std::find(dev.apps.begin(), dev.apps.end(), app);
    if (found == dev.apps.end()) return ENOENT;
    dev.apps.erase(found);
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
