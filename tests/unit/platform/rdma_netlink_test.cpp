// SPDX-License-Identifier: Apache-2.0
// RDMA nldev at the message level: the dump requests byte for byte against the uapi layout, reply
// parsing of messages built as the kernel's fill_dev_info/fill_port_info build them, and the
// listings over a scripted transport. This host has no RDMA netlink; the real dumps run in the
// Soft-RoCE guest (tests/vm/).
#include "agent/platform/rdma_netlink.h"

#include <gtest/gtest.h>

#include "tests/unit/platform/scripted_kernel.h"
#include <rdma/rdma_netlink.h>

#include <bit>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace rdmactl {
namespace platform_rdma_netlink_test {

constexpr uint32_t kPortId = 777;
constexpr uint16_t kDevGet = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
constexpr uint16_t kPortGet = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET);

using test::Bytes;

using test::ScriptedKernel;

// nla_put_u64_64bit on architectures without efficient unaligned access puts an empty
// RDMA_NLDEV_ATTR_PAD first; the replies here always carry one, to show it is ignored.
void put_u64_as_kernel(MnlMessage& message, uint16_t type, uint64_t value) {
  message.put(RDMA_NLDEV_ATTR_PAD, "", 0);
  message.put_u64(type, value);
}

// fill_dev_info of a ConnectX-like device, in the kernel's attribute order.
MnlMessage dev_reply(uint32_t seq, uint32_t index, const std::string& name, uint32_t ports) {
  MnlMessage m;
  m.put_header(kDevGet, NLM_F_MULTI);
  m.header()->nlmsg_seq = seq;
  m.header()->nlmsg_pid = kPortId;
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index);
  m.put_str(RDMA_NLDEV_ATTR_DEV_NAME, name);
  m.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, ports);
  put_u64_as_kernel(m, RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1c1e36);
  m.put_str(RDMA_NLDEV_ATTR_FW_VERSION, "16.35.2000");
  put_u64_as_kernel(m, RDMA_NLDEV_ATTR_NODE_GUID, 0x0c42a10300b1c2d0);
  put_u64_as_kernel(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0x0c42a10300b1c2d1);
  m.put_u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, RDMA_NODE_IB_CA);
  m.put_str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce");
  m.put_u8(RDMA_NLDEV_ATTR_DEV_DIM, 1);  // newer than this code's table: ignored
  return m;
}

// fill_port_info of a RoCE port: no LID attributes, a netdev in this namespace.
MnlMessage roce_port_reply(uint32_t seq, uint32_t index, const std::string& name, uint32_t port,
                           uint32_t ifindex, const std::string& netdev) {
  MnlMessage m;
  m.put_header(kPortGet, NLM_F_MULTI);
  m.header()->nlmsg_seq = seq;
  m.header()->nlmsg_pid = kPortId;
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index);
  m.put_str(RDMA_NLDEV_ATTR_DEV_NAME, name);
  m.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port);
  m.put_u8(RDMA_NLDEV_ATTR_PORT_STATE, 4);
  m.put_u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5);
  m.put_u32(RDMA_NLDEV_ATTR_NDEV_INDEX, ifindex);
  m.put_str(RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
  return m;
}

MnlMessage done(uint32_t seq, int status = 0) {
  MnlMessage m;
  m.put_header(NLMSG_DONE, NLM_F_MULTI);
  m.header()->nlmsg_seq = seq;
  m.header()->nlmsg_pid = kPortId;
  m.put_extra_header(status);
  return m;
}

Bytes datagram(std::initializer_list<MnlMessage> messages) {
  Bytes out;
  for (const MnlMessage& m : messages) out.insert(out.end(), m.bytes().begin(), m.bytes().end());
  return out;
}

const nlmsghdr* header_of(const Bytes& bytes) {
  return reinterpret_cast<const nlmsghdr*>(bytes.data());
}

// The DEV_INDEX a port dump request asks for (0 when absent).
uint32_t requested_device(const nlmsghdr* request) {
  uint32_t index = 0;
  mnl_attr_parse(
      request, 0,
      [](const nlattr* attr, void* data) {
        if (mnl_attr_get_type(attr) == RDMA_NLDEV_ATTR_DEV_INDEX) {
          *static_cast<uint32_t*>(data) = mnl_attr_get_u32(attr);
        }
        return MNL_CB_OK;
      },
      &index);
  return index;
}

