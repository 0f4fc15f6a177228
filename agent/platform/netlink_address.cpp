// SPDX-License-Identifier: Apache-2.0
// RouteSocket's addresses: the RTM_GETADDR dumps (whole, or one netdev's), decoded by
// parse_address, and the RTM_NEWADDR/RTM_DELADDR changes, by cidr or as a dump described them.
#include "agent/platform/netlink.h"

#include <arpa/inet.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/route/addr.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "agent/core/cidr.h"
#include "agent/platform/netlink_internal.h"

namespace rdmactl {

namespace netlink_detail {

std::string address_text(int family, const nlattr* attr) {
  const int len = family == AF_INET ? 4 : 16;
  if (attr == nullptr || nla_len(attr) < len) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, nla_data(attr), buf, sizeof buf) == nullptr) return {};
  return buf;
}

}  // namespace netlink_detail

namespace {

using netlink_detail::address_text;
using netlink_detail::errno_from_nl_error;
using netlink_detail::run_dump;
using netlink_detail::send_built_change;
using netlink_detail::send_change;

// RTM_NEWADDR message → AddressInfo: IFA_LOCAL is the address (IPv6 sends only IFA_ADDRESS unless
// there is a peer, in which case IFA_ADDRESS is the peer: inet6_fill_ifaddr; IPv4 sends both,
// IFA_ADDRESS being the peer when they differ: inet_fill_ifaddr).
void parse_address(nl_msg* msg, std::vector<AddressInfo>* out) {
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWADDR || hdr->nlmsg_len < NLMSG_LENGTH(sizeof(ifaddrmsg))) return;
  const auto* ifa = static_cast<const ifaddrmsg*>(nlmsg_data(hdr));
  const int family = ifa->ifa_family;
  if (family != AF_INET && family != AF_INET6) return;
  nla_policy policy[IFA_MAX + 1] = {};
  policy[IFA_LABEL].type = NLA_STRING;
  policy[IFA_FLAGS].type = NLA_U32;
  policy[IFA_RT_PRIORITY].type = NLA_U32;
  policy[IFA_PROTO].type = NLA_U8;
  policy[IFA_CACHEINFO].minlen = sizeof(ifa_cacheinfo);
  nlattr* tb[IFA_MAX + 1] = {};
  if (nlmsg_parse(hdr, sizeof(ifaddrmsg), tb, IFA_MAX, policy) < 0) return;
  const nlattr* local = tb[IFA_LOCAL] != nullptr ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  const std::string local_text = address_text(family, local);
  if (local_text.empty()) return;
  AddressInfo info;
  info.ifindex = static_cast<int>(ifa->ifa_index);
  info.family = family;
  info.cidr = local_text + "/" + std::to_string(ifa->ifa_prefixlen);
  info.scope = ifa->ifa_scope;
  info.flags = tb[IFA_FLAGS] != nullptr ? nla_get_u32(tb[IFA_FLAGS]) : ifa->ifa_flags;
  if (tb[IFA_LOCAL] != nullptr && tb[IFA_ADDRESS] != nullptr) {
    const std::string peer = address_text(family, tb[IFA_ADDRESS]);
    if (peer != local_text) info.peer = peer;
  }
  info.broadcast = address_text(family, tb[IFA_BROADCAST]);
  if (tb[IFA_LABEL] != nullptr) {
    const auto* text = static_cast<const char*>(nla_data(tb[IFA_LABEL]));
    info.label.assign(text, strnlen(text, static_cast<size_t>(nla_len(tb[IFA_LABEL]))));
  }
  if (tb[IFA_CACHEINFO] != nullptr) {
    ifa_cacheinfo cache{};
    std::memcpy(&cache, nla_data(tb[IFA_CACHEINFO]), sizeof cache);
    info.valid_lft = cache.ifa_valid;
    info.preferred_lft = cache.ifa_prefered;
  }
  if (tb[IFA_RT_PRIORITY] != nullptr) info.metric = nla_get_u32(tb[IFA_RT_PRIORITY]);
  if (tb[IFA_PROTO] != nullptr) info.proto = nla_get_u8(tb[IFA_PROTO]);
  out->push_back(std::move(info));
}

