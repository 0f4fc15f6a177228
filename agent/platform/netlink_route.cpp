// SPDX-License-Identifier: Apache-2.0
// RouteSocket's routes: the RTM_GETROUTE dump, decoded by parse_route (which also reads a journal's
// saved message back), RouteInfo in `ip route` words, and restore_route's replay of a dump message.
#include "agent/platform/netlink.h"

#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "agent/platform/netlink_internal.h"

namespace rdmactl {
namespace {

using netlink_detail::address_text;
using netlink_detail::run_dump;
using netlink_detail::send_change;

// RTAX_* names as `ip route` prints them (iproute2 lib/rt_names.c, mx_names).
const char* metric_name(int type) {
  switch (type) {
    case RTAX_LOCK: return "lock";
    case RTAX_MTU: return "mtu";
    case RTAX_WINDOW: return "window";
    case RTAX_RTT: return "rtt";
    case RTAX_RTTVAR: return "rttvar";
    case RTAX_SSTHRESH: return "ssthresh";
    case RTAX_CWND: return "cwnd";
    case RTAX_ADVMSS: return "advmss";
    case RTAX_REORDERING: return "reordering";
    case RTAX_HOPLIMIT: return "hoplimit";
    case RTAX_INITCWND: return "initcwnd";
    case RTAX_FEATURES: return "features";
    case RTAX_RTO_MIN: return "rto_min";
    case RTAX_INITRWND: return "initrwnd";
    case RTAX_QUICKACK: return "quickack";
    case RTAX_CC_ALGO: return "congctl";
    case RTAX_FASTOPEN_NO_COOKIE: return "fastopen_no_cookie";
    default: return nullptr;
  }
}

// A gateway: RTA_GATEWAY in the route's family, or RTA_VIA (an IPv4 route via an IPv6 router).
std::string gateway_text(int family, const nlattr* gateway, const nlattr* via) {
  if (gateway != nullptr) return address_text(family, gateway);
  if (via == nullptr || nla_len(via) < static_cast<int>(sizeof(rtvia))) return {};
  const auto* v = static_cast<const rtvia*>(nla_data(via));
  const int via_family = v->rtvia_family;
  const int len = via_family == AF_INET ? 4 : via_family == AF_INET6 ? 16 : 0;
  if (len == 0 || nla_len(via) < static_cast<int>(sizeof(rtvia)) + len) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(via_family, v->rtvia_addr, buf, sizeof buf) == nullptr) return {};
  return std::string(via_family == AF_INET6 ? "inet6 " : "inet ") + buf;
}

// RTM_NEWROUTE message → RouteInfo, with the message kept for restore_route.
void parse_route(nl_msg* msg, std::vector<RouteInfo>* out) {
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWROUTE || hdr->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg))) return;
  const auto* rtm = static_cast<const rtmsg*>(nlmsg_data(hdr));
  const int family = rtm->rtm_family;
  // AF_UNSPEC dumps every family: the multicast forwarding caches (RTNL_FAMILY_IPMR) are not routes.
  if ((family != AF_INET && family != AF_INET6) || (rtm->rtm_flags & RTM_F_CLONED)) return;
  nla_policy policy[RTA_MAX + 1] = {};
  policy[RTA_TABLE].type = NLA_U32;
  policy[RTA_OIF].type = NLA_U32;
  policy[RTA_PRIORITY].type = NLA_U32;
  policy[RTA_NH_ID].type = NLA_U32;
  policy[RTA_METRICS].type = NLA_NESTED;
  nlattr* tb[RTA_MAX + 1] = {};
  if (nlmsg_parse(hdr, sizeof(rtmsg), tb, RTA_MAX, policy) < 0) return;
  RouteInfo route;
  route.family = family;
  route.table = tb[RTA_TABLE] != nullptr ? nla_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
  route.protocol = rtm->rtm_protocol;
  route.scope = rtm->rtm_scope;
  route.type = rtm->rtm_type;
  route.tos = rtm->rtm_tos;
  route.flags = rtm->rtm_flags;
  const std::string any = family == AF_INET ? "0.0.0.0" : "::";
  const std::string dst = address_text(family, tb[RTA_DST]);
  route.dst = (dst.empty() ? any : dst) + "/" + std::to_string(rtm->rtm_dst_len);
  if (tb[RTA_SRC] != nullptr) route.src = address_text(family, tb[RTA_SRC]) + "/" + std::to_string(rtm->rtm_src_len);
  route.prefsrc = address_text(family, tb[RTA_PREFSRC]);
  if (tb[RTA_PRIORITY] != nullptr) route.priority = nla_get_u32(tb[RTA_PRIORITY]);
  if (tb[RTA_NH_ID] != nullptr) route.nh_id = nla_get_u32(tb[RTA_NH_ID]);
  if (tb[RTA_METRICS] != nullptr) {
    nlattr* metric = nullptr;
    int rem = 0;
    nla_for_each_nested(metric, tb[RTA_METRICS], rem) {
      const char* name = metric_name(nla_type(metric));
      const std::string key = name != nullptr ? name : "metric" + std::to_string(nla_type(metric));
      if (nla_type(metric) == RTAX_CC_ALGO) {
        const auto* text = static_cast<const char*>(nla_data(metric));
        route.metrics[key] = std::string(text, strnlen(text, static_cast<size_t>(nla_len(metric))));
      } else if (nla_len(metric) >= 4) {
        route.metrics[key] = std::to_string(nla_get_u32(metric));
      }
    }
  }
  if (tb[RTA_MULTIPATH] != nullptr) {
    const auto* nh = static_cast<const rtnexthop*>(nla_data(tb[RTA_MULTIPATH]));
    int left = nla_len(tb[RTA_MULTIPATH]);
    // RTNH_OK reads rtnh_len before it compares with what is left: check there is a header first
    // (at the end of the attribute, `left` is 0 and nh points past it).
    while (left >= static_cast<int>(sizeof(rtnexthop)) && RTNH_OK(nh, left)) {
      RouteNexthop hop;
      hop.ifindex = nh->rtnh_ifindex;
      hop.flags = nh->rtnh_flags;
      hop.weight = nh->rtnh_hops + 1;
      nlattr* ntb[RTA_MAX + 1] = {};
      const int attrs_len = nh->rtnh_len - static_cast<int>(RTNH_LENGTH(0));
      if (attrs_len > 0 &&
          nla_parse(ntb, RTA_MAX, reinterpret_cast<nlattr*>(RTNH_DATA(nh)), attrs_len, nullptr) == 0) {
        hop.gateway = gateway_text(family, ntb[RTA_GATEWAY], ntb[RTA_VIA]);
      }
      route.nexthops.push_back(std::move(hop));
      left -= RTNH_ALIGN(nh->rtnh_len);
      nh = RTNH_NEXT(nh);
    }
  } else if (tb[RTA_OIF] != nullptr || tb[RTA_GATEWAY] != nullptr || tb[RTA_VIA] != nullptr) {
    RouteNexthop hop;
    if (tb[RTA_OIF] != nullptr) hop.ifindex = static_cast<int>(nla_get_u32(tb[RTA_OIF]));
    hop.gateway = gateway_text(family, tb[RTA_GATEWAY], tb[RTA_VIA]);
    hop.flags = rtm->rtm_flags & 0xff;
    route.nexthops.push_back(std::move(hop));
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(hdr);
  route.message.assign(bytes, bytes + hdr->nlmsg_len);
  out->push_back(std::move(route));
}

