// SPDX-License-Identifier: Apache-2.0
// DCB netlink requests, the IEEE_GET reply parser and DcbClient (see dcbnl.h).
//
// The kernel side is net/dcb/dcbnl.c: dcb_doit answers every DCB command with one message of the
// command's type (RTM_GETDCB for IEEE_GET, RTM_SETDCB for IEEE_SET/DEL) and then the ack asked
// for. IEEE_SET and IEEE_DEL report what the driver said not as an NLMSG_ERROR but as a u8 status
// in DCB_ATTR_IEEE of that reply (dcbnl_ieee_set: `nla_put_u8(skb, DCB_ATTR_IEEE, err)`), so a
// request the driver refused still ends in a zero ack; the status is what tells.
#include "agent/platform/dcbnl.h"

#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <utility>

namespace rdmactl {
namespace {

// As iproute2's dcb_prepare: reads are plain requests, writes ask for an ack (talk() adds one to
// every request anyway, so each exchange ends in something).
constexpr uint16_t kGetFlags = NLM_F_REQUEST;
constexpr uint16_t kSetFlags = NLM_F_REQUEST | NLM_F_ACK;

// Indexed by attribute type: one past the largest type each table reads.
constexpr size_t kTopTableSize = DCB_ATTR_DCBX + 1;
constexpr size_t kIeeeTableSize = kDcbAttrAppTrustTable + 1;

// The top level of every reply: DCB_ATTR_DCBX follows the nest where the driver has getdcbx
// (dcbnl_ieee_fill: `if (dcbx >= 0) nla_put_u8(skb, DCB_ATTR_DCBX, dcbx)`); anything newer is ignored.
constexpr AttributePolicy kGetReplyPolicy[] = {
    {DCB_ATTR_IFNAME, MNL_TYPE_NUL_STRING, "DCB_ATTR_IFNAME"},
    {DCB_ATTR_IEEE, MNL_TYPE_NESTED, "DCB_ATTR_IEEE", true},
    {DCB_ATTR_DCBX, MNL_TYPE_U8, "DCB_ATTR_DCBX"},
};

// IEEE_SET/IEEE_DEL replies carry DCB_ATTR_IEEE as the driver's status instead of a nest.
constexpr AttributePolicy kStatusReplyPolicy[] = {
    {DCB_ATTR_IEEE, MNL_TYPE_U8, "DCB_ATTR_IEEE", true},
};

// Inside DCB_ATTR_IEEE. ieee_pfc must be the exact struct: a longer one would come from a uapi
// this code does not know, and reading a prefix of it back into a SET would drop fields.
constexpr AttributePolicy kIeeePolicy[] = {
    {DCB_ATTR_IEEE_PFC, MNL_TYPE_BINARY, "DCB_ATTR_IEEE_PFC", false, sizeof(ieee_pfc)},
    {DCB_ATTR_IEEE_APP_TABLE, MNL_TYPE_NESTED, "DCB_ATTR_IEEE_APP_TABLE"},
    {kDcbAttrAppTrustTable, MNL_TYPE_NESTED, "DCB_ATTR_DCB_APP_TRUST_TABLE"},
    // What the DCBX peer (the switch) advertises, from drivers that implement ieee_peer_getpfc
    // and peer_getappinfo/peer_getapptable (dcbnl_ieee_fill; qede does, mlx5 does not).
    {DCB_ATTR_IEEE_PEER_PFC, MNL_TYPE_BINARY, "DCB_ATTR_IEEE_PEER_PFC", false, sizeof(ieee_pfc)},
    {DCB_ATTR_IEEE_PEER_APP, MNL_TYPE_NESTED, "DCB_ATTR_IEEE_PEER_APP"},
};

// The entries of DCB_ATTR_IEEE_APP_TABLE (repeated, so read in order rather than into a table).
constexpr AttributePolicy kAppEntryPolicy[] = {
    {DCB_ATTR_IEEE_APP, MNL_TYPE_BINARY, "DCB_ATTR_IEEE_APP", false, sizeof(dcb_app)},
    {kDcbAttrDcbApp, MNL_TYPE_BINARY, "DCB_ATTR_DCB_APP", false, sizeof(dcb_app)},
};

// The entries of DCB_ATTR_DCB_APP_TRUST_TABLE: one selector each.
constexpr AttributePolicy kTrustEntryPolicy[] = {
    {DCB_ATTR_IEEE_APP, MNL_TYPE_U8, "DCB_ATTR_IEEE_APP"},
    {kDcbAttrDcbApp, MNL_TYPE_U8, "DCB_ATTR_DCB_APP"},
};

// A GET reply with the whole ieee_pfc kept, for the read-modify-write of set_pfc_enable.
struct IeeeReply {
  DcbIeeeState state;
  std::optional<ieee_pfc> pfc;
};

// dcbnl_app_attr_type_get: PCP entries travel as DCB_ATTR_DCB_APP, IEEE selectors as
// DCB_ATTR_IEEE_APP; the kernel rejects an entry typed the other way (EINVAL).
uint16_t app_attr_type(uint8_t selector) {
  return selector == kDcbSelectorPcp ? kDcbAttrDcbApp : uint16_t{DCB_ATTR_IEEE_APP};
}

void start_request(MnlMessage& message, uint16_t type, uint16_t flags, uint8_t cmd,
                   const std::string& ifname) {
  message.put_header(type, flags);
  dcbmsg header{};
  header.dcb_family = AF_UNSPEC;
  header.cmd = cmd;
  message.put_extra_header(header);
  message.put_str(DCB_ATTR_IFNAME, ifname);
}

void put_app_table(MnlMessage& message, const std::vector<DcbApp>& apps) {
  const MnlMessage::Nest ieee = message.nest_start(DCB_ATTR_IEEE);
  const MnlMessage::Nest table = message.nest_start(DCB_ATTR_IEEE_APP_TABLE);
  for (const DcbApp& app : apps) {
    dcb_app raw{};
    raw.selector = app.selector;
    raw.priority = app.priority;
    raw.protocol = app.protocol;
    message.put(app_attr_type(app.selector), &raw, sizeof raw);
  }
  message.nest_end(table);
  message.nest_end(ieee);
}

Error malformed_entry(const AttributePolicy& entry, const nlattr* attr, const char* table) {
  std::string expected = entry.data_type == MNL_TYPE_U8 ? "u8" : "binary";
  if (entry.length != 0) expected += " of " + std::to_string(entry.length) + " bytes";
  return make_error(ErrorKind::kPlatform,
                    "malformed " + std::string(entry.name) + " in " + table + ": " +
                        std::to_string(mnl_attr_get_payload_len(attr)) + "-byte payload where a " +
                        expected + " was expected",
                    {}, EBADMSG);
}

// Calls `use` with each entry of a table nest that `policy` lists, in order, after validating it;
// entries of types not listed (a selector kind newer than this code) are skipped.
template <typename Use>
Result<void> for_each_entry(const nlattr* nest, std::span<const AttributePolicy> policy,
                            const char* table, Use use) {
  for (const nlattr* attr : nested_entries(nest)) {
    const uint16_t type = mnl_attr_get_type(attr);
    for (const AttributePolicy& entry : policy) {
      if (entry.type != type) continue;
      const int rc = entry.length != 0 ? mnl_attr_validate2(attr, entry.data_type, entry.length)
                                       : mnl_attr_validate(attr, entry.data_type);
      if (rc < 0) return malformed_entry(entry, attr, table);
      use(attr);
      break;
    }
  }
  return ok();
}

Result<void> expect_reply(const nlmsghdr* message, uint16_t type, uint8_t cmd) {
  if (message->nlmsg_type != type) {
    char text[80];
    std::snprintf(text, sizeof text, "unexpected netlink message type 0x%x in a DCB reply",
                  message->nlmsg_type);
    return make_error(ErrorKind::kPlatform, text, {}, EBADMSG);
  }
  if (message->nlmsg_len < NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(dcbmsg))) {
    return make_error(ErrorKind::kPlatform, "DCB reply shorter than its dcbmsg", {}, EBADMSG);
  }
  const auto* header = static_cast<const dcbmsg*>(mnl_nlmsg_get_payload(message));
  if (header->cmd != cmd) {
    return make_error(ErrorKind::kPlatform,
                      "DCB reply to command " + std::to_string(header->cmd) + " where " +
                          std::to_string(cmd) + " was asked",
                      {}, EBADMSG);
  }
  return ok();
}

Result<IeeeReply> parse_reply(const nlmsghdr* message) {
  if (Result<void> shape = expect_reply(message, RTM_GETDCB, DCB_CMD_IEEE_GET); !shape) {
    return shape.error();
  }
  const nlattr* top[kTopTableSize] = {};
  if (Result<void> parsed = parse_attributes(message, sizeof(dcbmsg), kGetReplyPolicy, top);
      !parsed) {
    return parsed.error();
  }
  const nlattr* ieee[kIeeeTableSize] = {};
  if (Result<void> parsed = parse_nested(top[DCB_ATTR_IEEE], kIeeePolicy, ieee); !parsed) {
    return parsed.error();
  }

  IeeeReply reply;
  if (const nlattr* dcbx = top[DCB_ATTR_DCBX]; dcbx != nullptr) reply.state.dcbx = mnl_attr_get_u8(dcbx);
  if (const nlattr* pfc = ieee[DCB_ATTR_IEEE_PFC]; pfc != nullptr) {
    ieee_pfc raw{};
    std::memcpy(&raw, mnl_attr_get_payload(pfc), sizeof raw);  // the payload is only 4-aligned
    reply.pfc = raw;
    reply.state.pfc_enable = raw.pfc_en;
  }
  if (const nlattr* table = ieee[DCB_ATTR_IEEE_APP_TABLE]; table != nullptr) {
    Result<void> read = for_each_entry(
        table, kAppEntryPolicy, "DCB_ATTR_IEEE_APP_TABLE", [&reply](const nlattr* attr) {
          dcb_app raw{};
          std::memcpy(&raw, mnl_attr_get_payload(attr), sizeof raw);
          reply.state.apps.push_back({raw.selector, raw.priority, raw.protocol});
        });
    if (!read) return read.error();
  }
  if (const nlattr* peer = ieee[DCB_ATTR_IEEE_PEER_PFC]; peer != nullptr) {
    ieee_pfc raw{};
    std::memcpy(&raw, mnl_attr_get_payload(peer), sizeof raw);
    reply.state.peer_pfc_enable = raw.pfc_en;
  }
  if (const nlattr* table = ieee[DCB_ATTR_IEEE_PEER_APP]; table != nullptr) {
    // dcbnl_build_peer_app: DCB_ATTR_IEEE_APP entries (no info attribute for the IEEE form).
    std::vector<DcbApp> apps;
    Result<void> read = for_each_entry(table, kAppEntryPolicy, "DCB_ATTR_IEEE_PEER_APP", [&apps](const nlattr* attr) {
      dcb_app raw{};
      std::memcpy(&raw, mnl_attr_get_payload(attr), sizeof raw);
      apps.push_back({raw.selector, raw.priority, raw.protocol});
    });
    if (!read) return read.error();
    reply.state.peer_apps = std::move(apps);
  }
  if (const nlattr* table = ieee[kDcbAttrAppTrustTable]; table != nullptr) {
    std::vector<uint8_t> selectors;
    Result<void> read = for_each_entry(
        table, kTrustEntryPolicy, "DCB_ATTR_DCB_APP_TRUST_TABLE",
        [&selectors](const nlattr* attr) { selectors.push_back(mnl_attr_get_u8(attr)); });
    if (!read) return read.error();
    reply.state.trust = std::move(selectors);
  }
  return reply;
}

// talk() returns a reply handler's error as it is: name the request and netdev in it.
Error dcb_prefixed(const std::string& what, Error error) {
  error.message = what + ": " + error.message;
  return error;
}

// The status byte is the driver's negative errno cut to u8 ((u8)-EEXIST == 239); errnos above
// 127 (the kernel-internal ENOTSUPP, 524) cannot be told apart after the cut.
int status_errno(uint8_t status) {
  const int value = static_cast<int8_t>(status);
  return value < 0 ? -value : value;
}

// "<ifname>: <what>: <kernel text>", with the netdev as the error's resource. EOPNOTSUPP says
// which feature the driver lacks, since that (not a failure) is what a caller reports.
Error dcb_error(const std::string& ifname, const std::string& what, const char* feature,
                Error error) {
  error.where = ifname;
  if (error.err_no == EOPNOTSUPP) {
    std::string kernel_text;
    const std::string prefix = what + ": ";
    if (error.message.rfind(prefix, 0) == 0) kernel_text = error.message.substr(prefix.size());
    error.kind = ErrorKind::kNotSupported;
    error.message = what + ": " + feature + " is not supported by the driver of " + ifname;
    if (!kernel_text.empty()) error.message += ": " + kernel_text;
  }
  return error;
}

// One IEEE_SET or IEEE_DEL: the reply's status (when the kernel sent the reply), then the ack.
Result<void> talk_set(MnlSocket& socket, MnlMessage& request, const std::string& ifname,
                      const std::string& what, const char* feature) {
  const uint8_t cmd = static_cast<const dcbmsg*>(mnl_nlmsg_get_payload(request.header()))->cmd;
  std::optional<uint8_t> status;
  Result<void> done = socket.talk(
      request,
      [cmd, &status, &what](const nlmsghdr* reply) -> Result<void> {
        if (Result<void> shape = expect_reply(reply, RTM_SETDCB, cmd); !shape) {
          return dcb_prefixed(what, shape.error());
        }
        const nlattr* top[kTopTableSize] = {};
        if (Result<void> parsed =
                parse_attributes(reply, sizeof(dcbmsg), kStatusReplyPolicy, top);
            !parsed) {
          return dcb_prefixed(what, parsed.error());
        }
        status = mnl_attr_get_u8(top[DCB_ATTR_IEEE]);
        return ok();
      },
      what);
  // An NLMSG_ERROR comes from dcb_doit before any driver op runs: EOPNOTSUPP there means the
  // driver has no dcbnl_ops at all, whatever the request was for.
  if (!done) return dcb_error(ifname, what, "DCB", done.error());
  // Only an ack (no reply message) is a success too: nothing in it says otherwise.
  if (status && *status != 0) {
    return dcb_error(ifname, what, feature, make_errno_error(what, status_errno(*status)));
  }
  return ok();
}

Result<IeeeReply> get_reply(MnlSocket& socket, const std::string& ifname) {
  const std::string what = ifname + ": read DCB configuration";
  MnlMessage request;
  build_ieee_get(request, ifname);
  std::optional<IeeeReply> reply;
  Result<void> done = socket.talk(
      request,
      [&reply, &what](const nlmsghdr* message) -> Result<void> {
        Result<IeeeReply> parsed = parse_reply(message);
        if (!parsed) return dcb_prefixed(what, parsed.error());
        reply = std::move(*parsed);
        return ok();
      },
      what);
  if (!done) return dcb_error(ifname, what, "DCB", done.error());
  if (!reply) {
    return make_error(ErrorKind::kPlatform, what + ": the kernel acked without a reply", ifname,
                      EBADMSG);
  }
  return std::move(*reply);
}

}  // namespace

