// SPDX-License-Identifier: Apache-2.0
// What the fake netlink kernels share (fake_devlink, fake_ethtool; fake_dcbnl its acks): messages as the kernel
// writes them to a socket of port `port_id` (genlmsg_put, netlink_ack with NETLINK_CAP_ACK and
// ext-ack), a request's top-level attributes as nla_parse reads them, and ctrl_getfamily.
#pragma once

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/platform/mnl.h"
#include "tests/unit/platform/scripted_kernel.h"

namespace rdmactl::test {

// A message of `type` answering `request` (its sequence number, the socket's port id).
MnlMessage kernel_message(const nlmsghdr* request, uint16_t type, uint16_t flags, uint32_t port_id);
// genlmsg_put: the family's id as type, a genlmsghdr with the command and the family version.
MnlMessage genl_reply(const nlmsghdr* request, uint16_t family, uint8_t cmd, uint8_t version, uint32_t port_id);
// netlink_ack on a socket with NETLINK_CAP_ACK (as MnlSocket::open sets); `error` is a positive
// errno, 0 for the ack of a success; `ext_ack` is NLMSGERR_ATTR_MSG when not empty.
Bytes netlink_ack(const nlmsghdr* request, int error, const std::string& ext_ack, uint32_t port_id);
// Each top-level attribute after the genetlink header, the last one of a type (nla_parse keeps the
// last); types at or above `size` are ignored.
void parse_genl_request(const nlmsghdr* request, const nlattr** tb, size_t size);
// ctrl_getfamily for a kernel that registers one family (`name`, `id`; none when !registered):
// its CTRL_CMD_NEWFAMILY reply, or the errno it refuses with (EINVAL without a name, ENOENT for
// another name).
struct FamilyAnswer {
  int error = 0;
  std::optional<MnlMessage> reply;
};
FamilyAnswer ctrl_getfamily(const nlmsghdr* request, const char* name, uint16_t id, uint32_t version,
                            uint32_t max_attr, bool registered, uint32_t port_id);

}  // namespace rdmactl::test
