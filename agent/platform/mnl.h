// SPDX-License-Identifier: Apache-2.0
// The one place rdmactl's libmnl traffic goes through: RDMA netlink (NETLINK_RDMA, nldev) now,
// DCB netlink (rtnetlink RTM_GETDCB/RTM_SETDCB) next.
//
// As iproute2's dcb_talk and mnlu_socket_recv_run: MnlSocket owns the socket, its port id and its
// sequence numbers, asks for extended acks, and turns an nlmsgerr into an Error carrying the
// kernel's errno and message. Requests are built with MnlMessage only; replies are read through
// attribute policy tables (parse_attributes) that ignore attributes this code does not know, since
// newer kernels keep adding them.
//
// The bytes travel through a NetlinkTransport: the kernel in production, a scripted fake in unit
// tests, so that the receive, ack and error path tested is the one that runs (this host's kernel
// may have no RDMA netlink at all).
#pragma once

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "agent/core/result.h"

namespace rdmactl {

// A netlink request under construction. The buffer grows as attributes are added, so a request
// never overflows; header() and pointers into the message are valid until the next put.
// The seq and pid fields stay 0: MnlSocket::talk() assigns the sequence number.
class MnlMessage {
 public:
  // An open nest: its position in the buffer (a pointer would dangle when the buffer grows).
  struct Nest {
    size_t offset = 0;
  };

  // An empty message of type 0; put_header() gives it its type and flags.
  MnlMessage();

  // Starts over: a fresh header, nothing else.
  void put_header(uint16_t type, uint16_t flags);
  // The family header after nlmsghdr (dcbmsg for DCB; RDMA netlink has none), zero padded.
  void put_extra_header(const void* data, size_t size);
  template <typename T>
  void put_extra_header(const T& header) {
    put_extra_header(&header, sizeof header);
  }

  void put(uint16_t type, const void* data, size_t size);
  void put_u8(uint16_t type, uint8_t value);
  void put_u16(uint16_t type, uint16_t value);
  void put_u32(uint16_t type, uint32_t value);
  void put_u64(uint16_t type, uint64_t value);
  // With its terminating NUL, as the kernel's NLA_NUL_STRING policies require.
  void put_str(uint16_t type, std::string_view value);

  Nest nest_start(uint16_t type);
  void nest_end(Nest nest);

  nlmsghdr* header() { return reinterpret_cast<nlmsghdr*>(buffer_.data()); }
  const nlmsghdr* header() const { return reinterpret_cast<const nlmsghdr*>(buffer_.data()); }
  // The message as it goes on the wire: nlmsg_len bytes.
  std::span<const uint8_t> bytes() const { return {buffer_.data(), header()->nlmsg_len}; }
  // False once an attribute or nest outgrew the 16-bit nla_len; talk() refuses such a message
  // (EMSGSIZE) rather than send one the kernel would misparse.
  bool fits() const { return fits_; }

 private:
  // Makes room for `bytes` more bytes after nlmsg_len, zeroed.
  void reserve_tail(size_t bytes);

  std::vector<uint8_t> buffer_;
  bool fits_ = true;
};

// Where netlink datagrams go. KernelTransport (inside MnlSocket::open) is the real one; tests give
// MnlSocket a fake that records requests and answers scripted replies.
class NetlinkTransport {
 public:
  virtual ~NetlinkTransport() = default;
  // The port id the kernel addresses replies to (nlmsg_pid of every reply).
  virtual uint32_t port_id() const = 0;
  virtual Result<void> send(std::span<const uint8_t> datagram) = 0;
  // Reads one datagram into `buffer` and returns its length. A datagram larger than the buffer
  // is an error (ENOSPC), never silently truncated; no reply in time is kTimeout.
  virtual Result<size_t> receive(std::span<uint8_t> buffer) = 0;
};

// Called for every data message (type >= NLMSG_MIN_TYPE) answering the current request. An error
// it returns stops the exchange and is what talk() returns.
using ReplyHandler = std::function<Result<void>(const nlmsghdr*)>;

// A netlink socket of one bus with its own sequence numbers. Move-only; one thread at a time.
//
// Stale replies: a message whose nlmsg_seq is not the current request's is skipped, never an
// error. Such messages are the rest of an earlier exchange on this socket that stopped early (its
// handler failed, or it timed out); skipping them lets the socket go on being used, where
// rejecting them (mnl_cb_run's EPROTO) would fail every later request until the queue drained.
class MnlSocket {
 public:
  // mnl_socket_open2 + bind with an automatic port id; NETLINK_EXT_ACK and NETLINK_CAP_ACK are
  // switched on where the kernel knows them. A bus this kernel lacks (EPROTONOSUPPORT: NETLINK_RDMA
  // without ib_core) is kNotSupported.
  static Result<MnlSocket> open(int bus);
  // talk() over any transport (tests). `first_seq` is the first sequence number used.
  static MnlSocket over(std::unique_ptr<NetlinkTransport> transport, uint32_t first_seq = 1);

