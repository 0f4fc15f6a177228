// SPDX-License-Identifier: Apache-2.0
// Shared by RouteSocket's files (netlink.cpp, netlink_link.cpp, netlink_address.cpp,
// netlink_route.cpp): talk() and run_dump(), through which every request and dump goes, and the
// helpers that turn what came back into an Error.
#pragma once

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include <cerrno>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/netlink.h"

namespace rdmactl::netlink_detail {

// A dump the kernel flags NLM_F_DUMP_INTR saw the table change under it; it is repeated whole so
// that an observe is one consistent snapshot. Three attempts: a host whose links change faster
// than that is not one to configure from a snapshot anyway.
constexpr int kDumpAttempts = 3;

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
int errno_from_nl_error(int nle);

// Sends `request` (taking ownership) and reads until its ACK, error or NLMSG_DONE. Messages of
// this request go to `on_message`; stale replies of an earlier, abandoned request are skipped.
Exchange talk(nl_sock* sock, nl_msg* request, const MessageHandler* on_message);

// The Error for an exchange that failed; `what` names the operation and value ("set mtu 70000").
Error exchange_error(const Exchange& ex, std::string what, std::string where);

bool exchange_failed(const Exchange& ex);

// A dump request for `type` with `header` as its family header, plus IFLA_EXT_MASK for links.
nl_msg* dump_request(int type, const void* header, size_t header_len, bool link_ext_mask);

// One dump of `type` through talk(), each message handed to `parse`; repeated whole (up to
// kDumpAttempts times) while the kernel flags it NLM_F_DUMP_INTR.
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
std::string netdev_label(nl_sock* sock, int ifindex);

// Sends a change request and names the netdev in the error.
Result<void> send_change(nl_sock* sock, nl_msg* request, const std::string& what, int ifindex);

// The same for a request libnl built: `rc` is what building it returned, and a failed build is
// the error (nothing is sent).
Result<void> send_built_change(nl_sock* sock, int rc, nl_msg* request, const std::string& what, int ifindex);

// Address bytes of `family` as inet_ntop text; "" when the attribute is too short.
std::string address_text(int family, const nlattr* attr);

}  // namespace rdmactl::netlink_detail
