// SPDX-License-Identifier: Apache-2.0
// Generic netlink helpers (see genl.h).
#include "agent/platform/genl.h"

#include <linux/genetlink.h>

#include <cerrno>
#include <optional>
#include <string>

#include "agent/core/text.h"

namespace rdmactl {
namespace {

// The control family's version; genetlink does not check it, iproute2 sends this.
constexpr uint8_t kGenlCtrlVersion = 1;

// ctrl_fill_info puts the id as u16 and the name as a NUL-terminated string.
constexpr AttributePolicy kGenlFamilyPolicy[] = {
    {CTRL_ATTR_FAMILY_ID, MNL_TYPE_U16, "CTRL_ATTR_FAMILY_ID", true},
    {CTRL_ATTR_FAMILY_NAME, MNL_TYPE_NUL_STRING, "CTRL_ATTR_FAMILY_NAME"},
};

}  // namespace

void put_genl_header(MnlMessage& message, uint16_t type, uint8_t cmd, uint8_t version) {
  message.put_header(type, NLM_F_REQUEST | NLM_F_ACK);
  genlmsghdr header{};
  header.cmd = cmd;
  header.version = version;
  message.put_extra_header(header);
}

Result<void> expect_genl(const nlmsghdr* message, uint16_t family, uint8_t cmd, const char* what) {
  if (message->nlmsg_type != family) {
    return make_error(ErrorKind::kPlatform,
                      "unexpected netlink message type " + hex_number(message->nlmsg_type) + " in " +
                          what + " reply (family " + hex_number(family) + ")",
                      {}, EBADMSG);
  }
  if (message->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) {
    return make_error(ErrorKind::kPlatform,
                      std::string(what) + " reply of " + std::to_string(message->nlmsg_len) +
                          " bytes has no genetlink header",
                      {}, EBADMSG);
  }
  const auto* genl = static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(message));
  if (genl->cmd != cmd) {
    return make_error(ErrorKind::kPlatform,
                      std::string(what) + " reply has genetlink command " +
                          std::to_string(genl->cmd) + ", expected " + std::to_string(cmd),
                      {}, EBADMSG);
  }
  return ok();
}

void build_get_family(MnlMessage& message, std::string_view family_name) {
  put_genl_header(message, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, kGenlCtrlVersion);
  message.put_str(CTRL_ATTR_FAMILY_NAME, family_name);
}

Result<uint16_t> parse_family_reply(const nlmsghdr* message) {
  if (Result<void> type = expect_genl(message, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY,
                                      "CTRL_CMD_GETFAMILY");
      !type) {
    return type.error();
  }
  const nlattr* tb[CTRL_ATTR_FAMILY_NAME + 1] = {};
  if (Result<void> parsed = parse_attributes(message, GENL_HDRLEN, kGenlFamilyPolicy, tb); !parsed) {
    return parsed.error();
  }
  return mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
}

Result<uint16_t> resolve_genl_family(MnlSocket& socket, std::string_view family_name,
                                     std::string_view what) {
  MnlMessage request;
  build_get_family(request, family_name);
  std::optional<uint16_t> id;
  const std::string doing = "resolve the " + std::string(family_name) + " generic netlink family";
  Result<void> done = socket.talk(
      request,
      [&id](const nlmsghdr* reply) -> Result<void> {
        Result<uint16_t> parsed = parse_family_reply(reply);
        if (!parsed) return parsed.error();
        id = *parsed;
        return ok();
      },
      doing);
  if (!done) {
    Error error = done.error();
    // ctrl_getfamily: ENOENT for a family not registered (its config option off).
    if (error.err_no == ENOENT) {
      error.kind = ErrorKind::kNotSupported;
      error.message += ": this kernel has no " + std::string(what);
    }
    return error;
  }
  if (!id) {
    return make_error(ErrorKind::kPlatform, doing + ": no CTRL_CMD_NEWFAMILY reply", {}, EBADMSG);
  }
  return *id;
}

}  // namespace rdmactl