const char* table_name(unsigned table) {
  switch (table) {
    case RT_TABLE_MAIN: return "main";
    case RT_TABLE_LOCAL: return "local";
    case RT_TABLE_DEFAULT: return "default";
    default: return nullptr;
  }
}

const char* protocol_name(unsigned protocol) {
  switch (protocol) {
    case RTPROT_KERNEL: return "kernel";
    case RTPROT_BOOT: return "boot";
    case RTPROT_STATIC: return "static";
    case RTPROT_RA: return "ra";
    case RTPROT_DHCP: return "dhcp";
    default: return nullptr;
  }
}

const char* scope_name(unsigned scope) {
  switch (scope) {
    case RT_SCOPE_UNIVERSE: return "universe";
    case RT_SCOPE_SITE: return "site";
    case RT_SCOPE_LINK: return "link";
    case RT_SCOPE_HOST: return "host";
    case RT_SCOPE_NOWHERE: return "nowhere";
    default: return nullptr;
  }
}

const char* type_name(unsigned type) {
  switch (type) {
    case RTN_UNICAST: return "unicast";
    case RTN_LOCAL: return "local";
    case RTN_BROADCAST: return "broadcast";
    case RTN_ANYCAST: return "anycast";
    case RTN_MULTICAST: return "multicast";
    case RTN_BLACKHOLE: return "blackhole";
    case RTN_UNREACHABLE: return "unreachable";
    case RTN_PROHIBIT: return "prohibit";
    case RTN_THROW: return "throw";
    case RTN_NAT: return "nat";
    case RTN_XRESOLVE: return "xresolve";
    default: return nullptr;
  }
}

