// RouteSocket and enter_netns: links and addresses over rtnetlink with libnl-route-3.
//
// Every byte goes through talk(): it sends one request and reads exactly its replies, with its own
// callbacks so that the kernel's errno and extended-ack text reach the caller (libnl 3.7 turns a
// kernel error into a bare NLE_* code and drops the ext-ack attributes). Replies are decoded by
// libnl-route's own parsers (nl_msg_parse into rtnl_link / rtnl_addr objects); the two link
// attributes libnl 3.7 does not know, IFLA_MIN_MTU and IFLA_MAX_MTU, come from a small policy table
// over the same message, so an observe is still one dump per table.
#include "agent/platform/netlink.h"

#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if.h>
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
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <utility>

#include "agent/core/cidr.h"

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

std::string hex_colon(const nl_addr* addr) {
  if (addr == nullptr) return {};
  const auto* bytes = static_cast<const unsigned char*>(nl_addr_get_binary_addr(addr));
  const unsigned len = nl_addr_get_len(addr);
  std::string out;
  out.reserve(len * 3);
  char buf[4];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, i == 0 ? "%02x" : ":%02x", bytes[i]);
    out += buf;
  }
  return out;
}

// RTM_NEWLINK message → LinkInfo. libnl-route parses the ifinfomsg and the attributes it knows.
void parse_link(nl_msg* msg, std::vector<LinkInfo>* out) {
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWLINK) return;
  LinkInfo info;
  const int rc = nl_msg_parse(
      msg,
      [](nl_object* obj, void* arg) {
        auto* link = reinterpret_cast<rtnl_link*>(obj);
        auto* li = static_cast<LinkInfo*>(arg);
        li->ifindex = rtnl_link_get_ifindex(link);
        if (const char* name = rtnl_link_get_name(link)) li->name = name;
        li->mtu = rtnl_link_get_mtu(link);
        li->admin_up = (rtnl_link_get_flags(link) & IFF_UP) != 0;
        li->oper_state = oper_state_name(rtnl_link_get_operstate(link));
        li->mac = hex_colon(rtnl_link_get_addr(link));
        if (const char* kind = rtnl_link_get_type(link)) li->kind = kind;
        li->arptype = rtnl_link_get_arptype(link);
      },
      &info);
  if (rc < 0 || info.ifindex == 0) return;

  nla_policy policy[IFLA_MAX_MTU + 1] = {};
  policy[IFLA_MIN_MTU].type = NLA_U32;
  policy[IFLA_MAX_MTU].type = NLA_U32;
  nlattr* tb[IFLA_MAX_MTU + 1] = {};
  if (nlmsg_parse(hdr, sizeof(ifinfomsg), tb, IFLA_MAX_MTU, policy) == 0) {
    if (tb[IFLA_MIN_MTU] != nullptr) info.min_mtu = nla_get_u32(tb[IFLA_MIN_MTU]);
    if (tb[IFLA_MAX_MTU] != nullptr) info.max_mtu = nla_get_u32(tb[IFLA_MAX_MTU]);
  }
  out->push_back(std::move(info));
}

// RTM_NEWADDR message → AddressInfo with the canonical cidr of the local address.
void parse_address(nl_msg* msg, std::vector<AddressInfo>* out) {
  if (nlmsg_hdr(msg)->nlmsg_type != RTM_NEWADDR) return;
  nl_msg_parse(
      msg,
      [](nl_object* obj, void* arg) {
        auto* addr = reinterpret_cast<rtnl_addr*>(obj);
        const int family = rtnl_addr_get_family(addr);
        const nl_addr* local = rtnl_addr_get_local(addr);
        if ((family != AF_INET && family != AF_INET6) || local == nullptr) return;
        const unsigned len = nl_addr_get_len(local);
        if (len != (family == AF_INET ? 4u : 16u)) return;
        Cidr cidr;
        cidr.family = family;
        std::memcpy(cidr.bytes, nl_addr_get_binary_addr(local), len);
        cidr.prefix = rtnl_addr_get_prefixlen(addr);
        AddressInfo info;
        info.ifindex = rtnl_addr_get_ifindex(addr);
        info.family = family;
        info.cidr = cidr.to_string();
        info.scope = rtnl_addr_get_scope(addr);
        static_cast<std::vector<AddressInfo>*>(arg)->push_back(std::move(info));
      },
      out);
}

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
                                bool link_ext_mask, void (*parse)(nl_msg*, std::vector<T>*),
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

}  // namespace

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
  // Peeking first lets libnl grow its buffer for an oversized message instead of truncating it.
  nl_socket_set_msg_buf_size(sock, kReceiveBufferBytes);
  nl_socket_enable_msg_peek(sock);
  return route;
}

RouteSocket::RouteSocket(RouteSocket&& other) noexcept : sock_(std::exchange(other.sock_, nullptr)) {}

RouteSocket& RouteSocket::operator=(RouteSocket&& other) noexcept {
  if (this != &other) {
    if (sock_ != nullptr) nl_socket_free(sock_);
    sock_ = std::exchange(other.sock_, nullptr);
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

Result<void> enter_netns(const std::string& name) {
  // Same rule as iproute2: a name is one path component under /run/netns.
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return make_error(ErrorKind::kUsage, "\"" + name + "\" is not a network namespace name");
  }
  const std::string path = std::string(kNetnsRunDir) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return make_errno_error("network namespace \"" + name + "\" not found (ip netns list)", err, path);
    }
    return make_errno_error("open network namespace \"" + name + "\"", err, path);
  }
  if (setns(fd, CLONE_NEWNET) != 0) {
    const int err = errno;
    ::close(fd);
    return make_errno_error("enter network namespace \"" + name + "\" (setns)", err, path);
  }
  ::close(fd);

  // The rest mirrors iproute2's netns_switch: a private mount namespace whose /sys is a sysfs
  // mounted from inside the new network namespace, so /sys/class/net lists its netdevs.
  if (unshare(CLONE_NEWNS) != 0) {
    return make_errno_error("unshare the mount namespace", errno, path);
  }
  // Slave, not private: mounts made on the host still arrive; ours never leak back.
  if (mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0) {
    return make_errno_error("mount --make-rslave /", errno, path);
  }
  unsigned long mount_flags = 0;
  if (umount2("/sys", MNT_DETACH) != 0) {
    // Nothing mounted there, or it cannot be unmounted: mount over it. A read-only /sys cannot be
    // shadowed by a read-write one, so keep read-only in that case.
    struct statvfs fs {};
    if (statvfs("/sys", &fs) == 0 && (fs.f_flag & ST_RDONLY)) mount_flags = MS_RDONLY;
  }
  if (mount(name.c_str(), "/sys", "sysfs", mount_flags, nullptr) != 0) {
    return make_errno_error("mount sysfs on /sys", errno, path);
  }
  // iproute2 also bind-mounts /etc/netns/<name>/* over /etc; rdmactl reads no per-namespace
  // resolver or hosts configuration, so that step is left out.
  return ok();
}

}  // namespace rdmactl