// --- requests --------------------------------------------------------------------------------

TEST(NldevRequest, DeviceDumpMatchesTheUapiLayout) {
  MnlMessage message;
  build_dev_get_dump(message);
  const std::span<const uint8_t> bytes = message.bytes();
  ASSERT_EQ(bytes.size(), sizeof(nlmsghdr));
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(hdr->nlmsg_len, sizeof(nlmsghdr));
  EXPECT_EQ(hdr->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
  EXPECT_EQ(hdr->nlmsg_type, (RDMA_NL_NLDEV << 10) + RDMA_NLDEV_CMD_GET);
  EXPECT_EQ(hdr->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP);
  EXPECT_EQ(hdr->nlmsg_seq, 0u);  // talk() assigns it
  EXPECT_EQ(hdr->nlmsg_pid, 0u);
  if constexpr (std::endian::native == std::endian::little) {
    const Bytes golden = {0x10, 0, 0, 0, 0x01, 0x14, 0x05, 0x03, 0, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(Bytes(bytes.begin(), bytes.end()), golden);
  }
}

TEST(NldevRequest, PortDumpNamesItsDeviceAsTheKernelRequires) {
  MnlMessage message;
  build_port_get_dump(message, 3);
  const std::span<const uint8_t> bytes = message.bytes();
  ASSERT_EQ(bytes.size(), sizeof(nlmsghdr) + 8);
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(bytes.data());
  EXPECT_EQ(hdr->nlmsg_len, sizeof(nlmsghdr) + 8);
  EXPECT_EQ(hdr->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET));
  EXPECT_EQ(hdr->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP);
  const auto* attr = reinterpret_cast<const nlattr*>(bytes.data() + NLMSG_HDRLEN);
  EXPECT_EQ(attr->nla_len, NLA_HDRLEN + sizeof(uint32_t));
  EXPECT_EQ(attr->nla_type, RDMA_NLDEV_ATTR_DEV_INDEX);
  uint32_t index = 0;
  std::memcpy(&index, bytes.data() + NLMSG_HDRLEN + NLA_HDRLEN, sizeof index);
  EXPECT_EQ(index, 3u);
  if constexpr (std::endian::native == std::endian::little) {
    // clang-format off
    const Bytes golden = {
        0x18, 0, 0, 0, 0x05, 0x14, 0x05, 0x03, 0, 0, 0, 0, 0, 0, 0, 0,  // nlmsghdr
        0x08, 0, 0x01, 0, 0x03, 0, 0, 0,                                // DEV_INDEX 3
    };
    // clang-format on
    EXPECT_EQ(Bytes(bytes.begin(), bytes.end()), golden);
  }
}

// --- replies ---------------------------------------------------------------------------------

TEST(NldevReply, ParsesADeviceAsTheKernelFillsIt) {
  MnlMessage reply = dev_reply(1, 2, "mlx5_0", 1);
  Result<NldevDevice> device = parse_dev_reply(reply.header());
  ASSERT_TRUE(device) << device.error().to_string();
  EXPECT_EQ(device->index, 2u);
  EXPECT_EQ(device->name, "mlx5_0");
  EXPECT_EQ(device->port_count, 1u);
  EXPECT_EQ(device->cap_flags, 0x1c1e36u);
  EXPECT_EQ(device->fw_version, "16.35.2000");
  EXPECT_EQ(device->node_guid, 0x0c42a10300b1c2d0u);
  EXPECT_EQ(device->sys_image_guid, 0x0c42a10300b1c2d1u);
  EXPECT_EQ(device->node_type, "ca");
  EXPECT_EQ(device->protocol, "roce");
}

TEST(NldevReply, ADeviceWithoutFirmwareOrProtocolParses) {
  // rxe on a 4.x kernel: no FW_VERSION (empty firmware string), no DEV_PROTOCOL yet.
  MnlMessage m;
  m.put_header(kDevGet, NLM_F_MULTI);
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1);
  m.put_str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
  m.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  m.put_u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, RDMA_NODE_IB_CA);
  Result<NldevDevice> device = parse_dev_reply(m.header());
  ASSERT_TRUE(device) << device.error().to_string();
  EXPECT_EQ(device->name, "rxe0");
  EXPECT_EQ(device->fw_version, "");
  EXPECT_EQ(device->protocol, "");
  EXPECT_EQ(device->node_guid, 0u);
}

