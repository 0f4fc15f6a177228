// SPDX-License-Identifier: Apache-2.0
// RDMA nldev requests, reply parsers and listings (see rdma_netlink.h).
//
// The policy tables list the attributes read here with the types the kernel's nldev_policy gives
// them; every other attribute (PAD before 64-bit values, DEV_DIM, resource summaries, ...) is
// ignored, so replies from newer kernels parse unchanged.
#include "agent/platform/rdma_netlink.h"

#include <rdma/rdma_netlink.h>

#include <cerrno>
#include <cstdio>
#include <iterator>
#include <utility>

namespace rdmactl {
namespace {

constexpr uint16_t kDevGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
constexpr uint16_t kPortGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET);
constexpr uint16_t kDumpFlags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP;

// Indexed by attribute type; one past the largest type the tables below read.
constexpr size_t kNldevTableSize = RDMA_NLDEV_ATTR_DEV_PROTOCOL + 1;

// What identifies a device or port is required; the rest the kernel sends only for some devices
// or kernel versions, and defaults to 0 or "".
constexpr AttributePolicy kNldevDevPolicy[] = {
    {RDMA_NLDEV_ATTR_DEV_INDEX, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_DEV_INDEX", true},
    {RDMA_NLDEV_ATTR_DEV_NAME, MNL_TYPE_NUL_STRING, "RDMA_NLDEV_ATTR_DEV_NAME", true},
    {RDMA_NLDEV_ATTR_PORT_INDEX, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_PORT_INDEX", true},
    {RDMA_NLDEV_ATTR_CAP_FLAGS, MNL_TYPE_U64, "RDMA_NLDEV_ATTR_CAP_FLAGS"},
    {RDMA_NLDEV_ATTR_FW_VERSION, MNL_TYPE_NUL_STRING, "RDMA_NLDEV_ATTR_FW_VERSION"},
    {RDMA_NLDEV_ATTR_NODE_GUID, MNL_TYPE_U64, "RDMA_NLDEV_ATTR_NODE_GUID"},
    {RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, MNL_TYPE_U64, "RDMA_NLDEV_ATTR_SYS_IMAGE_GUID"},
    {RDMA_NLDEV_ATTR_DEV_NODE_TYPE, MNL_TYPE_U8, "RDMA_NLDEV_ATTR_DEV_NODE_TYPE"},
    {RDMA_NLDEV_ATTR_DEV_PROTOCOL, MNL_TYPE_NUL_STRING, "RDMA_NLDEV_ATTR_DEV_PROTOCOL"},
};

constexpr AttributePolicy kPortPolicy[] = {
    {RDMA_NLDEV_ATTR_DEV_INDEX, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_DEV_INDEX", true},
    {RDMA_NLDEV_ATTR_DEV_NAME, MNL_TYPE_NUL_STRING, "RDMA_NLDEV_ATTR_DEV_NAME", true},
    {RDMA_NLDEV_ATTR_PORT_INDEX, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_PORT_INDEX", true},
    {RDMA_NLDEV_ATTR_CAP_FLAGS, MNL_TYPE_U64, "RDMA_NLDEV_ATTR_CAP_FLAGS"},
    {RDMA_NLDEV_ATTR_SUBNET_PREFIX, MNL_TYPE_U64, "RDMA_NLDEV_ATTR_SUBNET_PREFIX"},
    {RDMA_NLDEV_ATTR_LID, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_LID"},
    {RDMA_NLDEV_ATTR_SM_LID, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_SM_LID"},
    {RDMA_NLDEV_ATTR_LMC, MNL_TYPE_U8, "RDMA_NLDEV_ATTR_LMC"},
    {RDMA_NLDEV_ATTR_PORT_STATE, MNL_TYPE_U8, "RDMA_NLDEV_ATTR_PORT_STATE"},
    {RDMA_NLDEV_ATTR_PORT_PHYS_STATE, MNL_TYPE_U8, "RDMA_NLDEV_ATTR_PORT_PHYS_STATE"},
    {RDMA_NLDEV_ATTR_NDEV_INDEX, MNL_TYPE_U32, "RDMA_NLDEV_ATTR_NDEV_INDEX"},
    {RDMA_NLDEV_ATTR_NDEV_NAME, MNL_TYPE_NUL_STRING, "RDMA_NLDEV_ATTR_NDEV_NAME"},
};

using NldevAttributes = const nlattr* [kNldevTableSize];

uint8_t get_u8(const nlattr* attr) { return attr == nullptr ? 0 : mnl_attr_get_u8(attr); }
uint32_t get_u32(const nlattr* attr) { return attr == nullptr ? 0 : mnl_attr_get_u32(attr); }
uint64_t get_u64(const nlattr* attr) { return attr == nullptr ? 0 : mnl_attr_get_u64(attr); }

// As iproute2's `rdma dev` prints RDMA_NLDEV_ATTR_DEV_NODE_TYPE (enum rdma_node_type).
std::string node_type_name(uint8_t type) {
  static constexpr const char* kNames[] = {"unknown", "ca",    "switch",    "router",
                                           "rnic",    "usnic", "usnic_udp", "unspecified"};
  return type < std::size(kNames) ? kNames[type] : "unknown";
}

Result<void> expect_type(const nlmsghdr* message, uint16_t expected, uint16_t also,
                         const char* what) {
  if (message->nlmsg_type == expected || message->nlmsg_type == also) return ok();
  char text[96];
  std::snprintf(text, sizeof text, "unexpected netlink message type 0x%x in %s reply",
                message->nlmsg_type, what);
  return make_error(ErrorKind::kPlatform, text, {}, EBADMSG);
}

}  // namespace

void build_dev_get_dump(MnlMessage& message) { message.put_header(kDevGetType, kDumpFlags); }

void build_port_get_dump(MnlMessage& message, uint32_t device_index) {
  message.put_header(kPortGetType, kDumpFlags);
  message.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, device_index);
}

Result<NldevDevice> parse_dev_reply(const nlmsghdr* message) {
  if (Result<void> type = expect_type(message, kDevGetType, kDevGetType, "RDMA_NLDEV_CMD_GET");
      !type) {
    return type.error();
  }
  NldevAttributes tb = {};
  if (Result<void> parsed = parse_attributes(message, 0, kNldevDevPolicy, tb); !parsed) {
    return parsed.error();
  }
  NldevDevice device;
  device.index = get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
  device.name = attribute_text(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
  device.port_count = get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
  device.fw_version = attribute_text(tb[RDMA_NLDEV_ATTR_FW_VERSION]);
  device.node_guid = get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]);
  device.sys_image_guid = get_u64(tb[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID]);
  device.cap_flags = get_u64(tb[RDMA_NLDEV_ATTR_CAP_FLAGS]);
  if (tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE] != nullptr) {
    device.node_type = node_type_name(get_u8(tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]));
  }
  device.protocol = attribute_text(tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL]);
  return device;
}

Result<NldevPort> parse_port_reply(const nlmsghdr* message) {
  if (Result<void> type =
          expect_type(message, kPortGetType, kDevGetType, "RDMA_NLDEV_CMD_PORT_GET");
      !type) {
    return type.error();
  }
  NldevAttributes tb = {};
  if (Result<void> parsed = parse_attributes(message, 0, kPortPolicy, tb); !parsed) {
    return parsed.error();
  }
  NldevPort port;
  port.device_index = get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
  port.device_name = attribute_text(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
  port.port = get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
  port.port_state = get_u8(tb[RDMA_NLDEV_ATTR_PORT_STATE]);
  port.phys_state = get_u8(tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE]);
  port.netdev_index = get_u32(tb[RDMA_NLDEV_ATTR_NDEV_INDEX]);
  port.netdev_name = attribute_text(tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
  port.lid = get_u32(tb[RDMA_NLDEV_ATTR_LID]);
  port.sm_lid = get_u32(tb[RDMA_NLDEV_ATTR_SM_LID]);
  port.lmc = get_u8(tb[RDMA_NLDEV_ATTR_LMC]);
  port.subnet_prefix = get_u64(tb[RDMA_NLDEV_ATTR_SUBNET_PREFIX]);
  port.cap_flags = get_u64(tb[RDMA_NLDEV_ATTR_CAP_FLAGS]);
  return port;
}

Result<std::vector<NldevDevice>> list_rdma_devices(MnlSocket& socket) {
  MnlMessage request;
  build_dev_get_dump(request);
  std::vector<NldevDevice> devices;
  Result<void> done = socket.talk(
      request,
      [&devices](const nlmsghdr* reply) -> Result<void> {
        Result<NldevDevice> device = parse_dev_reply(reply);
        if (!device) return device.error();
        devices.push_back(std::move(*device));
        return ok();
      },
      "dump RDMA devices");
  if (!done) return done.error();
  return devices;
}

Result<std::vector<NldevPort>> list_rdma_ports(MnlSocket& socket,
                                               std::span<const NldevDevice> devices) {
  std::vector<NldevPort> ports;
  for (const NldevDevice& device : devices) {
    MnlMessage request;
    build_port_get_dump(request, device.index);
    Result<void> done = socket.talk(
        request,
        [&ports](const nlmsghdr* reply) -> Result<void> {
          Result<NldevPort> port = parse_port_reply(reply);
          if (!port) return port.error();
          ports.push_back(std::move(*port));
          return ok();
        },
        "dump ports of RDMA device " + std::to_string(device.index));
    if (!done) {
      Error error = done.error();
      error.where = device.name;
      return error;
    }
  }
  return ports;
}

Result<std::vector<NldevPort>> list_rdma_ports(MnlSocket& socket) {
  Result<std::vector<NldevDevice>> devices = list_rdma_devices(socket);
  if (!devices) return devices.error();
  return list_rdma_ports(socket, *devices);
}

Result<MnlSocket> open_rdma_netlink() {
  Result<MnlSocket> socket = MnlSocket::open(NETLINK_RDMA);
  if (!socket && socket.error().err_no == EPROTONOSUPPORT) {
    return make_error(ErrorKind::kNotSupported,
                      "this kernel has no RDMA netlink (ib_core not loaded)", {},
                      EPROTONOSUPPORT);
  }
  return socket;
}

Result<std::vector<std::string>> rdma_device_names() {
  Result<MnlSocket> socket = open_rdma_netlink();
  if (!socket) return socket.error();
  Result<std::vector<NldevDevice>> devices = list_rdma_devices(*socket);
  if (!devices) return devices.error();
  std::vector<std::string> names;
  names.reserve(devices->size());
  for (NldevDevice& device : *devices) names.push_back(std::move(device.name));
  return names;
}

std::string port_state_name(uint8_t state) {
  // enum ib_port_state, as the kernel's sysfs state_show names it.
  static constexpr const char* kNames[] = {"NOP",   "DOWN",   "INIT",
                                           "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state < std::size(kNames) ? kNames[state] : "";
}

std::string phys_state_name(uint8_t state) {
  // enum ib_port_phys_state, as ib_port_phys_state_str names it (0 is not a state).
  static constexpr const char* kNames[] = {"",
                                           "Sleep",
                                           "Polling",
                                           "Disabled",
                                           "PortConfigurationTraining",
                                           "LinkUp",
                                           "LinkErrorRecovery",
                                           "Phy Test"};
  return state < std::size(kNames) ? kNames[state] : "";
}

std::string format_guid(uint64_t guid) {
  char text[20];
  std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x",
                static_cast<unsigned>(guid >> 48) & 0xffff,
                static_cast<unsigned>(guid >> 32) & 0xffff,
                static_cast<unsigned>(guid >> 16) & 0xffff, static_cast<unsigned>(guid) & 0xffff);
  return text;
}

}  // namespace rdmactl
