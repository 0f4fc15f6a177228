// SPDX-License-Identifier: Apache-2.0
// MnlSocket, MnlMessage and the attribute policy parser: every libmnl exchange in rdmactl.
//
// talk() dispatches each received message with mnl_cb_run2, one message at a time, so that messages
// of an earlier exchange can be skipped by sequence number before libmnl's own checks (port id,
// sequence, NLM_F_DUMP_INTR) and callbacks see the current request's messages.
#include "agent/platform/mnl.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "agent/core/text.h"

namespace rdmactl {
namespace {

// The kernel sizes a dump batch after the largest buffer its reader has offered, capped at 32 KiB
// (netlink_dump); a buffer of that size is never truncated and takes a whole batch per recvmsg.
constexpr size_t kMnlReceiveBufferBytes = 32 * 1024;
// A kernel that never answers (a driver stuck in ib_query_port) must not hang the agent: the
// exchange fails as kTimeout and the next reconcile tries again.
constexpr time_t kMnlReceiveTimeoutSeconds = 10;

const char* data_type_name(mnl_attr_data_type type) {
  switch (type) {
    case MNL_TYPE_U8:
      return "u8";
    case MNL_TYPE_U16:
      return "u16";
    case MNL_TYPE_U32:
      return "u32";
    case MNL_TYPE_U64:
      return "u64";
    case MNL_TYPE_STRING:
      return "string";
    case MNL_TYPE_FLAG:
      return "flag";
    case MNL_TYPE_MSECS:
      return "msecs";
    case MNL_TYPE_NESTED:
      return "nest";
    case MNL_TYPE_NESTED_COMPAT:
      return "compat nest";
    case MNL_TYPE_NUL_STRING:
      return "NUL-terminated string";
    case MNL_TYPE_BINARY:
      return "binary";
    default:
      return "attribute";
  }
}

// The real transport: a bound NETLINK_* socket, closed with its owner.
class KernelTransport final : public NetlinkTransport {
 public:
  explicit KernelTransport(mnl_socket* sock) : sock_(sock) {}
  KernelTransport(const KernelTransport&) = delete;
  KernelTransport& operator=(const KernelTransport&) = delete;
  ~KernelTransport() override { mnl_socket_close(sock_); }

  uint32_t port_id() const override { return mnl_socket_get_portid(sock_); }

  Result<void> send(std::span<const uint8_t> datagram) override {
    if (mnl_socket_sendto(sock_, datagram.data(), datagram.size()) < 0) {
      return make_errno_error("send netlink request", errno);
    }
    return ok();
  }

  Result<size_t> receive(std::span<uint8_t> buffer) override {
    while (true) {
      const ssize_t got = mnl_socket_recvfrom(sock_, buffer.data(), buffer.size());
      if (got >= 0) return static_cast<size_t>(got);
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        return make_error(
            ErrorKind::kTimeout,
            "no netlink reply within " + std::to_string(kMnlReceiveTimeoutSeconds) + " s", {}, err);
      }
      // libmnl reports a datagram cut short by the buffer (MSG_TRUNC) as ENOSPC.
      if (err == ENOSPC) {
        return make_errno_error("netlink reply larger than the receive buffer", err);
      }
      return make_errno_error("receive netlink reply", err);
    }
  }