TEST(NldevReply, ParsesARocePortWithItsNetdev) {
  MnlMessage reply = roce_port_reply(1, 2, "mlx5_0", 1, 5, "ens1f0np0");
  Result<NldevPort> port = parse_port_reply(reply.header());
  ASSERT_TRUE(port) << port.error().to_string();
  EXPECT_EQ(port->device_index, 2u);
  EXPECT_EQ(port->device_name, "mlx5_0");
  EXPECT_EQ(port->port, 1u);
  EXPECT_EQ(port->port_state, 4);
  EXPECT_EQ(port->phys_state, 5);
  EXPECT_EQ(port->netdev_index, 5u);
  EXPECT_EQ(port->netdev_name, "ens1f0np0");
  EXPECT_EQ(port->lid, 0u);
  EXPECT_EQ(port->cap_flags, 0u);
}

TEST(NldevReply, ParsesAnInfinibandPortWithItsLids) {
  MnlMessage m;
  m.put_header(kPortGet, NLM_F_MULTI);
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 0);
  m.put_str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_2");
  m.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  put_u64_as_kernel(m, RDMA_NLDEV_ATTR_CAP_FLAGS, 0x0000000a2651e848);
  put_u64_as_kernel(m, RDMA_NLDEV_ATTR_SUBNET_PREFIX, 0xfe80000000000000);
  m.put_u32(RDMA_NLDEV_ATTR_LID, 0x1a);
  m.put_u32(RDMA_NLDEV_ATTR_SM_LID, 0x1);
  m.put_u8(RDMA_NLDEV_ATTR_LMC, 0);
  m.put_u8(RDMA_NLDEV_ATTR_PORT_STATE, 4);
  m.put_u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5);
  Result<NldevPort> port = parse_port_reply(m.header());
  ASSERT_TRUE(port) << port.error().to_string();
  EXPECT_EQ(port->device_index, 0u);  // index 0 is a valid device index
  EXPECT_EQ(port->lid, 0x1au);
  EXPECT_EQ(port->sm_lid, 1u);
  EXPECT_EQ(port->subnet_prefix, 0xfe80000000000000u);
  EXPECT_EQ(port->cap_flags, 0x0000000a2651e848u);
  EXPECT_EQ(port->netdev_name, "");  // IPoIB netdev in another namespace: none here
}

TEST(NldevReply, ASinglePortReplyOfTypeCmdGetIsAPort) {
  // nldev_port_get_doit answers with RDMA_NLDEV_CMD_GET as the message type.
  MnlMessage reply = roce_port_reply(1, 1, "rxe0", 1, 2, "eth0");
  reply.header()->nlmsg_type = kDevGet;
  Result<NldevPort> port = parse_port_reply(reply.header());
  ASSERT_TRUE(port) << port.error().to_string();
  EXPECT_EQ(port->netdev_name, "eth0");
}

TEST(NldevReply, AMissingIdentityAttributeIsAnErrorNamingIt) {
  MnlMessage m;
  m.put_header(kDevGet, NLM_F_MULTI);
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1);
  m.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  Result<NldevDevice> device = parse_dev_reply(m.header());
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().message,
            "missing RDMA_NLDEV_ATTR_DEV_NAME in netlink message type 0x1401");

  MnlMessage p;
  p.put_header(kPortGet, NLM_F_MULTI);
  p.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1);
  p.put_str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
  Result<NldevPort> port = parse_port_reply(p.header());
  ASSERT_FALSE(port);
  EXPECT_EQ(port.error().message,
            "missing RDMA_NLDEV_ATTR_PORT_INDEX in netlink message type 0x1405");
}

TEST(NldevReply, AMalformedKnownAttributeIsAnErrorNamingIt) {
  MnlMessage m;
  m.put_header(kPortGet, NLM_F_MULTI);
  m.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1);
  m.put_str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0");
  m.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  m.put_u32(RDMA_NLDEV_ATTR_PORT_STATE, 4);  // u8 in the uapi
  Result<NldevPort> port = parse_port_reply(m.header());
  ASSERT_FALSE(port);
  EXPECT_NE(port.error().message.find("malformed RDMA_NLDEV_ATTR_PORT_STATE"), std::string::npos)
      << port.error().message;
  EXPECT_EQ(port.error().err_no, EBADMSG);
}

