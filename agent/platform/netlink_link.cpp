// SPDX-License-Identifier: Apache-2.0
// RouteSocket's links: the RTM_GETLINK dump and single get, decoded by parse_link, and the
// RTM_NEWLINK changes (MTU, admin state).
#include "agent/platform/netlink.h"

// glibc's <net/if.h> before <linux/if.h>, which then leaves out what glibc defined
// (linux/libc-compat.h): in the other order the two collide, and a unity-build unit may include
// <net/if.h> later through httplib.h.
#include <net/if.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>

#include <cstring>
#include <utility>

#include "agent/platform/netlink_internal.h"

namespace rdmactl {
namespace {

using netlink_detail::Exchange;
using netlink_detail::exchange_error;
using netlink_detail::exchange_failed;
using netlink_detail::MessageHandler;
using netlink_detail::run_dump;
using netlink_detail::send_built_change;
using netlink_detail::talk;

std::string oper_state_name(uint8_t state) {
  switch (state) {
    case IF_OPER_NOTPRESENT: return "notpresent";
    case IF_OPER_DOWN: return "down";
    case IF_OPER_LOWERLAYERDOWN: return "lowerlayerdown";
    case IF_OPER_TESTING: return "testing";
    case IF_OPER_DORMANT: return "dormant";
    case IF_OPER_UP: return "up";
    default: return "unknown";  // IF_OPER_UNKNOWN and anything newer than this code
  }
}

// Hardware address bytes as "aa:bb:cc:dd:ee:ff" (any length: IPoIB's are 20 bytes).
std::string hex_colon(const nlattr* attr) {
  if (attr == nullptr) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(nla_data(attr));
  const int len = nla_len(attr);
  std::string out;
  out.reserve(static_cast<size_t>(len) * 3);
  for (int i = 0; i < len; ++i) {
    if (i > 0) out += ':';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xf];
  }
  return out;
}

std::string string_attr(const nlattr* attr) {
  if (attr == nullptr) return {};
  const auto* text = static_cast<const char*>(nla_data(attr));
  return std::string(text, strnlen(text, static_cast<size_t>(nla_len(attr))));
}

// RTM_NEWLINK message → LinkInfo, through a policy table of the attributes read here (as
// rtnl_fill_ifinfo writes them; unknown ones ignored): one pass over the message, no libnl object
// with every attribute decoded, which is most of an observe's time on a host with thousands of
// netdevs.
void parse_link(nl_msg* msg, std::vector<LinkInfo>* out) {
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWLINK || hdr->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) return;
  const auto* ifi = static_cast<const ifinfomsg*>(nlmsg_data(hdr));
  nla_policy policy[IFLA_MAX + 1] = {};
  policy[IFLA_IFNAME].type = NLA_STRING;
  policy[IFLA_MTU].type = NLA_U32;
  policy[IFLA_LINK].type = NLA_U32;
  policy[IFLA_MASTER].type = NLA_U32;
  policy[IFLA_OPERSTATE].type = NLA_U8;
  policy[IFLA_LINKINFO].type = NLA_NESTED;
  policy[IFLA_MIN_MTU].type = NLA_U32;
  policy[IFLA_MAX_MTU].type = NLA_U32;
  nlattr* tb[IFLA_MAX + 1] = {};
  if (nlmsg_parse(hdr, sizeof(ifinfomsg), tb, IFLA_MAX, policy) < 0 || ifi->ifi_index == 0) return;
  LinkInfo info;
  info.ifindex = ifi->ifi_index;
  info.name = string_attr(tb[IFLA_IFNAME]);
  if (tb[IFLA_MTU] != nullptr) info.mtu = nla_get_u32(tb[IFLA_MTU]);
  info.flags = ifi->ifi_flags;
  info.admin_up = (ifi->ifi_flags & IFF_UP) != 0;
  info.arptype = ifi->ifi_type;
  info.oper_state = oper_state_name(tb[IFLA_OPERSTATE] != nullptr ? nla_get_u8(tb[IFLA_OPERSTATE]) : static_cast<uint8_t>(IF_OPER_UNKNOWN));
  info.mac = hex_colon(tb[IFLA_ADDRESS]);
  if (tb[IFLA_LINK] != nullptr) info.link = static_cast<int>(nla_get_u32(tb[IFLA_LINK]));
  if (tb[IFLA_MASTER] != nullptr) info.master = static_cast<int>(nla_get_u32(tb[IFLA_MASTER]));
  if (tb[IFLA_MIN_MTU] != nullptr) info.min_mtu = nla_get_u32(tb[IFLA_MIN_MTU]);
  if (tb[IFLA_MAX_MTU] != nullptr) info.max_mtu = nla_get_u32(tb[IFLA_MAX_MTU]);
  if (tb[IFLA_LINKINFO] != nullptr) {
    nla_policy info_policy[IFLA_INFO_MAX + 1] = {};
    info_policy[IFLA_INFO_KIND].type = NLA_STRING;
    nlattr* linkinfo[IFLA_INFO_MAX + 1] = {};
    if (nla_parse_nested(linkinfo, IFLA_INFO_MAX, tb[IFLA_LINKINFO], info_policy) == 0) {
      info.kind = string_attr(linkinfo[IFLA_INFO_KIND]);
    }
  }
  out->push_back(std::move(info));
}