 private:
  mnl_socket* sock_;
};

// What came back for the current request.
struct MnlExchange {
  uint32_t seq = 0;
  std::string_view what;
  const ReplyHandler* on_reply = nullptr;
  std::optional<Error> failure;  // set by a callback that returns MNL_CB_ERROR
};

Error mnl_prefixed(std::string_view what, Error error) {
  error.message = std::string(what) + ": " + error.message;
  return error;
}

Error bad_message(std::string_view what, const std::string& detail) {
  return make_error(ErrorKind::kPlatform, std::string(what) + ": " + detail, {}, EBADMSG);
}

// NLMSGERR_ATTR_MSG from the TLVs after `tlv_offset` bytes of payload, when the kernel sent any.
std::string ext_ack_text(const nlmsghdr* msg, size_t tlv_offset) {
  if (!(msg->nlmsg_flags & NLM_F_ACK_TLVS)) return {};
  static constexpr AttributePolicy kPolicy[] = {
      {NLMSGERR_ATTR_MSG, MNL_TYPE_NUL_STRING, "NLMSGERR_ATTR_MSG"},
  };
  const nlattr* tb[NLMSGERR_ATTR_MSG + 1] = {};
  // A malformed ext-ack only loses the explanation; the errno is still the kernel's answer.
  if (!parse_attributes(msg, tlv_offset, kPolicy, tb) || tb[NLMSGERR_ATTR_MSG] == nullptr) {
    return {};
  }
  return std::string(attribute_string(tb[NLMSGERR_ATTR_MSG]));
}

Error kernel_error(std::string_view what, int err_no, const std::string& text) {
  std::string message(what);
  if (!text.empty()) message += ": " + text;
  return make_errno_error(std::move(message), err_no);
}

int mnl_on_data(const nlmsghdr* msg, void* arg) {
  auto* ex = static_cast<MnlExchange*>(arg);
  if (ex->on_reply == nullptr || !*ex->on_reply) return MNL_CB_OK;
  Result<void> handled = (*ex->on_reply)(msg);
  if (!handled) {
    ex->failure = handled.error();
    return MNL_CB_ERROR;
  }
  return MNL_CB_OK;
}

// NLMSG_ERROR: error 0 is the ack that ends a request; anything else is the kernel refusing it.
int mnl_on_error(const nlmsghdr* msg, void* arg) {
  auto* ex = static_cast<MnlExchange*>(arg);
  if (msg->nlmsg_len < mnl_nlmsg_size(sizeof(nlmsgerr))) {
    ex->failure = bad_message(ex->what, "truncated NLMSG_ERROR");
    return MNL_CB_ERROR;
  }
  const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(msg));
  if (err->error == 0) return MNL_CB_STOP;
  // The TLVs follow the echoed request: its header only when the kernel capped the echo
  // (NETLINK_CAP_ACK), the whole request otherwise.
  size_t tlv_offset = sizeof(nlmsgerr);
  if (!(msg->nlmsg_flags & NLM_F_CAPPED) && err->msg.nlmsg_len > sizeof(nlmsghdr)) {
    tlv_offset += err->msg.nlmsg_len - sizeof(nlmsghdr);
  }
  ex->failure = kernel_error(ex->what, err->error < 0 ? -err->error : err->error,
                             ext_ack_text(msg, tlv_offset));
  return MNL_CB_ERROR;
}

// NLMSG_DONE ends a dump; its int payload is negative when the dump failed part way (or, on
// current kernels, at its start), with the ext-ack TLVs after it.
int mnl_on_done(const nlmsghdr* msg, void* arg) {
  auto* ex = static_cast<MnlExchange*>(arg);
  if (msg->nlmsg_len >= mnl_nlmsg_size(sizeof(int))) {
    int status = 0;
    std::memcpy(&status, mnl_nlmsg_get_payload(msg), sizeof status);
    if (status < 0) {
      ex->failure = kernel_error(ex->what, -status, ext_ack_text(msg, sizeof(int)));
      return MNL_CB_ERROR;
    }
  }
  return MNL_CB_STOP;
}

// libmnl's own checks refused a message: EINTR for NLM_F_DUMP_INTR (the table changed under the
// dump; RDMA nldev dumps never set it), ESRCH for a message from another port.
Error libmnl_error(std::string_view what, int err, const nlmsghdr* msg) {
  if (err == EINTR) {
    return make_error(ErrorKind::kPlatform,
                      std::string(what) + ": dump interrupted by a concurrent change", {}, err);
  }
  return make_errno_error(
      std::string(what) + ": unexpected netlink message from port " + std::to_string(msg->nlmsg_pid),
      err);
}