std::string name_or_number(const char* name, unsigned number) {
  return name != nullptr ? std::string(name) : std::to_string(number);
}

// The next-hop flags a request may carry. RTNH_F_DEAD and RTNH_F_LINKDOWN describe the device's
// state and fib_create_info() refuses them ("can not contain DEAD or LINKDOWN"); the offload and
// trap flags belong to the driver.
constexpr unsigned kRequestNexthopFlags = RTNH_F_ONLINK | RTNH_F_PERVASIVE;

// RTA_MULTIPATH with each next hop's flags cut to those a request may carry.
std::vector<unsigned char> requestable_multipath(const nlattr* multipath) {
  const auto* data = static_cast<const unsigned char*>(nla_data(multipath));
  std::vector<unsigned char> out(data, data + nla_len(multipath));
  auto* nh = reinterpret_cast<rtnexthop*>(out.data());
  int left = static_cast<int>(out.size());
  while (left >= static_cast<int>(sizeof(rtnexthop)) && RTNH_OK(nh, left)) {  // as in parse_route
    nh->rtnh_flags &= kRequestNexthopFlags;
    left -= RTNH_ALIGN(nh->rtnh_len);
    nh = RTNH_NEXT(nh);
  }
  return out;
}

// The dumped route as an RTM_NEWROUTE request. RTA_CACHEINFO is output only; an IPv6 route's
// expiry, which the dump gives there in clock ticks (rt6_fill_node), goes back as RTA_EXPIRES in
// seconds (rtm_to_fib6_config).
Result<nl_msg*> route_request(const RouteInfo& route, int nl_flags, const std::string& what) {
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(route.message.data());
  if (route.message.size() < NLMSG_LENGTH(sizeof(rtmsg)) || hdr->nlmsg_len != route.message.size()) {
    return make_error(ErrorKind::kPlatform, what + ": no dump message to replay", "rtnetlink");
  }
  rtmsg rtm{};
  std::memcpy(&rtm, NLMSG_DATA(hdr), sizeof rtm);
  rtm.rtm_flags &= kRequestNexthopFlags;
  nl_msg* msg = nlmsg_alloc_simple(RTM_NEWROUTE, nl_flags);
  if (msg == nullptr) return make_errno_error(what + ": out of memory", ENOMEM);
  bool failed = nlmsg_append(msg, &rtm, sizeof rtm, NLMSG_ALIGNTO) < 0;
  const int attrs_len = static_cast<int>(hdr->nlmsg_len - NLMSG_LENGTH(sizeof(rtmsg)));
  auto* head = reinterpret_cast<nlattr*>(const_cast<unsigned char*>(route.message.data()) +
                                         NLMSG_LENGTH(sizeof(rtmsg)));
  bool has_expires = false;
  const nlattr* cacheinfo = nullptr;
  nlattr* attr = nullptr;
  int rem = 0;
  nla_for_each_attr(attr, head, attrs_len, rem) {
    if (failed) break;
    const int type = nla_type(attr);
    if (type == RTA_CACHEINFO) {
      cacheinfo = attr;
    } else if (type == RTA_MULTIPATH) {
      const std::vector<unsigned char> hops = requestable_multipath(attr);
      failed = nla_put(msg, attr->nla_type, static_cast<int>(hops.size()), hops.data()) < 0;
    } else {
      has_expires = has_expires || type == RTA_EXPIRES;
      failed = nla_put(msg, attr->nla_type, nla_len(attr), nla_data(attr)) < 0;  // nla_type keeps NLA_F_NESTED
    }
  }
  if (!failed && route.family == AF_INET6 && !has_expires && cacheinfo != nullptr &&
      nla_len(cacheinfo) >= static_cast<int>(sizeof(rta_cacheinfo))) {
    rta_cacheinfo cache{};
    std::memcpy(&cache, nla_data(cacheinfo), sizeof cache);
    const long ticks_per_second = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    if (cache.rta_expires != 0) {
      const auto seconds = static_cast<std::uint32_t>((cache.rta_expires + ticks_per_second - 1) / ticks_per_second);
      failed = nla_put_u32(msg, RTA_EXPIRES, std::max<std::uint32_t>(seconds, 1)) < 0;
    }
  }
  if (failed) {
    nlmsg_free(msg);
    return make_errno_error(what + ": message too long", EMSGSIZE);
  }
  return msg;
}

}  // namespace

