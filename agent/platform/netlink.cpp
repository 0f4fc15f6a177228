// SPDX-License-Identifier: Apache-2.0
// RouteSocket and enter_netns: links, addresses and routes over rtnetlink with libnl-route-3.
//
// Every byte goes through talk(): it sends one request and reads exactly its replies, with its own
// callbacks so that the kernel's errno and extended-ack text reach the caller (libnl 3.7 turns a
// kernel error into a bare NLE_* code and drops the ext-ack attributes). Links, addresses and
// routes are decoded through policy tables of their own (nlmsg_parse, unknown attributes ignored):
// libnl's rtnl_link parser decodes every attribute into an object (most of an observe's time with
// thousands of netdevs) yet knows neither IFLA_MIN_MTU nor IFLA_MAX_MTU, and its rtnl_addr and
// rtnl_route objects drop IFA_RT_PRIORITY and IFA_PROTO, which a rollback must put back. Address requests are built the same way, attribute by attribute, as iproute2's
// ipaddr_modify does; a route is put back by replaying its dump message, as `ip route restore` does.
#include "agent/platform/netlink.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/object.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "agent/core/cidr.h"
#include "agent/platform/netns_mounts.h"
#include "agent/spec/text.h"

namespace rdmactl {
namespace {

// A dump the kernel flags NLM_F_DUMP_INTR saw the table change under it; it is repeated whole so
// that an observe is one consistent snapshot. Three attempts: a host whose links change faster
// than that is not one to configure from a snapshot anyway.
constexpr int kDumpAttempts = 3;
// Receive buffer for one recvmsg. The kernel sizes dump batches after what the reader accepts, so
// 32 KiB lets a batch carry ~15 links instead of ~2 with libnl's default of one page.
constexpr size_t kReceiveBufferBytes = 32 * 1024;
constexpr const char* kNetnsRunDir = "/run/netns";

using MessageHandler = std::function<void(nl_msg*)>;

// What came back for one request.
struct Exchange {
  unsigned seq = 0;        // sequence number of the request; anything else is stale and skipped
  bool done = false;       // the ACK, the error, or NLMSG_DONE of this request arrived
  bool interrupted = false;  // NLM_F_DUMP_INTR on some part of a dump
  int kernel_errno = 0;    // from NLMSG_ERROR (or a failed NLMSG_DONE), positive
  std::string ext_ack;     // NLMSGERR_ATTR_MSG, when the kernel explained itself
  int nl_error = 0;        // a libnl failure (NLE_*, positive) that is not the kernel's answer
  const MessageHandler* on_message = nullptr;
};

// libnl's NLE_* codes are not errnos; Error carries errnos, so map the ones libnl can produce.
int errno_from_nl_error(int nle) {
  switch (nle) {
    case NLE_INTR: return EINTR;
    case NLE_BAD_SOCK: return EBADF;
    case NLE_AGAIN: return EAGAIN;
    case NLE_NOMEM: return ENOMEM;
    case NLE_EXIST: return EEXIST;
    case NLE_INVAL: return EINVAL;
    case NLE_RANGE: return ERANGE;
    case NLE_MSGSIZE: return EMSGSIZE;
    case NLE_OPNOTSUPP: return EOPNOTSUPP;
    case NLE_AF_NOSUPPORT: return EAFNOSUPPORT;
    case NLE_OBJ_NOTFOUND: return ENOENT;
    case NLE_NOATTR: return ENOENT;
    case NLE_PROTO_MISMATCH: return EPROTONOSUPPORT;
    case NLE_NOACCESS: return EACCES;
    case NLE_PERM: return EPERM;
    case NLE_NODEV: return ENODEV;
    case NLE_NOADDR: return EADDRNOTAVAIL;
    case NLE_BUSY: return EBUSY;
    case NLE_DUMP_INTR: return EINTR;
    case NLE_MSG_TRUNC:
    case NLE_MSG_OVERFLOW: return ENOBUFS;
    default: return EIO;
  }
}

// Picks NLMSGERR_ATTR_MSG out of an NLMSG_ERROR or NLMSG_DONE payload. The TLVs follow the error
// code and the echoed request header (the whole request unless the kernel capped the echo); this
// is what iproute2's nl_dump_ext_ack does with libmnl.
std::string ext_ack_message(const nlmsghdr* hdr, size_t tlv_offset) {
  if (!(hdr->nlmsg_flags & NLM_F_ACK_TLVS) || hdr->nlmsg_len < NLMSG_HDRLEN) return {};
  const size_t payload = hdr->nlmsg_len - NLMSG_HDRLEN;
  tlv_offset = NLMSG_ALIGN(tlv_offset);
  if (tlv_offset >= payload) return {};
  auto* first = reinterpret_cast<nlattr*>(const_cast<char*>(
      static_cast<const char*>(NLMSG_DATA(hdr)) + tlv_offset));
  nla_policy policy[NLMSGERR_ATTR_MAX + 1] = {};
  policy[NLMSGERR_ATTR_MSG].type = NLA_STRING;
  nlattr* tb[NLMSGERR_ATTR_MAX + 1] = {};
  if (nla_parse(tb, NLMSGERR_ATTR_MAX, first, static_cast<int>(payload - tlv_offset), policy) < 0 ||
      tb[NLMSGERR_ATTR_MSG] == nullptr) {
    return {};
  }
  const auto* text = static_cast<const char*>(nla_data(tb[NLMSGERR_ATTR_MSG]));
  return std::string(text, strnlen(text, static_cast<size_t>(nla_len(tb[NLMSGERR_ATTR_MSG]))));
}

int on_seq_check(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  return nlmsg_hdr(msg)->nlmsg_seq == ex->seq ? NL_OK : NL_SKIP;
}

int on_valid(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  if (ex->on_message != nullptr) (*ex->on_message)(msg);
  return NL_OK;
}

int on_ack(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

// NLMSG_DONE carries an int: negative when the dump failed part way, followed by ext-ack TLVs.
int on_finish(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  const nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
    int status = 0;
    std::memcpy(&status, NLMSG_DATA(hdr), sizeof status);
    if (status < 0) {
      ex->kernel_errno = -status;
      ex->ext_ack = ext_ack_message(hdr, sizeof(int));
    }
  }
  ex->done = true;
  return NL_STOP;
}

int on_dump_interrupted(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->interrupted = true;
  return NL_OK;  // keep reading: the rest of the dump must be drained before the retry
}

int on_error(sockaddr_nl*, nlmsgerr* err, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  // libnl hands over the payload; the header with NLM_F_ACK_TLVS/NLM_F_CAPPED sits just before it.
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(err) - NLMSG_HDRLEN);
  size_t tlv_offset = sizeof(nlmsgerr);
  if (!(hdr->nlmsg_flags & NLM_F_CAPPED)) tlv_offset += err->msg.nlmsg_len - sizeof(nlmsghdr);
  ex->kernel_errno = -err->error;
  ex->ext_ack = ext_ack_message(hdr, tlv_offset);
  ex->done = true;
  return NL_STOP;
}

std::atomic<std::uint64_t> g_full_dumps{0};
std::atomic<std::uint64_t> g_filtered_dumps{0};
std::atomic<std::uint64_t> g_requests{0};

// Counts what goes to the kernel (netlink_counters): whole-table dumps, dumps the kernel filters
// to one netdev, and everything else (changes, single gets).
void count_request(const nlmsghdr* hdr) {
  // NLM_F_DUMP's bits mean NLM_F_EXCL and NLM_F_APPEND on a new-request: a dump is a get with both.
  const bool get = hdr->nlmsg_type == RTM_GETLINK || hdr->nlmsg_type == RTM_GETADDR || hdr->nlmsg_type == RTM_GETROUTE;
  if (!get || (hdr->nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP) {
    ++g_requests;
    return;
  }
  const bool filtered = hdr->nlmsg_type == RTM_GETADDR && hdr->nlmsg_len >= NLMSG_LENGTH(sizeof(ifaddrmsg)) &&
                        static_cast<const ifaddrmsg*>(NLMSG_DATA(hdr))->ifa_index != 0;
  ++(filtered ? g_filtered_dumps : g_full_dumps);
}

// Sends `request` (taking ownership) and reads until its ACK, error or NLMSG_DONE. Messages of
// this request go to `on_message`; stale replies of an earlier, abandoned request are skipped.
Exchange talk(nl_sock* sock, nl_msg* request, const MessageHandler* on_message) {
  Exchange ex;
  ex.on_message = on_message;
  nl_cb* cb = nl_cb_alloc(NL_CB_DEFAULT);
  if (cb == nullptr) {
    nlmsg_free(request);
    ex.nl_error = NLE_NOMEM;
    return ex;
  }
  nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, on_seq_check, &ex);
  nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &ex);
  nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &ex);
  nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &ex);
  nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, on_dump_interrupted, &ex);
  nl_cb_err(cb, NL_CB_CUSTOM, on_error, &ex);

  count_request(nlmsg_hdr(request));
  const int sent = nl_send_auto(sock, request);  // fills in seq and NLM_F_REQUEST|NLM_F_ACK
  ex.seq = nlmsg_hdr(request)->nlmsg_seq;
  nlmsg_free(request);
  if (sent < 0) {
    ex.nl_error = -sent;
  } else {
    // nl_recvmsgs returns after one batch when that batch held only stale messages, hence the
    // loop; nl_recvmsgs_report says how many it read, so a socket that yields nothing ends it.
    while (!ex.done) {
      const int rc = nl_recvmsgs_report(sock, cb);
      if (ex.done) break;
      if (rc <= 0) {
        ex.nl_error = rc < 0 ? -rc : NLE_AGAIN;
        break;
      }
    }
  }
  nl_cb_put(cb);
  return ex;
}