// Runs one received datagram: MNL_CB_OK to read on, MNL_CB_STOP when the request is answered,
// MNL_CB_ERROR with ex.failure set.
int run_datagram(const uint8_t* data, size_t size, uint32_t port_id, MnlExchange& ex) {
  // Indexed by control message type; NOOP and OVERRUN (never sent by the kernel) are ignored.
  // Not const: libmnl 1.0.4 takes a non-const array.
  mnl_cb_t control_callbacks[NLMSG_MIN_TYPE] = {nullptr, nullptr, mnl_on_error, mnl_on_done};
  const auto* msg = reinterpret_cast<const nlmsghdr*>(data);
  int remaining = static_cast<int>(size);
  while (mnl_nlmsg_ok(msg, remaining)) {
    if (msg->nlmsg_seq == ex.seq) {
      const int rc = mnl_cb_run2(msg, msg->nlmsg_len, ex.seq, port_id, mnl_on_data, &ex,
                                 control_callbacks, NLMSG_MIN_TYPE);
      if (rc == MNL_CB_ERROR) {
        if (!ex.failure) ex.failure = libmnl_error(ex.what, errno, msg);
        return MNL_CB_ERROR;
      }
      if (rc == MNL_CB_STOP) return MNL_CB_STOP;
    }
    msg = mnl_nlmsg_next(msg, &remaining);
  }
  if (remaining > 0) {
    ex.failure = bad_message(
        ex.what, std::to_string(remaining) + " trailing bytes that are no netlink message");
    return MNL_CB_ERROR;
  }
  return MNL_CB_OK;
}

Result<void> check_table(std::span<const AttributePolicy> policy, std::span<const nlattr*> out) {
  for (const AttributePolicy& entry : policy) {
    if (entry.type >= out.size()) {
      return make_error(ErrorKind::kPlatform,
                        std::string("attribute table too small for ") + entry.name, {}, EINVAL);
    }
  }
  std::fill(out.begin(), out.end(), nullptr);
  return ok();
}

struct ParseState {
  std::span<const AttributePolicy> policy;
  std::span<const nlattr*> out;
  const AttributePolicy* malformed = nullptr;
  uint16_t malformed_length = 0;
};

int collect_attribute(const nlattr* attr, void* arg) {
  auto* state = static_cast<ParseState*>(arg);
  const uint16_t type = mnl_attr_get_type(attr);
  for (const AttributePolicy& entry : state->policy) {
    if (entry.type != type) continue;
    const int rc = entry.length != 0 ? mnl_attr_validate2(attr, entry.data_type, entry.length)
                                     : mnl_attr_validate(attr, entry.data_type);
    if (rc < 0) {
      state->malformed = &entry;
      state->malformed_length = mnl_attr_get_payload_len(attr);
      return MNL_CB_ERROR;
    }
    state->out[type] = attr;
    return MNL_CB_OK;
  }
  return MNL_CB_OK;  // not in the table: an attribute of a newer kernel, or one not needed here
}

Result<void> finish_parse(const ParseState& state, const std::string& context) {
  if (state.malformed != nullptr) {
    const AttributePolicy& entry = *state.malformed;
    std::string expected = data_type_name(entry.data_type);
    if (entry.length != 0) expected += " of " + std::to_string(entry.length) + " bytes";
    return make_error(ErrorKind::kPlatform,
                      "malformed " + std::string(entry.name) + " (attribute " +
                          std::to_string(entry.type) + ") in " + context + ": " +
                          std::to_string(state.malformed_length) + "-byte payload where a " +
                          expected + " was expected",
                      {}, EBADMSG);
  }
  for (const AttributePolicy& entry : state.policy) {
    if (entry.required && state.out[entry.type] == nullptr) {
      return make_error(ErrorKind::kPlatform,
                        "missing " + std::string(entry.name) + " in " + context, {}, EBADMSG);
    }
  }
  return ok();
}

}  // namespace