void build_ieee_get(MnlMessage& message, const std::string& ifname) {
  start_request(message, RTM_GETDCB, kGetFlags, DCB_CMD_IEEE_GET, ifname);
}

void build_ieee_set_apps(MnlMessage& message, const std::string& ifname,
                         const std::vector<DcbApp>& apps) {
  start_request(message, RTM_SETDCB, kSetFlags, DCB_CMD_IEEE_SET, ifname);
  put_app_table(message, apps);
}

void build_ieee_del_apps(MnlMessage& message, const std::string& ifname,
                         const std::vector<DcbApp>& apps) {
  start_request(message, RTM_SETDCB, kSetFlags, DCB_CMD_IEEE_DEL, ifname);
  put_app_table(message, apps);
}

void build_ieee_set_pfc(MnlMessage& message, const std::string& ifname,
                        const std::vector<uint8_t>& ieee_pfc) {
  start_request(message, RTM_SETDCB, kSetFlags, DCB_CMD_IEEE_SET, ifname);
  const MnlMessage::Nest ieee = message.nest_start(DCB_ATTR_IEEE);
  message.put(DCB_ATTR_IEEE_PFC, ieee_pfc.data(), ieee_pfc.size());
  message.nest_end(ieee);
}

void build_ieee_set_trust(MnlMessage& message, const std::string& ifname,
                          const std::vector<uint8_t>& selectors) {
  start_request(message, RTM_SETDCB, kSetFlags, DCB_CMD_IEEE_SET, ifname);
  const MnlMessage::Nest ieee = message.nest_start(DCB_ATTR_IEEE);
  const MnlMessage::Nest table = message.nest_start(kDcbAttrAppTrustTable);
  for (const uint8_t selector : selectors) message.put_u8(app_attr_type(selector), selector);
  message.nest_end(table);
  message.nest_end(ieee);
}

