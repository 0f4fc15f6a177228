// SPDX-License-Identifier: Apache-2.0
// What every generic netlink client here (devlink, ethtool) shares: the genetlink header of a
// request, the check of a reply's family and command, and the family id that the kernel assigns
// at boot, resolved by name with CTRL_CMD_GETFAMILY (net/netlink/genetlink.c ctrl_getfamily).
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <string_view>

#include "agent/core/result.h"
#include "agent/platform/mnl.h"

namespace rdmactl {

// Starts `message` as a request of generic netlink family `type` with command `cmd`:
// NLM_F_REQUEST|NLM_F_ACK and a genlmsghdr. genetlink does not check `version`.
void put_genl_header(MnlMessage& message, uint16_t type, uint8_t cmd, uint8_t version);

// A reply of `family` with genetlink command `cmd`, long enough for its genetlink header;
// otherwise an Error (EBADMSG) saying what came instead. `what` names the request in it.
Result<void> expect_genl(const nlmsghdr* message, uint16_t family, uint8_t cmd, const char* what);

// CTRL_CMD_GETFAMILY of a family by name, and its CTRL_CMD_NEWFAMILY reply's id.
void build_get_family(MnlMessage& message, std::string_view family_name);
Result<uint16_t> parse_family_reply(const nlmsghdr* message);

// Resolves `family_name` over `socket`. A family this kernel does not register (ctrl_getfamily:
// ENOENT) is kNotSupported with "this kernel has no <what>" appended.
Result<uint16_t> resolve_genl_family(MnlSocket& socket, std::string_view family_name,
                                     std::string_view what);

}  // namespace rdmactl