  MnlSocket(MnlSocket&&) noexcept = default;
  MnlSocket& operator=(MnlSocket&&) noexcept = default;
  MnlSocket(const MnlSocket&) = delete;
  MnlSocket& operator=(const MnlSocket&) = delete;
  ~MnlSocket() = default;

  uint32_t port_id() const { return transport_->port_id(); }

  // One request, all of its replies. Sets NLM_F_REQUEST|NLM_F_ACK and the next sequence number
  // in `request`, sends it, and reads until its ack, its NLMSG_DONE, or an error; every data
  // message of this request goes to `on_reply` (which may be empty when only an ack is expected).
  //
  // A kernel error (NLMSG_ERROR, or NLMSG_DONE with a negative status after a failed dump) is an
  // Error with the kernel's errno whose message is "<what>: <kernel ext-ack text>", or just
  // "<what>" when the kernel gave no text; Error::to_string() then appends "(<strerror>)".
  // The kind follows the errno (EPERM -> kPermission, ENODEV -> kNotFound, ...).
  Result<void> talk(MnlMessage& request, const ReplyHandler& on_reply, std::string_view what);

 private:
  MnlSocket(std::unique_ptr<NetlinkTransport> transport, uint32_t first_seq);
  uint32_t next_seq();

  std::unique_ptr<NetlinkTransport> transport_;
  uint32_t seq_ = 1;
  std::vector<uint8_t> receive_buffer_;
};

// One attribute a reply may carry, and how to validate it (mnl_attr_validate).
struct AttributePolicy {
  uint16_t type = 0;
  mnl_attr_data_type data_type = MNL_TYPE_UNSPEC;
  const char* name = "";  // in error messages: "RDMA_NLDEV_ATTR_DEV_NAME"
  bool required = false;  // missing -> an Error naming it
  size_t length = 0;      // when non-zero, the exact payload length (mnl_attr_validate2)
};

// Reads the attributes after the netlink header and `extra_header_len` bytes of family header.
// `out` is indexed by attribute type and must be larger than every type in `policy`; it is
// cleared first, then holds each listed attribute found (the last one when repeated). Attributes
// not listed are ignored. A listed attribute that fails validation, a missing required one, or a
// message shorter than its headers is an Error (EBADMSG) naming the attribute.
Result<void> parse_attributes(const nlmsghdr* message, size_t extra_header_len,
                              std::span<const AttributePolicy> policy,
                              std::span<const nlattr*> out);
// The same for the attributes inside a nest.
Result<void> parse_nested(const nlattr* nest, std::span<const AttributePolicy> policy,
                          std::span<const nlattr*> out);

// The attributes inside a nest, in order: for repeated entries (DCB app tables) that a policy
// table indexed by type cannot hold.
std::vector<const nlattr*> nested_entries(const nlattr* nest);

// A validated string attribute's text, without its NUL.
std::string_view attribute_string(const nlattr* attr);
// The same as a string, empty for an attribute the message did not carry (nullptr).
std::string attribute_text(const nlattr* attr);

}  // namespace rdmactl