Result<DcbIeeeState> parse_ieee_reply(const nlmsghdr* message) {
  Result<IeeeReply> reply = parse_reply(message);
  if (!reply) return reply.error();
  return std::move(reply->state);
}

Result<DcbIeeeState> DcbClient::get_ieee(const std::string& ifname) {
  Result<IeeeReply> reply = get_reply(socket_, ifname);
  if (!reply) return reply.error();
  return std::move(reply->state);
}

Result<void> DcbClient::add_apps(const std::string& ifname, const std::vector<DcbApp>& apps) {
  MnlMessage request;
  build_ieee_set_apps(request, ifname, apps);
  return talk_set(socket_, request, ifname, ifname + ": add DCB app entries", "DCB");
}

Result<void> DcbClient::delete_apps(const std::string& ifname, const std::vector<DcbApp>& apps) {
  MnlMessage request;
  build_ieee_del_apps(request, ifname, apps);
  return talk_set(socket_, request, ifname, ifname + ": delete DCB app entries", "DCB");
}

Result<void> DcbClient::set_pfc_enable(const std::string& ifname, uint8_t pfc_enable) {
  Result<IeeeReply> reply = get_reply(socket_, ifname);
  if (!reply) return reply.error();
  const std::string what = ifname + ": set PFC";
  if (!reply->pfc) {
    return make_error(ErrorKind::kNotSupported,
                      what + ": PFC is not supported by the driver of " + ifname, ifname,
                      EOPNOTSUPP);
  }
  ieee_pfc pfc = *reply->pfc;
  pfc.pfc_en = pfc_enable;
  std::vector<uint8_t> bytes(sizeof pfc);
  std::memcpy(bytes.data(), &pfc, sizeof pfc);
  MnlMessage request;
  build_ieee_set_pfc(request, ifname, bytes);
  return talk_set(socket_, request, ifname, what, "PFC");
}

Result<void> DcbClient::set_trust(const std::string& ifname,
                                  const std::vector<uint8_t>& selectors) {
  MnlMessage request;
  build_ieee_set_trust(request, ifname, selectors);
  return talk_set(socket_, request, ifname, ifname + ": set DCB app trust", "DCB app trust");
}

}  // namespace rdmactl