TEST(NldevReply, UnknownAttributesAreIgnored) {
  MnlMessage m = roce_port_reply(1, 1, "rxe0", 1, 2, "eth0");
  MnlMessage::Nest nest = m.nest_start(RDMA_NLDEV_ATTR_RES_SUMMARY);  // within the table's range
  m.put_str(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, "qp");
  m.nest_end(nest);
  m.put_u32(1000, 0xdeadbeef);                        // far beyond anything known
  m.put(RDMA_NLDEV_ATTR_DEV_DIM, "\x01\x02\x03", 3);  // not even the u8 it should be: not ours
  Result<NldevPort> port = parse_port_reply(m.header());
  ASSERT_TRUE(port) << port.error().to_string();
  EXPECT_EQ(port->device_name, "rxe0");
}

TEST(NldevReply, AnUnexpectedMessageTypeIsAnError) {
  MnlMessage reply = dev_reply(1, 1, "rxe0", 1);
  reply.header()->nlmsg_type = kPortGet;
  Result<NldevDevice> device = parse_dev_reply(reply.header());
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().message,
            "unexpected netlink message type 0x1405 in RDMA_NLDEV_CMD_GET reply");
}

// --- listings over the scripted kernel ---------------------------------------------------------

TEST(RdmaNetlinkList, DevicesComeFromOneDump) {
  auto owned = std::make_unique<ScriptedKernel>([](const nlmsghdr* request) {
    const uint32_t seq = request->nlmsg_seq;
    return std::vector<Bytes>{
        datagram({dev_reply(seq, 0, "mlx5_0", 1), dev_reply(seq, 1, "mlx5_1", 1)}),
        datagram({dev_reply(seq, 2, "rxe0", 1), done(seq)})};
  }, kPortId);
  ScriptedKernel* kernel = owned.get();
  MnlSocket socket = MnlSocket::over(std::move(owned));
  Result<std::vector<NldevDevice>> devices = list_rdma_devices(socket);
  ASSERT_TRUE(devices) << devices.error().to_string();
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].name, "mlx5_0");
  EXPECT_EQ((*devices)[2].name, "rxe0");
  EXPECT_EQ((*devices)[2].index, 2u);

  ASSERT_EQ(kernel->requests.size(), 1u);
  MnlMessage expected;
  build_dev_get_dump(expected);
  expected.header()->nlmsg_seq = header_of(kernel->requests[0])->nlmsg_seq;
  EXPECT_EQ(kernel->requests[0], Bytes(expected.bytes().begin(), expected.bytes().end()));
}

TEST(RdmaNetlinkList, PortsTakeOneDumpPerDevice) {
  auto owned = std::make_unique<ScriptedKernel>([](const nlmsghdr* request) {
    const uint32_t seq = request->nlmsg_seq;
    if (request->nlmsg_type == kDevGet) {
      return std::vector<Bytes>{
          datagram({dev_reply(seq, 4, "mlx5_0", 2), dev_reply(seq, 9, "rxe0", 1), done(seq)})};
    }
    switch (requested_device(request)) {
      case 4:
        return std::vector<Bytes>{
            datagram({roce_port_reply(seq, 4, "mlx5_0", 1, 5, "ens1f0np0"),
                      roce_port_reply(seq, 4, "mlx5_0", 2, 6, "ens1f1np1"), done(seq)})};
      case 9:
        return std::vector<Bytes>{
            datagram({roce_port_reply(seq, 9, "rxe0", 1, 2, "eth0"), done(seq)})};
      default:
        return std::vector<Bytes>{datagram({done(seq, -EINVAL)})};
    }
  }, kPortId);
  ScriptedKernel* kernel = owned.get();
  MnlSocket socket = MnlSocket::over(std::move(owned));
  Result<std::vector<NldevPort>> ports = list_rdma_ports(socket);
  ASSERT_TRUE(ports) << ports.error().to_string();
  ASSERT_EQ(ports->size(), 3u);
  EXPECT_EQ((*ports)[0].netdev_name, "ens1f0np0");
  EXPECT_EQ((*ports)[1].port, 2u);
  EXPECT_EQ((*ports)[2].device_name, "rxe0");

  ASSERT_EQ(kernel->requests.size(), 3u);
  EXPECT_EQ(header_of(kernel->requests[0])->nlmsg_type, kDevGet);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(header_of(kernel->requests[i])->nlmsg_type, kPortGet);
    EXPECT_EQ(header_of(kernel->requests[i])->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP);
  }
  EXPECT_EQ(requested_device(header_of(kernel->requests[1])), 4u);
  EXPECT_EQ(requested_device(header_of(kernel->requests[2])), 9u);
}

