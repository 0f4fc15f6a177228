// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the fake generic netlink kernels (see fake_genl.h).
#include "tests/unit/platform/fake_genl.h"

#include <linux/genetlink.h>

#include <cerrno>
#include <cstring>

namespace rdmactl::test {

MnlMessage kernel_message(const nlmsghdr* request, uint16_t type, uint16_t flags, uint32_t port_id) {
  MnlMessage message;
  message.put_header(type, flags);
  message.header()->nlmsg_seq = request->nlmsg_seq;
  message.header()->nlmsg_pid = port_id;
  return message;
}

MnlMessage genl_reply(const nlmsghdr* request, uint16_t family, uint8_t cmd, uint8_t version, uint32_t port_id) {
  MnlMessage message = kernel_message(request, family, 0, port_id);
  genlmsghdr header{};
  header.cmd = cmd;
  header.version = version;
  message.put_extra_header(header);
  return message;
}

Bytes netlink_ack(const nlmsghdr* request, int error, const std::string& ext_ack, uint32_t port_id) {
  uint16_t flags = NLM_F_CAPPED;
  if (!ext_ack.empty()) flags |= NLM_F_ACK_TLVS;
  MnlMessage message = kernel_message(request, NLMSG_ERROR, flags, port_id);
  nlmsgerr err{};
  err.error = -error;
  err.msg = *request;
  message.put_extra_header(err);
  if (!ext_ack.empty()) message.put_str(NLMSGERR_ATTR_MSG, ext_ack);
  return Bytes(message.bytes().begin(), message.bytes().end());
}

void parse_genl_request(const nlmsghdr* request, const nlattr** tb, size_t size) {
  struct Table {
    const nlattr** tb;
    size_t size;
  } table{tb, size};
  mnl_attr_parse(
      request, GENL_HDRLEN,
      [](const nlattr* attr, void* data) {
        auto* t = static_cast<Table*>(data);
        if (mnl_attr_get_type(attr) < t->size) t->tb[mnl_attr_get_type(attr)] = attr;
        return MNL_CB_OK;
      },
      &table);
}

FamilyAnswer ctrl_getfamily(const nlmsghdr* request, const char* name, uint16_t id, uint32_t version,
                            uint32_t max_attr, bool registered, uint32_t port_id) {
  const nlattr* tb[CTRL_ATTR_MAX + 1] = {};
  parse_genl_request(request, tb, CTRL_ATTR_MAX + 1);
  // ctrl_getfamily: by name (ctrl_policy_family: NLA_NUL_STRING); EINVAL without id or name,
  // ENOENT for a family not registered (after request_module found no module).
  const nlattr* asked = tb[CTRL_ATTR_FAMILY_NAME];
  if (asked == nullptr || mnl_attr_validate(asked, MNL_TYPE_NUL_STRING) < 0) return {EINVAL, {}};
  if (!registered || std::strcmp(mnl_attr_get_str(asked), name) != 0) return {ENOENT, {}};
  // ctrl_fill_info with CTRL_CMD_NEWFAMILY, its first attributes (ops and groups follow in the
  // kernel's; left out here).
  MnlMessage reply = genl_reply(request, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, 2, port_id);
  reply.put_str(CTRL_ATTR_FAMILY_NAME, name);
  reply.put_u16(CTRL_ATTR_FAMILY_ID, id);
  reply.put_u32(CTRL_ATTR_VERSION, version);
  reply.put_u32(CTRL_ATTR_HDRSIZE, 0);
  reply.put_u32(CTRL_ATTR_MAXATTR, max_attr);
  return {0, std::move(reply)};
}

}  // namespace rdmactl::test