// One RTM_GETLINK for `ifindex` (not a dump): the links of the answer, one or none.
Result<std::vector<LinkInfo>> ask_link(nl_sock* sock, int ifindex) {
  nl_msg* request = nlmsg_alloc_simple(RTM_GETLINK, 0);
  if (request == nullptr) return make_errno_error("get link: out of memory", ENOMEM);
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  if (nlmsg_append(request, &ifi, sizeof ifi, NLMSG_ALIGNTO) < 0 ||
      nla_put_u32(request, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0) {
    nlmsg_free(request);
    return make_errno_error("get link: message too long", EMSGSIZE);
  }
  std::vector<LinkInfo> links;
  const MessageHandler handler = [&](nl_msg* msg) { parse_link(msg, &links); };
  const Exchange ex = talk(sock, request, &handler);
  if (exchange_failed(ex)) return exchange_error(ex, "get link", "ifindex " + std::to_string(ifindex));
  return links;
}

// Sends one RTM_NEWLINK for `ifindex` carrying only what `changes` sets.
Result<void> change_link(nl_sock* sock, int ifindex, rtnl_link* changes, const std::string& what) {
  rtnl_link* orig = rtnl_link_alloc();
  if (orig == nullptr) {
    rtnl_link_put(changes);
    return make_errno_error(what + ": out of memory", ENOMEM, "ifindex " + std::to_string(ifindex));
  }
  rtnl_link_set_ifindex(orig, ifindex);
  nl_msg* request = nullptr;
  const int rc = rtnl_link_build_change_request(orig, changes, 0, &request);
  rtnl_link_put(orig);
  rtnl_link_put(changes);
  return send_built_change(sock, rc, request, what, ifindex);
}

}  // namespace

namespace netlink_detail {

std::string netdev_label(nl_sock* sock, int ifindex) {
  const std::string fallback = "ifindex " + std::to_string(ifindex);
  auto links = ask_link(sock, ifindex);
  if (!links || links->empty() || links->front().name.empty()) return fallback;
  return links->front().name;
}

}  // namespace netlink_detail

Result<std::vector<LinkInfo>> RouteSocket::dump_links() {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  return run_dump<LinkInfo>(sock_, RTM_GETLINK, &ifi, sizeof ifi, true, parse_link, "dump links");
}

Result<LinkInfo> RouteSocket::get_link(int ifindex) {
  auto links = ask_link(sock_, ifindex);
  if (!links) return links.error();
  const std::string where = "ifindex " + std::to_string(ifindex);
  if (links->empty()) return make_error(ErrorKind::kNotFound, "get link: no netdev with that index", where);
  return std::move(links->front());
}

Result<void> RouteSocket::set_mtu(int ifindex, unsigned mtu) {
  rtnl_link* changes = rtnl_link_alloc();
  if (changes == nullptr) return make_errno_error("set mtu: out of memory", ENOMEM);
  rtnl_link_set_mtu(changes, mtu);
  return change_link(sock_, ifindex, changes, "set mtu " + std::to_string(mtu));
}

Result<void> RouteSocket::set_admin_state(int ifindex, bool up) {
  rtnl_link* changes = rtnl_link_alloc();
  if (changes == nullptr) return make_errno_error("set link state: out of memory", ENOMEM);
  // ifi_change = IFF_UP: the kernel touches no other flag.
  if (up) {
    rtnl_link_set_flags(changes, IFF_UP);
  } else {
    rtnl_link_unset_flags(changes, IFF_UP);
  }
  return change_link(sock_, ifindex, changes, up ? "set link up" : "set link down");
}

}  // namespace rdmactl
