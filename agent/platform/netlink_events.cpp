// SPDX-License-Identifier: Apache-2.0
// RouteEvents: a NETLINK_ROUTE socket subscribed to link and address notifications, only counted
// (it sends no request, so it reads the socket itself rather than through talk()).
#include "agent/platform/netlink.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace rdmactl {

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

}  // namespace rdmactl