Result<RouteInfo> parse_route_message(const std::vector<unsigned char>& message) {
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(message.data());
  if (message.size() < NLMSG_LENGTH(sizeof(rtmsg)) || hdr->nlmsg_len != message.size()) {
    return make_error(ErrorKind::kPlatform, "not an RTM_NEWROUTE message");
  }
  nl_msg* msg = nlmsg_convert(const_cast<nlmsghdr*>(hdr));  // a copy
  if (msg == nullptr) return make_errno_error("parse route: out of memory", ENOMEM);
  std::vector<RouteInfo> out;
  parse_route(msg, &out);
  nlmsg_free(msg);
  if (out.size() != 1) return make_error(ErrorKind::kPlatform, "not an IPv4 or IPv6 route message");
  return std::move(out.front());
}

bool RouteInfo::through(int ifindex) const {
  return std::any_of(nexthops.begin(), nexthops.end(), [&](const RouteNexthop& h) { return h.ifindex == ifindex; });
}

std::string RouteInfo::describe(const std::function<std::string(int)>& name_of) const {
  auto dev = [&](int index) { return name_of ? name_of(index) : "#" + std::to_string(index); };
  std::string out;
  if (type != RTN_UNICAST) out += name_or_number(type_name(type), type) + " ";
  out += dst;
  if (!src.empty()) out += " from " + src;
  if (tos != 0) out += " tos " + std::to_string(tos);
  if (nh_id) out += " nhid " + std::to_string(*nh_id);
  const bool multipath = nexthops.size() > 1;
  for (const RouteNexthop& hop : nexthops) {
    if (multipath) out += " nexthop";
    if (!hop.gateway.empty()) out += " via " + hop.gateway;
    if (hop.ifindex != 0) out += " dev " + dev(hop.ifindex);
    if (multipath) out += " weight " + std::to_string(hop.weight);
    if (hop.flags & RTNH_F_ONLINK) out += " onlink";
    if (hop.flags & RTNH_F_PERVASIVE) out += " pervasive";
  }
  out += " table " + name_or_number(table_name(table), table);
  out += " proto " + name_or_number(protocol_name(protocol), protocol);
  out += " scope " + name_or_number(scope_name(scope), scope);
  if (priority) out += " metric " + std::to_string(*priority);
  if (!prefsrc.empty()) out += " src " + prefsrc;
  for (const auto& [name, value] : metrics) out += " " + name + " " + value;
  return out;
}

Result<std::vector<RouteInfo>> RouteSocket::dump_routes(const std::function<bool(const RouteInfo&)>& keep) {
  rtmsg rtm{};
  rtm.rtm_family = AF_UNSPEC;  // IPv4 and IPv6 in one dump; every table, since nothing filters
  // Filtered as it is read: a host with a full routing table keeps only the routes asked for.
  const std::function<void(nl_msg*, std::vector<RouteInfo>*)> parse = [&](nl_msg* msg, std::vector<RouteInfo>* out) {
    parse_route(msg, out);
    if (keep && !out->empty() && !keep(out->back())) out->pop_back();
  };
  return run_dump<RouteInfo>(sock_, RTM_GETROUTE, &rtm, sizeof rtm, false, parse, "dump routes");
}

Result<void> RouteSocket::restore_route(const RouteInfo& route) {
  const std::string what = "add route " + route.describe();
  const int ifindex = route.nexthops.empty() ? 0 : route.nexthops.front().ifindex;
  auto request = route_request(route, NLM_F_CREATE | NLM_F_EXCL, what);
  if (!request) return request.error();
  auto added = send_change(sock_, *request, what, ifindex);
  if (added || added.error().err_no != EEXIST) return added;
  // A route with the same key is there (an IPv6 route keeps its place when its prefsrc goes:
  // fib6_remove_prefsrc): make it the one the dump saw.
  auto replace = route_request(route, NLM_F_CREATE | NLM_F_REPLACE, what);
  if (!replace) return replace.error();
  return send_change(sock_, *replace, what, ifindex);
}

}  // namespace rdmactl