// An rtnl_addr naming `cidr` on `ifindex`, as `ip addr add/del CIDR dev X` would send it.
Result<rtnl_addr*> address_object(int ifindex, const std::string& cidr_text, const std::string& what) {
  auto cidr = parse_cidr(cidr_text);
  if (!cidr) {
    return make_error(ErrorKind::kInvalidSpec, what + ": " + cidr.error().message,
                      "ifindex " + std::to_string(ifindex));
  }
  nl_addr* local = nl_addr_build(cidr->family, cidr->bytes, cidr->family == AF_INET ? 4 : 16);
  rtnl_addr* addr = rtnl_addr_alloc();
  if (local == nullptr || addr == nullptr) {
    if (local != nullptr) nl_addr_put(local);
    if (addr != nullptr) rtnl_addr_put(addr);
    return make_errno_error(what + ": out of memory", ENOMEM);
  }
  nl_addr_set_prefixlen(local, cidr->prefix);
  rtnl_addr_set_ifindex(addr, ifindex);
  rtnl_addr_set_family(addr, cidr->family);
  const int rc = rtnl_addr_set_local(addr, local);  // takes its own reference
  nl_addr_put(local);
  if (rc < 0) {
    rtnl_addr_put(addr);
    return make_errno_error(what + ": " + nl_geterror(rc), errno_from_nl_error(-rc));
  }
  // No scope and no broadcast: libnl then picks host scope for 127/8 and universe otherwise, the
  // same defaults `ip addr add` uses, and like it sends no IFA_BROADCAST unless asked.
  rtnl_addr_set_prefixlen(addr, cidr->prefix);
  return addr;
}

// As `ip addr add/del CIDR dev X`: the rtnl_addr for `cidr_text` on `ifindex`, made into a request
// by `build` (rtnl_addr_build_add_request or rtnl_addr_build_delete_request) and sent.
Result<void> change_address(nl_sock* sock, int ifindex, const std::string& cidr_text, const std::string& what,
                            int (*build)(rtnl_addr*, int, nl_msg**), int nl_flags) {
  auto addr = address_object(ifindex, cidr_text, what);
  if (!addr) return addr.error();
  nl_msg* request = nullptr;
  const int rc = build(*addr, nl_flags, &request);
  rtnl_addr_put(*addr);
  return send_built_change(sock, rc, request, what, ifindex);
}

Result<void> put_address(nl_msg* msg, int type, int family, const std::string& text, const std::string& what) {
  unsigned char bytes[16] = {};
  if (inet_pton(family, text.c_str(), bytes) != 1) {
    return make_error(ErrorKind::kInvalidSpec, what + ": \"" + text + "\" is not an address of its family");
  }
  if (nla_put(msg, type, family == AF_INET ? 4 : 16, bytes) < 0) return make_errno_error(what + ": message too long", EMSGSIZE);
  return ok();
}

// RTM_NEWADDR (every attribute of the dump) or RTM_DELADDR (what names it) for `a`, built as
// iproute2's ipaddr_modify builds `ip addr add/del`: IFA_LOCAL is the address and IFA_ADDRESS
// the peer, or the address again when there is none.
Result<nl_msg*> address_request(int type, int nl_flags, const AddressInfo& a, const std::string& what) {
  auto cidr = parse_cidr(a.cidr);
  if (!cidr) {
    return make_error(ErrorKind::kInvalidSpec, what + ": " + cidr.error().message, "ifindex " + std::to_string(a.ifindex));
  }
  nl_msg* msg = nlmsg_alloc_simple(type, nl_flags);
  if (msg == nullptr) return make_errno_error(what + ": out of memory", ENOMEM);
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<unsigned char>(cidr->family);
  ifa.ifa_prefixlen = static_cast<unsigned char>(cidr->prefix);
  ifa.ifa_index = static_cast<unsigned>(a.ifindex);
  const bool add = type == RTM_NEWADDR;
  if (add) {
    ifa.ifa_flags = static_cast<unsigned char>(a.flags & 0xff);
    ifa.ifa_scope = static_cast<unsigned char>(a.scope);
  }
  auto fail = [&](Error e) -> Result<nl_msg*> {
    nlmsg_free(msg);
    return e;
  };
  const int len = cidr->family == AF_INET ? 4 : 16;
  if (nlmsg_append(msg, &ifa, sizeof ifa, NLMSG_ALIGNTO) < 0 || nla_put(msg, IFA_LOCAL, len, cidr->bytes) < 0) {
    return fail(make_errno_error(what + ": message too long", EMSGSIZE));
  }
  if (!a.peer.empty()) {
    if (auto r = put_address(msg, IFA_ADDRESS, cidr->family, a.peer, what); !r) return fail(r.error());
  } else if (nla_put(msg, IFA_ADDRESS, len, cidr->bytes) < 0) {
    return fail(make_errno_error(what + ": message too long", EMSGSIZE));
  }
  if (!add) return msg;
  if (!a.broadcast.empty()) {
    if (auto r = put_address(msg, IFA_BROADCAST, cidr->family, a.broadcast, what); !r) return fail(r.error());
  }
  // The lifetimes left when the address was dumped; both forever is what no IFA_CACHEINFO means.
  ifa_cacheinfo cache{};
  cache.ifa_valid = a.valid_lft;
  cache.ifa_prefered = a.preferred_lft;
  if ((!a.label.empty() && nla_put_string(msg, IFA_LABEL, a.label.c_str()) < 0) ||
      nla_put(msg, IFA_CACHEINFO, sizeof cache, &cache) < 0 || nla_put_u32(msg, IFA_FLAGS, a.flags) < 0 ||
      (a.metric && nla_put_u32(msg, IFA_RT_PRIORITY, *a.metric) < 0) ||
      (a.proto && nla_put_u8(msg, IFA_PROTO, *a.proto) < 0)) {
    return fail(make_errno_error(what + ": message too long", EMSGSIZE));
  }
  return msg;
}

}  // namespace

