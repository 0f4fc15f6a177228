// SPDX-License-Identifier: Apache-2.0
// The peer test's wire format: the rdma_cm private data of the connect request and of the accept
// (peer.h has the layout), encoded and checked.
#include <cstring>

#include "agent/selftest/peer.h"

namespace rdmactl {
namespace {

constexpr uint8_t kMagic[4] = {'R', 'D', 'C', 'T'};

void put_be(uint8_t* out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(value & 0xff);
    value >>= 8;
  }
}
uint64_t get_be(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | in[i];
  return value;
}

Result<void> check_header(std::span<const uint8_t> data, size_t need, const char* what) {
  if (data.size() < need) {
    return make_error(ErrorKind::kPlatform, std::string(what) + " private data is " + std::to_string(data.size()) +
                                                " bytes, expected at least " + std::to_string(need));
  }
  if (std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) {
    return make_error(ErrorKind::kPlatform, std::string(what) + " private data is not rdmactl's (no \"RDCT\" mark)");
  }
  if (data[4] != kPeerProtocolVersion) {
    return make_error(ErrorKind::kNotSupported, std::string(what) + " uses rdmactl peer protocol version " +
                                                    std::to_string(data[4]) + ", this rdmactl speaks " +
                                                    std::to_string(kPeerProtocolVersion));
  }
  return ok();
}

}  // namespace

std::array<uint8_t, kPeerConnectDataSize> encode_connect_data() {
  return {kMagic[0], kMagic[1], kMagic[2], kMagic[3], kPeerProtocolVersion};
}

Result<uint8_t> decode_connect_data(std::span<const uint8_t> data) {
  if (auto checked = check_header(data, kPeerConnectDataSize, "the connect request's"); !checked) return checked.error();
  return data[4];
}

std::array<uint8_t, kPeerAcceptDataSize> encode_accept_data(const PeerBufferGrant& grant) {
  std::array<uint8_t, kPeerAcceptDataSize> out{};
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[4] = kPeerProtocolVersion;
  put_be(out.data() + 8, grant.address, 8);
  put_be(out.data() + 16, grant.rkey, 4);
  put_be(out.data() + 20, grant.length, 4);
  return out;
}

Result<PeerBufferGrant> decode_accept_data(std::span<const uint8_t> data) {
  if (auto checked = check_header(data, kPeerAcceptDataSize, "the accept's"); !checked) return checked.error();
  PeerBufferGrant grant;
  grant.address = get_be(data.data() + 8, 8);
  grant.rkey = static_cast<uint32_t>(get_be(data.data() + 16, 4));
  grant.length = static_cast<uint32_t>(get_be(data.data() + 20, 4));
  return grant;
}

}  // namespace rdmactl
