// SPDX-License-Identifier: Apache-2.0
// A netlink peer for message-level tests of MnlSocket users (RDMA nldev, DCB): it records each
// request and answers with the datagrams a script returns, as the kernel would.
#pragma once

#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agent/platform/mnl.h"

namespace rdmactl::test {

using Bytes = std::vector<uint8_t>;

class ScriptedKernel final : public NetlinkTransport {
 public:
  using Script = std::function<std::vector<Bytes>(const nlmsghdr* request)>;
  ScriptedKernel(Script script, uint32_t port_id) : script_(std::move(script)), port_id_(port_id) {}

  uint32_t port_id() const override { return port_id_; }

  Result<void> send(std::span<const uint8_t> datagram) override {
    requests.emplace_back(datagram.begin(), datagram.end());
    for (Bytes& reply : script_(reinterpret_cast<const nlmsghdr*>(requests.back().data()))) {
      pending.push_back(std::move(reply));
    }
    return ok();
  }

  Result<size_t> receive(std::span<uint8_t> buffer) override {
    if (pending.empty()) return make_error(ErrorKind::kTimeout, "no reply queued", {}, EAGAIN);
    Bytes next = std::move(pending.front());
    pending.pop_front();
    if (next.size() > buffer.size()) return make_errno_error("reply too large", ENOSPC);
    std::memcpy(buffer.data(), next.data(), next.size());
    return next.size();
  }

  std::vector<Bytes> requests;
  std::deque<Bytes> pending;  // datagrams not read yet; tests may queue stale ones up front

 private:
  Script script_;
  uint32_t port_id_;
};

}  // namespace rdmactl::test