// The Error for an exchange that failed; `what` names the operation and value ("set mtu 70000").
Error exchange_error(const Exchange& ex, std::string what, std::string where) {
  if (ex.kernel_errno != 0) {
    if (!ex.ext_ack.empty()) what += ": " + ex.ext_ack;
    return make_errno_error(std::move(what), ex.kernel_errno, std::move(where));
  }
  what += std::string(": netlink: ") + nl_geterror(ex.nl_error);
  return make_errno_error(std::move(what), errno_from_nl_error(ex.nl_error), std::move(where));
}

bool exchange_failed(const Exchange& ex) { return ex.kernel_errno != 0 || ex.nl_error != 0; }

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

// Address bytes of `family` as inet_ntop text; "" when the attribute is too short.
std::string address_text(int family, const nlattr* attr) {
  const int len = family == AF_INET ? 4 : 16;
  if (attr == nullptr || nla_len(attr) < len) return {};
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, nla_data(attr), buf, sizeof buf) == nullptr) return {};
  return buf;
}

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

// A dump request for `type` with `header` as its family header, plus IFLA_EXT_MASK for links.
nl_msg* dump_request(int type, const void* header, size_t header_len, bool link_ext_mask) {
  nl_msg* msg = nlmsg_alloc_simple(type, NLM_F_DUMP);
  if (msg == nullptr) return nullptr;
  if (nlmsg_append(msg, const_cast<void*>(header), header_len, NLMSG_ALIGNTO) < 0 ||
      // Counters and SR-IOV VF tables are most of a link message and nothing here reads them.
      (link_ext_mask && nla_put_u32(msg, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)) {
    nlmsg_free(msg);
    return nullptr;
  }
  return msg;
}

template <typename T>
Result<std::vector<T>> run_dump(nl_sock* sock, int type, const void* header, size_t header_len,
                                bool link_ext_mask, const std::function<void(nl_msg*, std::vector<T>*)>& parse,
                                const char* what) {
  for (int attempt = 1;; ++attempt) {
    std::vector<T> items;
    const MessageHandler handler = [&](nl_msg* msg) { parse(msg, &items); };
    nl_msg* request = dump_request(type, header, header_len, link_ext_mask);
    if (request == nullptr) return make_errno_error(std::string(what) + ": out of memory", ENOMEM);
    const Exchange ex = talk(sock, request, &handler);
    if (exchange_failed(ex)) return exchange_error(ex, what, "rtnetlink");
    if (!ex.interrupted) return items;
    if (attempt == kDumpAttempts) {
      return make_error(ErrorKind::kPlatform,
                        std::string(what) + ": the kernel interrupted the dump " +
                            std::to_string(kDumpAttempts) + " times (the table keeps changing)",
                        "rtnetlink", EINTR);
    }
  }
}

// The netdev's name for error messages: asked of the kernel on the failure path only, because
// the socket may live in another namespace than the calling thread (if_indextoname would not).
std::string netdev_label(nl_sock* sock, int ifindex) {
  const std::string fallback = "ifindex " + std::to_string(ifindex);
  nl_msg* request = nlmsg_alloc_simple(RTM_GETLINK, 0);
  if (request == nullptr) return fallback;
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  if (nlmsg_append(request, &ifi, sizeof ifi, NLMSG_ALIGNTO) < 0 ||
      nla_put_u32(request, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0) {
    nlmsg_free(request);
    return fallback;
  }
  std::vector<LinkInfo> links;
  const MessageHandler handler = [&](nl_msg* msg) { parse_link(msg, &links); };
  const Exchange ex = talk(sock, request, &handler);
  if (exchange_failed(ex) || links.empty() || links.front().name.empty()) return fallback;
  return links.front().name;
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
  if (rc < 0) {
    Exchange ex;
    ex.nl_error = -rc;
    return exchange_error(ex, what, netdev_label(sock, ifindex));
  }
  const Exchange ex = talk(sock, request, nullptr);
  if (exchange_failed(ex)) return exchange_error(ex, what, netdev_label(sock, ifindex));
  return ok();
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

// Sends a change request and names the netdev in the error.
Result<void> send_change(nl_sock* sock, nl_msg* request, const std::string& what, int ifindex) {
  const Exchange ex = talk(sock, request, nullptr);
  if (exchange_failed(ex)) return exchange_error(ex, what, netdev_label(sock, ifindex));
  return ok();
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

NetlinkCounters netlink_counters() { return {g_full_dumps.load(), g_filtered_dumps.load(), g_requests.load()}; }

bool mtu_follows_link(const std::string& kind) {
  // Kinds whose IFLA_LINK is the device below them and whose driver changes their MTU when the
  // lower device's changes: macvlan_device_event, vlan_device_event, ipvlan_device_event
  // (ipvlan_adjust_mtu), macsec_notify, all on NETDEV_CHANGEMTU.
  static const std::set<std::string> kStacked = {"macvlan", "macvtap", "vlan", "ipvlan", "ipvtap", "macsec"};
  return kStacked.count(kind) > 0;
}

bool sets_port_mtu(const std::string& kind) {
  // A bond (bond_change_mtu) and a team (team_change_mtu) set their ports' MTU.
  return kind == "bond" || kind == "team";
}

LinkTopology::LinkTopology(const std::vector<LinkInfo>& links) {
  by_ifindex_.reserve(links.size());
  for (const LinkInfo& l : links) {
    by_ifindex_[l.ifindex] = &l;
    if (l.link != 0 && l.link != l.ifindex && mtu_follows_link(l.kind)) followers_[l.link].push_back(l.ifindex);
    if (l.master != 0) ports_[l.master].push_back(l.ifindex);
  }
}

const LinkInfo* LinkTopology::find(int ifindex) const {
  auto it = by_ifindex_.find(ifindex);
  return it == by_ifindex_.end() ? nullptr : it->second;
}

std::vector<int> LinkTopology::mtu_related(int ifindex) const {
  constexpr int kMaxDepth = 8;  // stacks deeper than this do not occur; the bound keeps a loop finite
  std::vector<int> out;
  std::set<int> seen = {ifindex};
  std::vector<int> level = {ifindex};
  for (int depth = 0; depth < kMaxDepth && !level.empty(); ++depth) {
    std::vector<int> next;
    auto visit = [&](int index) {
      if (index == 0 || !seen.insert(index).second) return;
      out.push_back(index);
      next.push_back(index);
    };
    for (const int index : level) {
      const LinkInfo* self = find(index);
      if (self == nullptr) continue;
      visit(self->master);
      if (auto it = followers_.find(index); it != followers_.end()) {
        for (const int follower : it->second) visit(follower);
      }
      if (sets_port_mtu(self->kind)) {
        if (auto it = ports_.find(index); it != ports_.end()) {
          for (const int port : it->second) visit(port);
        }
      }
    }
    level = std::move(next);
  }
  return out;
}

std::vector<int> mtu_related_links(const std::vector<LinkInfo>& links, int ifindex) {
  return LinkTopology(links).mtu_related(ifindex);
}

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

Result<RouteSocket> RouteSocket::open() {
  nl_sock* sock = nl_socket_alloc();
  if (sock == nullptr) return make_errno_error("allocate netlink socket", ENOMEM, "rtnetlink");
  const int rc = nl_connect(sock, NETLINK_ROUTE);
  if (rc < 0) {
    nl_socket_free(sock);
    return make_errno_error(std::string("connect NETLINK_ROUTE socket: ") + nl_geterror(rc),
                            errno_from_nl_error(-rc), "rtnetlink");
  }
  RouteSocket route(sock);
  const int fd = nl_socket_get_fd(sock);
  const int one = 1;
  // Extended ACK carries the kernel's reason ("mtu greater than device maximum"); capped ACKs
  // leave the echoed request out of errors. Kernels before 4.12 lack both: errors then carry only
  // the errno, so a failure here is not fatal.
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  // Strict checking lets a dump be filtered by the kernel (one netdev's addresses); every dump
  // header sent here is zero where strict checking wants zeros (rtnl_valid_dump_ifinfo_req,
  // inet_valid_dump_ifaddr_req, ip_valid_fib_dump_req). Kernels before 4.20 refuse the option:
  // dump_addresses(ifindex) then filters the whole dump itself.
  route.strict_ = setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof one) == 0;
  // Peeking first lets libnl grow its buffer for an oversized message instead of truncating it.
  nl_socket_set_msg_buf_size(sock, kReceiveBufferBytes);
  nl_socket_enable_msg_peek(sock);
  return route;
}

RouteSocket::RouteSocket(RouteSocket&& other) noexcept
    : sock_(std::exchange(other.sock_, nullptr)), strict_(other.strict_) {}

RouteSocket& RouteSocket::operator=(RouteSocket&& other) noexcept {
  if (this != &other) {
    if (sock_ != nullptr) nl_socket_free(sock_);
    sock_ = std::exchange(other.sock_, nullptr);
    strict_ = other.strict_;
  }
  return *this;
}

RouteSocket::~RouteSocket() {
  if (sock_ != nullptr) nl_socket_free(sock_);  // closes the fd too
}

Result<std::vector<LinkInfo>> RouteSocket::dump_links() {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  return run_dump<LinkInfo>(sock_, RTM_GETLINK, &ifi, sizeof ifi, true, parse_link, "dump links");
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

Result<LinkInfo> RouteSocket::get_link(int ifindex) {
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
  const Exchange ex = talk(sock_, request, &handler);
  const std::string where = "ifindex " + std::to_string(ifindex);
  if (exchange_failed(ex)) return exchange_error(ex, "get link", where);
  if (links.empty()) return make_error(ErrorKind::kNotFound, "get link: no netdev with that index", where);
  return std::move(links.front());
}

std::uint32_t RouteSocket::port_id() const { return nl_socket_get_local_port(sock_); }

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

Result<void> RouteSocket::add_address(int ifindex, const std::string& cidr) {
  const std::string what = "add address " + cidr;
  auto addr = address_object(ifindex, cidr, what);
  if (!addr) return addr.error();
  nl_msg* request = nullptr;
  const int rc = rtnl_addr_build_add_request(*addr, NLM_F_CREATE | NLM_F_EXCL, &request);
  rtnl_addr_put(*addr);
  Exchange ex;
  if (rc < 0) {
    ex.nl_error = -rc;
  } else {
    ex = talk(sock_, request, nullptr);
  }
  if (exchange_failed(ex)) return exchange_error(ex, what, netdev_label(sock_, ifindex));
  return ok();
}

Result<void> RouteSocket::delete_address(int ifindex, const std::string& cidr) {
  const std::string what = "delete address " + cidr;
  auto addr = address_object(ifindex, cidr, what);
  if (!addr) return addr.error();
  nl_msg* request = nullptr;
  const int rc = rtnl_addr_build_delete_request(*addr, 0, &request);
  rtnl_addr_put(*addr);
  Exchange ex;
  if (rc < 0) {
    ex.nl_error = -rc;
  } else {
    ex = talk(sock_, request, nullptr);
  }
  if (exchange_failed(ex)) return exchange_error(ex, what, netdev_label(sock_, ifindex));
  return ok();
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

Result<RouteEvents> RouteEvents::open() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return make_errno_error("open a NETLINK_ROUTE socket for notifications", errno, "rtnetlink");
  RouteEvents events(fd);
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return make_errno_error("subscribe to link and address notifications", errno, "rtnetlink");
  }
  return events;
}

RouteEvents::RouteEvents(RouteEvents&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

RouteEvents& RouteEvents::operator=(RouteEvents&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

RouteEvents::~RouteEvents() {
  if (fd_ >= 0) ::close(fd_);
}

int RouteEvents::drain() {
  alignas(nlmsghdr) char buffer[32 * 1024];
  int seen = 0;
  for (;;) {
    const ssize_t len = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (len < 0 && errno == ENOBUFS) {
      ++seen;  // the kernel dropped notifications: something changed
      continue;
    }
    if (len <= 0) break;
    int rest = static_cast<int>(len);
    for (auto* hdr = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(hdr, rest); hdr = NLMSG_NEXT(hdr, rest)) {
      if (hdr->nlmsg_type == RTM_NEWLINK || hdr->nlmsg_type == RTM_DELLINK || hdr->nlmsg_type == RTM_NEWADDR ||
          hdr->nlmsg_type == RTM_DELADDR) {
        ++seen;
      }
    }
  }
  return seen;
}

namespace {

// What the file open at `fd` is when it is not a network namespace, as "a FIFO"; nullopt when it
// is one. `ip netns add` creates /run/netns/<name> and bind-mounts the namespace on it: an nsfs
// inode, which fs/nsfs.c makes a regular file (__ns_get_path: S_IFREG | S_IRUGO) on the pseudo
// file system of NSFS_MAGIC (nsfs_init_fs_context), and whose NS_GET_NSTYPE ioctl answers the
// namespace's CLONE_NEW* type (ns_ioctl). The ioctl is asked only once the file is known to be
// nsfs: on a device it could mean something else.
std::optional<std::string> netns_file_problem(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("a file that cannot be examined (") + std::strerror(errno) + ")";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return std::string("a file that cannot be examined (") + std::strerror(errno) + ")";
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) {
    return "a plain file, with no namespace mounted on it";
  }
  const int type = ::ioctl(fd, NS_GET_NSTYPE);
  // Before Linux 4.11 there is no NS_GET_NSTYPE (ENOTTY): setns(CLONE_NEWNET) checks the type.
  if (type >= 0 && type != CLONE_NEWNET) return "a namespace of another kind";
  return std::nullopt;
}

}  // namespace

Result<void> enter_netns(const std::string& name) {
  // The name is the user's and may hold any bytes: messages show it escaped (escape_for_display).
  const std::string shown = escape_for_display(name);
  // Same rule as iproute2: a name is one path component under /run/netns.
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return make_error(ErrorKind::kUsage, "\"" + shown + "\" is not a network namespace name");
  }
  const std::string path = std::string(kNetnsRunDir) + "/" + name;
  const std::string shown_path = std::string(kNetnsRunDir) + "/" + shown;
  // O_NONBLOCK: open(2) of a FIFO waits for a writer, for ever. O_NOCTTY: a terminal device put
  // there must not become ours. Neither matters to setns.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return make_errno_error("network namespace \"" + shown + "\" not found (ip netns list)", err, shown_path);
    }
    return make_errno_error("open network namespace \"" + shown + "\"", err, shown_path);
  }
  if (const auto problem = netns_file_problem(fd)) {
    ::close(fd);
    return make_error(ErrorKind::kNotFound,
                      "\"" + shown + "\" is " + *problem + ", not a network namespace (ip netns list)", shown_path);
  }
  if (setns(fd, CLONE_NEWNET) != 0) {
    const int err = errno;
    ::close(fd);
    return make_errno_error("enter network namespace \"" + shown + "\" (setns)", err, shown_path);
  }
  ::close(fd);

  // The rest mirrors iproute2's netns_switch: a private mount namespace whose /sys is a sysfs
  // mounted from inside the new network namespace, so /sys/class/net lists its netdevs.
  if (unshare(CLONE_NEWNS) != 0) {
    return make_errno_error("unshare the mount namespace", errno, shown_path);
  }
  // Slave, not private: mounts made on the host still arrive; ours never leak back.
  if (mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0) {
    return make_errno_error("mount --make-rslave /", errno, shown_path);
  }
  // configfs and debugfs below the host's /sys go with it: clone them now and attach the clones to
  // the new sysfs (agent/platform/netns_mounts.h). A failure is logged here, not fatal: rdma_cm and
  // cc_params then report themselves missing, and this says why.
  Result<HostSysMounts> carried = HostSysMounts::take();
  if (!carried) spdlog::warn("--netns: {}: configfs and debugfs stay the host's only", carried.error().to_string());
  unsigned long mount_flags = 0;
  if (umount2("/sys", MNT_DETACH) != 0) {
    // Nothing mounted there, or it cannot be unmounted: mount over it. A read-only /sys cannot be
    // shadowed by a read-write one, so keep read-only in that case.
    struct statvfs fs {};
    if (statvfs("/sys", &fs) == 0 && (fs.f_flag & ST_RDONLY)) mount_flags = MS_RDONLY;
  }
  if (mount(name.c_str(), "/sys", "sysfs", mount_flags, nullptr) != 0) {
    return make_errno_error("mount sysfs on /sys", errno, shown_path);
  }
  if (carried) {
    if (Result<void> attached = carried->attach(); !attached) {
      spdlog::warn("--netns: {}: it is not reachable inside the namespace", attached.error().to_string());
    }
  }
  // iproute2 also bind-mounts /etc/netns/<name>/* over /etc; rdmactl reads no per-namespace
  // resolver or hosts configuration, so that step is left out.
  return ok();
}

}  // namespace rdmactl