// MnlMessage -------------------------------------------------------------------------------------

MnlMessage::MnlMessage() { put_header(0, 0); }

void MnlMessage::put_header(uint16_t type, uint16_t flags) {
  buffer_.assign(MNL_NLMSG_HDRLEN, 0);
  nlmsghdr* hdr = mnl_nlmsg_put_header(buffer_.data());
  hdr->nlmsg_type = type;
  hdr->nlmsg_flags = flags;
  fits_ = true;
}

void MnlMessage::reserve_tail(size_t bytes) {
  const size_t needed = header()->nlmsg_len + MNL_ALIGN(bytes);
  if (buffer_.size() < needed) buffer_.resize(needed, 0);
}

void MnlMessage::put_extra_header(const void* data, size_t size) {
  reserve_tail(size);
  void* extra = mnl_nlmsg_put_extra_header(header(), size);
  std::memcpy(extra, data, size);
}

void MnlMessage::put(uint16_t type, const void* data, size_t size) {
  if (MNL_ATTR_HDRLEN + size > UINT16_MAX) {
    fits_ = false;
    return;
  }
  reserve_tail(MNL_ATTR_HDRLEN + size);
  mnl_attr_put(header(), type, size, data);
}

void MnlMessage::put_u8(uint16_t type, uint8_t value) { put(type, &value, sizeof value); }
void MnlMessage::put_u16(uint16_t type, uint16_t value) { put(type, &value, sizeof value); }
void MnlMessage::put_u32(uint16_t type, uint32_t value) { put(type, &value, sizeof value); }
void MnlMessage::put_u64(uint16_t type, uint64_t value) { put(type, &value, sizeof value); }

void MnlMessage::put_str(uint16_t type, std::string_view value) {
  const std::string terminated(value);
  put(type, terminated.c_str(), terminated.size() + 1);
}

MnlMessage::Nest MnlMessage::nest_start(uint16_t type) {
  reserve_tail(MNL_ATTR_HDRLEN);
  Nest nest{header()->nlmsg_len};
  mnl_attr_nest_start(header(), type);
  return nest;
}

void MnlMessage::nest_end(Nest nest) {
  if (header()->nlmsg_len - nest.offset > UINT16_MAX) {
    fits_ = false;
    return;
  }
  mnl_attr_nest_end(header(), reinterpret_cast<nlattr*>(buffer_.data() + nest.offset));
}

// MnlSocket --------------------------------------------------------------------------------------

MnlSocket::MnlSocket(std::unique_ptr<NetlinkTransport> transport, uint32_t first_seq)
    : transport_(std::move(transport)), seq_(first_seq), receive_buffer_(kMnlReceiveBufferBytes) {}

Result<MnlSocket> MnlSocket::open(int bus) {
  const std::string what = "open netlink socket (bus " + std::to_string(bus) + ")";
  mnl_socket* raw = mnl_socket_open2(bus, SOCK_CLOEXEC);
  if (raw == nullptr) {
    const int err = errno;
    if (err == EPROTONOSUPPORT) {
      return make_error(ErrorKind::kNotSupported, what + ": this kernel does not provide it", {},
                        err);
    }
    return make_errno_error(what, err);
  }
  auto transport = std::make_unique<KernelTransport>(raw);  // closes the socket on every return
  if (mnl_socket_bind(raw, 0, MNL_SOCKET_AUTOPID) < 0) {
    return make_errno_error(what + ": bind", errno);
  }

  // Kernels before 4.12 (EXT_ACK) and 4.3 (CAP_ACK) refuse these; their errors then carry only
  // the errno, and acks echo the whole request, which talk() handles as well.
  int one = 1;
  mnl_socket_setsockopt(raw, NETLINK_EXT_ACK, &one, sizeof one);
  mnl_socket_setsockopt(raw, NETLINK_CAP_ACK, &one, sizeof one);
  const timeval timeout{kMnlReceiveTimeoutSeconds, 0};
  if (setsockopt(mnl_socket_get_fd(raw), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) < 0) {
    return make_errno_error(what + ": set receive timeout", errno);
  }
  return MnlSocket(std::move(transport), 1);
}

