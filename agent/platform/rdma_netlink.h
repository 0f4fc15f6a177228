// SPDX-License-Identifier: Apache-2.0
// RDMA devices and ports from the kernel's RDMA netlink (NETLINK_RDMA, client RDMA_NL_NLDEV), as
// `rdma dev show` and `rdma link show` read them.
//
// Requests are built and replies parsed by pure functions (golden-byte and reply tests need no
// kernel); the list_* functions run them over an MnlSocket. The kernel's PORT_GET dump covers the
// ports of one device only (nldev_port_get_dumpit requires RDMA_NLDEV_ATTR_DEV_INDEX and answers
// EINVAL without it), so all ports of a host take one device dump plus one port dump per device.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/mnl.h"

namespace rdmactl {

// One RDMA_NLDEV_CMD_GET reply (the kernel's fill_dev_info). Absent optional attributes stay 0
// or empty.
struct NldevDevice {
  uint32_t index = 0;  // RDMA_NLDEV_ATTR_DEV_INDEX
  std::string name;    // RDMA_NLDEV_ATTR_DEV_NAME: "mlx5_0", "rxe0"
  // RDMA_NLDEV_ATTR_PORT_INDEX: a device reply carries its last port number there.
  uint32_t port_count = 0;
  std::string fw_version;       // empty for devices without firmware (rxe, siw)
  uint64_t node_guid = 0;       // host byte order
  uint64_t sys_image_guid = 0;  // host byte order
  uint64_t cap_flags = 0;       // device_cap_flags (enum ib_device_cap_flags)
  std::string node_type;  // "ca", "switch", "router", "rnic", "usnic", "usnic_udp", "unspecified"
  std::string protocol;   // "ib", "roce", "iw", "opa", "usnic"; empty before Linux 5.1
};

// One RDMA_NLDEV_CMD_PORT_GET reply (the kernel's fill_port_info).
struct NldevPort {
  uint32_t device_index = 0;
  std::string device_name;
  uint32_t port = 0;          // 1-based
  uint8_t port_state = 0;     // enum ib_port_state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE
  uint8_t phys_state = 0;     // 2 Polling, 3 Disabled, 5 LinkUp, ...
  uint32_t netdev_index = 0;  // 0 when the port has no netdev in this network namespace
  std::string netdev_name;
  // InfiniBand ports only (the kernel omits them for RoCE and iWARP): 0 otherwise.
  uint32_t lid = 0;
  uint32_t sm_lid = 0;
  uint8_t lmc = 0;
  uint64_t subnet_prefix = 0;
  uint64_t cap_flags = 0;  // port_cap_flags | port_cap_flags2 << 32
};

// Requests. Both are dumps (NLM_F_REQUEST|NLM_F_ACK|NLM_F_DUMP) with no family header.
void build_dev_get_dump(MnlMessage& message);                          // every device
void build_port_get_dump(MnlMessage& message, uint32_t device_index);  // every port of one device

// Replies. A missing identity attribute (index, name, port) or a malformed known attribute is an
// Error naming it; attributes this code does not know are ignored.
Result<NldevDevice> parse_dev_reply(const nlmsghdr* message);
// Accepts RDMA_NLDEV_CMD_PORT_GET (dumps) and RDMA_NLDEV_CMD_GET, the type the kernel gives the
// reply to a single-port PORT_GET request.
Result<NldevPort> parse_port_reply(const nlmsghdr* message);

// One RDMA_NLDEV_CMD_GET dump, in the kernel's device index order.
Result<std::vector<NldevDevice>> list_rdma_devices(MnlSocket& socket);
// One PORT_GET dump per device in `devices`, in that order. A device unregistered since it was
// listed fails its dump with EINVAL (kPlatform, `where` = its name): the next reconcile starts
// over.
Result<std::vector<NldevPort>> list_rdma_ports(MnlSocket& socket,
                                               std::span<const NldevDevice> devices);
// A device dump, then one port dump per device.
Result<std::vector<NldevPort>> list_rdma_ports(MnlSocket& socket);

// A NETLINK_RDMA socket; a kernel without RDMA netlink is kNotSupported "this kernel has no RDMA
// netlink (ib_core not loaded)".
Result<MnlSocket> open_rdma_netlink();
// The RDMA device names of this network namespace, from a fresh NETLINK_RDMA socket. A kernel
// without RDMA netlink is kNotSupported "this kernel has no RDMA netlink (ib_core not loaded)":
// the caller then reads sysfs.
Result<std::vector<std::string>> rdma_device_names();

// The names sysfs uses (ports/N/state "4: ACTIVE", ports/N/phys_state "5: LinkUp"), so that both
// sources give PortState the same text. Values this code does not know give "".
std::string port_state_name(uint8_t state);
std::string phys_state_name(uint8_t state);
// A GUID as sysfs writes node_guid: "0002:c903:00a1:b2c0".
std::string format_guid(uint64_t guid);

}  // namespace rdmactl