TEST(RdmaNetlinkList, APortDumpThatFailsNamesTheDevice) {
  auto owned = std::make_unique<ScriptedKernel>([](const nlmsghdr* request) {
    return std::vector<Bytes>{datagram({done(request->nlmsg_seq, -EINVAL)})};
  }, kPortId);
  MnlSocket socket = MnlSocket::over(std::move(owned));
  NldevDevice gone;
  gone.index = 7;
  gone.name = "mlx5_3";
  Result<std::vector<NldevPort>> ports =
      list_rdma_ports(socket, std::span<const NldevDevice>(&gone, 1));
  ASSERT_FALSE(ports);
  EXPECT_EQ(ports.error().where, "mlx5_3");
  EXPECT_EQ(ports.error().message, "dump ports of RDMA device 7");
  EXPECT_EQ(ports.error().err_no, EINVAL);
}

TEST(RdmaNetlinkList, AMalformedReplyStopsTheListing) {
  auto owned = std::make_unique<ScriptedKernel>([](const nlmsghdr* request) {
    const uint32_t seq = request->nlmsg_seq;
    MnlMessage nameless;
    nameless.put_header(kDevGet, NLM_F_MULTI);
    nameless.header()->nlmsg_seq = seq;
    nameless.header()->nlmsg_pid = kPortId;
    nameless.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1);
    nameless.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
    return std::vector<Bytes>{datagram({dev_reply(seq, 0, "mlx5_0", 1), nameless, done(seq)})};
  }, kPortId);
  MnlSocket socket = MnlSocket::over(std::move(owned));
  Result<std::vector<NldevDevice>> devices = list_rdma_devices(socket);
  ASSERT_FALSE(devices);
  EXPECT_EQ(devices.error().message,
            "missing RDMA_NLDEV_ATTR_DEV_NAME in netlink message type 0x1401");
}

// --- this host ---------------------------------------------------------------------------------

// Runs on whatever kernel builds the tests: with RDMA netlink it lists devices (possibly none),
// without it (this build host: no ib_core) it must say so precisely, which is what the caller's
// fallback to sysfs keys on. The real dumps are exercised in the Soft-RoCE VM tests (tests/vm/).
TEST(RdmaNetlinkHost, ListsDeviceNamesOrSaysTheKernelHasNoRdmaNetlink) {
  Result<std::vector<std::string>> names = rdma_device_names();
  if (names) {
    for (const std::string& name : *names) EXPECT_FALSE(name.empty());
    return;
  }
  EXPECT_EQ(names.error().kind, ErrorKind::kNotSupported) << names.error().to_string();
  EXPECT_EQ(names.error().message, "this kernel has no RDMA netlink (ib_core not loaded)");
  EXPECT_EQ(names.error().err_no, EPROTONOSUPPORT);
}

// --- names shared with sysfs -------------------------------------------------------------------

TEST(NldevNames, MatchTheTextSysfsShows) {
  EXPECT_EQ(port_state_name(1), "DOWN");
  EXPECT_EQ(port_state_name(4), "ACTIVE");
  EXPECT_EQ(port_state_name(5), "ACTIVE_DEFER");
  EXPECT_EQ(port_state_name(6), "");
  EXPECT_EQ(phys_state_name(2), "Polling");
  EXPECT_EQ(phys_state_name(3), "Disabled");
  EXPECT_EQ(phys_state_name(5), "LinkUp");
  EXPECT_EQ(phys_state_name(7), "Phy Test");
  EXPECT_EQ(phys_state_name(0), "");
  EXPECT_EQ(phys_state_name(8), "");
  EXPECT_EQ(format_guid(0x0c42a10300b1c2d0), "0c42:a103:00b1:c2d0");
  EXPECT_EQ(format_guid(0), "0000:0000:0000:0000");
}

}  // namespace platform_rdma_netlink_test
}  // namespace rdmactl