std::string AddressInfo::flag_names() const {
  // iproute2's ifa_flag_names order and words (ip/ipaddress.c).
  static const std::pair<std::uint32_t, const char*> kNames[] = {
      {IFA_F_SECONDARY, "secondary"},       {IFA_F_NODAD, "nodad"},
      {IFA_F_OPTIMISTIC, "optimistic"},     {IFA_F_DADFAILED, "dadfailed"},
      {IFA_F_HOMEADDRESS, "home"},          {IFA_F_DEPRECATED, "deprecated"},
      {IFA_F_TENTATIVE, "tentative"},       {IFA_F_PERMANENT, "permanent"},
      {IFA_F_MANAGETEMPADDR, "mngtmpaddr"}, {IFA_F_NOPREFIXROUTE, "noprefixroute"},
      {IFA_F_MCAUTOJOIN, "autojoin"},       {IFA_F_STABLE_PRIVACY, "stable-privacy"}};
  std::string out;
  std::uint32_t rest = flags;
  for (const auto& [bit, name] : kNames) {
    if (!(flags & bit)) continue;
    rest &= ~bit;
    if (!out.empty()) out += ' ';
    out += (family == AF_INET6 && bit == IFA_F_SECONDARY) ? "temporary" : name;
  }
  if (rest != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", rest);
    out += (out.empty() ? "" : " ") + std::string(hex);
  }
  return out;
}

Result<std::vector<AddressInfo>> RouteSocket::dump_addresses() {
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_UNSPEC;  // IPv4 and IPv6 in one dump
  return run_dump<AddressInfo>(sock_, RTM_GETADDR, &ifa, sizeof ifa, false, parse_address,
                               "dump addresses");
}

Result<std::vector<AddressInfo>> RouteSocket::dump_addresses(int ifindex) {
  if (!strict_) {
    auto all = dump_addresses();
    if (!all) return all.error();
    std::erase_if(*all, [&](const AddressInfo& a) { return a.ifindex != ifindex; });
    return all;
  }
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_UNSPEC;
  ifa.ifa_index = static_cast<unsigned>(ifindex);
  auto dump = run_dump<AddressInfo>(sock_, RTM_GETADDR, &ifa, sizeof ifa, false, parse_address,
                                    "dump addresses of one netdev");
  if (!dump && dump.error().err_no == ENODEV) {
    Error e = dump.error();
    e.kind = ErrorKind::kNotFound;
    e.where = "ifindex " + std::to_string(ifindex);
    return e;
  }
  if (dump) std::erase_if(*dump, [&](const AddressInfo& a) { return a.ifindex != ifindex; });
  return dump;
}

Result<void> RouteSocket::add_address(int ifindex, const std::string& cidr) {
  return change_address(sock_, ifindex, cidr, "add address " + cidr, rtnl_addr_build_add_request,
                        NLM_F_CREATE | NLM_F_EXCL);
}

Result<void> RouteSocket::delete_address(int ifindex, const std::string& cidr) {
  return change_address(sock_, ifindex, cidr, "delete address " + cidr, rtnl_addr_build_delete_request, 0);
}

Result<void> RouteSocket::add_address(const AddressInfo& address) {
  const std::string what = "add address " + address.cidr;
  auto request = address_request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, address, what);
  if (!request) return request.error();
  return send_change(sock_, *request, what, address.ifindex);
}

Result<void> RouteSocket::delete_address(const AddressInfo& address) {
  const std::string what = "delete address " + address.cidr;
  auto request = address_request(RTM_DELADDR, 0, address, what);
  if (!request) return request.error();
  return send_change(sock_, *request, what, address.ifindex);
}

}  // namespace rdmactl
