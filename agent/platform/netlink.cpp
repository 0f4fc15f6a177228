// SPDX-License-Identifier: Apache-2.0
// RouteSocket's socket and the one path of its traffic, over rtnetlink with libnl-route-3.
//
// Every byte goes through talk(): it sends one request and reads exactly its replies, with its own
// callbacks so that the kernel's errno and extended-ack text reach the caller (libnl 3.7 turns a
// kernel error into a bare NLE_* code and drops the ext-ack attributes); a dump is run_dump()
// (netlink_internal.h) around talk(). Links, addresses and routes are decoded through policy tables
// of their own (nlmsg_parse, unknown attributes ignored): libnl's rtnl_link parser decodes every
// attribute into an object (most of an observe's time with thousands of netdevs) yet knows neither
// IFLA_MIN_MTU nor IFLA_MAX_MTU, and its rtnl_addr and rtnl_route objects drop IFA_RT_PRIORITY and
// IFA_PROTO, which a rollback must put back. Address requests are built the same way, attribute by
// attribute, as iproute2's ipaddr_modify does; a route is put back by replaying its dump message,
// as `ip route restore` does.
//
// By object: netlink_link.cpp (links), link_topology.cpp (which netdevs an MTU change moves),
// netlink_address.cpp (addresses), netlink_route.cpp (routes), netlink_events.cpp (RouteEvents),
// netns.cpp (enter_netns).
#include "agent/platform/netlink.h"

#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "agent/platform/netlink_internal.h"

namespace rdmactl {
namespace {

using netlink_detail::Exchange;

// Receive buffer for one recvmsg. The kernel sizes dump batches after what the reader accepts, so
// 32 KiB lets a batch carry ~15 links instead of ~2 with libnl's default of one page.
constexpr size_t kReceiveBufferBytes = 32 * 1024;

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

int nl_on_seq_check(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  return nlmsg_hdr(msg)->nlmsg_seq == ex->seq ? NL_OK : NL_SKIP;
}

int nl_on_valid(nl_msg* msg, void* arg) {
  auto* ex = static_cast<Exchange*>(arg);
  if (ex->on_message != nullptr) (*ex->on_message)(msg);
  return NL_OK;
}

int nl_on_ack(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

// NLMSG_DONE carries an int: negative when the dump failed part way, followed by ext-ack TLVs.
int nl_on_finish(nl_msg* msg, void* arg) {
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

int nl_on_dump_interrupted(nl_msg*, void* arg) {
  static_cast<Exchange*>(arg)->interrupted = true;
  return NL_OK;  // keep reading: the rest of the dump must be drained before the retry
}

int nl_on_error(sockaddr_nl*, nlmsgerr* err, void* arg) {
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

}  // namespace

namespace netlink_detail {

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

Exchange talk(nl_sock* sock, nl_msg* request, const MessageHandler* on_message) {
  Exchange ex;
  ex.on_message = on_message;
  nl_cb* cb = nl_cb_alloc(NL_CB_DEFAULT);
  if (cb == nullptr) {
    nlmsg_free(request);
    ex.nl_error = NLE_NOMEM;
    return ex;
  }
  nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, nl_on_seq_check, &ex);
  nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, nl_on_valid, &ex);
  nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, nl_on_ack, &ex);
  nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, nl_on_finish, &ex);
  nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, nl_on_dump_interrupted, &ex);
  nl_cb_err(cb, NL_CB_CUSTOM, nl_on_error, &ex);

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

Error exchange_error(const Exchange& ex, std::string what, std::string where) {
  if (ex.kernel_errno != 0) {
    if (!ex.ext_ack.empty()) what += ": " + ex.ext_ack;
    return make_errno_error(std::move(what), ex.kernel_errno, std::move(where));
  }
  what += std::string(": netlink: ") + nl_geterror(ex.nl_error);
  return make_errno_error(std::move(what), errno_from_nl_error(ex.nl_error), std::move(where));
}

bool exchange_failed(const Exchange& ex) { return ex.kernel_errno != 0 || ex.nl_error != 0; }

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

Result<void> send_change(nl_sock* sock, nl_msg* request, const std::string& what, int ifindex) {
  const Exchange ex = talk(sock, request, nullptr);
  if (exchange_failed(ex)) return exchange_error(ex, what, netdev_label(sock, ifindex));
  return ok();
}

Result<void> send_built_change(nl_sock* sock, int rc, nl_msg* request, const std::string& what, int ifindex) {
  if (rc < 0) {
    Exchange ex;
    ex.nl_error = -rc;
    return exchange_error(ex, what, netdev_label(sock, ifindex));
  }
  return send_change(sock, request, what, ifindex);
}

}  // namespace netlink_detail

using netlink_detail::errno_from_nl_error;

NetlinkCounters netlink_counters() { return {g_full_dumps.load(), g_filtered_dumps.load(), g_requests.load()}; }

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

std::uint32_t RouteSocket::port_id() const { return nl_socket_get_local_port(sock_); }

}  // namespace rdmactl