MnlSocket MnlSocket::over(std::unique_ptr<NetlinkTransport> transport, uint32_t first_seq) {
  return MnlSocket(std::move(transport), first_seq);
}

// Sequence number 0 is never used: mnl_cb_run takes it as "do not check", and the kernel's
// notifications carry it.
uint32_t MnlSocket::next_seq() {
  if (seq_ == 0) seq_ = 1;
  return seq_++;
}

Result<void> MnlSocket::talk(MnlMessage& request, const ReplyHandler& on_reply,
                             std::string_view what) {
  if (!request.fits()) {
    return make_error(ErrorKind::kPlatform,
                      std::string(what) + ": request has an attribute longer than netlink allows",
                      {}, EMSGSIZE);
  }
  nlmsghdr* hdr = request.header();
  // NLM_F_ACK so that every request ends in something: an ack, an error, or a dump's NLMSG_DONE.
  hdr->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  hdr->nlmsg_seq = next_seq();

  MnlExchange ex;
  ex.seq = hdr->nlmsg_seq;
  ex.what = what;
  ex.on_reply = &on_reply;

  if (Result<void> sent = transport_->send(request.bytes()); !sent) {
    return mnl_prefixed(what, sent.error());
  }
  const uint32_t port = transport_->port_id();
  while (true) {
    Result<size_t> got = transport_->receive(receive_buffer_);
    if (!got) return mnl_prefixed(what, got.error());
    const int rc = run_datagram(receive_buffer_.data(), *got, port, ex);
    if (rc == MNL_CB_STOP) return ok();
    if (rc == MNL_CB_ERROR) return std::move(*ex.failure);
  }
}

// Attribute parsing ------------------------------------------------------------------------------

Result<void> parse_attributes(const nlmsghdr* message, size_t extra_header_len,
                              std::span<const AttributePolicy> policy,
                              std::span<const nlattr*> out) {
  if (Result<void> table = check_table(policy, out); !table) return table;
  const std::string context = "netlink message type " + hex_number(message->nlmsg_type);
  if (message->nlmsg_len < MNL_NLMSG_HDRLEN + MNL_ALIGN(extra_header_len)) {
    return make_error(ErrorKind::kPlatform,
                      context + " of " + std::to_string(message->nlmsg_len) +
                          " bytes is shorter than its headers",
                      {}, EBADMSG);
  }
  ParseState state{policy, out};
  mnl_attr_parse(message, static_cast<unsigned>(extra_header_len), collect_attribute, &state);
  return finish_parse(state, context);
}

Result<void> parse_nested(const nlattr* nest, std::span<const AttributePolicy> policy,
                          std::span<const nlattr*> out) {
  if (Result<void> table = check_table(policy, out); !table) return table;
  ParseState state{policy, out};
  mnl_attr_parse_nested(nest, collect_attribute, &state);
  return finish_parse(state, "nest " + std::to_string(mnl_attr_get_type(nest)));
}

std::vector<const nlattr*> nested_entries(const nlattr* nest) {
  std::vector<const nlattr*> entries;
  // A lambda, not libmnl's for_each macros: they assign a void*, which C++ refuses.
  mnl_attr_parse_nested(
      nest,
      [](const nlattr* attr, void* data) {
        static_cast<std::vector<const nlattr*>*>(data)->push_back(attr);
        return MNL_CB_OK;
      },
      &entries);
  return entries;
}

std::string attribute_text(const nlattr* attr) {
  return attr == nullptr ? std::string() : std::string(attribute_string(attr));
}

std::string_view attribute_string(const nlattr* attr) {
  const auto* text = static_cast<const char*>(mnl_attr_get_payload(attr));
  return {text, strnlen(text, mnl_attr_get_payload_len(attr))};
}

}  // namespace rdmactl
