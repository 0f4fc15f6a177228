// SPDX-License-Identifier: Apache-2.0
// Platform: lazily opened rtnetlink socket and per-pass dump cache.
#include "agent/engine/platform.h"

#include <linux/netlink.h>

#include <spdlog/spdlog.h>

#include "agent/platform/rdma_inventory.h"

namespace rdmactl {
namespace {

// One of this pass's dumps: made through `platform`'s rtnetlink socket on first use, then kept in `cache`.
template <typename T, typename Dump>
Result<const std::vector<T>*> cached_dump(Platform& platform, std::optional<std::vector<T>>& cache, Dump dump) {
  if (!cache) {
    auto socket = platform.route();
    if (!socket) return socket.error();
    auto made = dump(**socket);
    if (!made) return made.error();
    cache = std::move(made).value();
  }
  return &*cache;
}

}  // namespace

Result<RouteSocket*> Platform::route() {
  if (!route_) {
    auto socket = RouteSocket::open();
    if (!socket) return socket.error();
    route_.emplace(std::move(socket).value());
  }
  return &*route_;
}

Result<MnlSocket*> Platform::dcb_socket() {
  if (!dcb_socket_) {
    auto socket = MnlSocket::open(NETLINK_ROUTE);
    if (!socket) return socket.error();
    dcb_socket_.emplace(std::move(socket).value());
  }
  return &*dcb_socket_;
}

Result<Devlink*> Platform::devlink() {
  if (!devlink_) {
    if (fs_.root() != "/") {
      return make_error(ErrorKind::kNotSupported, "devlink is not asked under --root " + fs_.root() +
                                                      ": its devices are the kernel's, not the fixture's");
    }
    // A kernel without devlink answers the same for every device: asked once a pass, not once
    // per PCI function.
    if (devlink_error_) return *devlink_error_;
    auto devlink = Devlink::open();
    if (!devlink) {
      devlink_error_ = devlink.error();
      return devlink.error();
    }
    devlink_.emplace(std::move(devlink).value());
  }
  return &*devlink_;
}

Result<EthtoolNetlink*> Platform::ethtool() {
  if (!ethtool_) {
    if (fs_.root() != "/") {
      return make_error(ErrorKind::kNotSupported, "ethtool netlink is not asked under --root " + fs_.root() +
                                                      ": its netdevs are the kernel's, not the fixture's");
    }
    if (ethtool_error_) return *ethtool_error_;
    auto ethtool = EthtoolNetlink::open();
    if (!ethtool) {
      ethtool_error_ = ethtool.error();
      return ethtool.error();
    }
    ethtool_.emplace(std::move(ethtool).value());
  }
  return &*ethtool_;
}

Result<const std::vector<LinkInfo>*> Platform::links() {
  return cached_dump(*this, links_, [](RouteSocket& socket) { return socket.dump_links(); });
}

Result<const std::vector<AddressInfo>*> Platform::addresses() {
  return cached_dump(*this, addresses_, [](RouteSocket& socket) { return socket.dump_addresses(); });
}

Result<const std::vector<DeviceState>*> Platform::rdma_devices() {
  if (!rdma_devices_) {
    auto devices = observe_rdma_devices(fs_);
    if (!devices) return devices.error();
    rdma_devices_ = std::move(devices).value();
  }
  return &*rdma_devices_;
}

void Platform::progress(const Change& change, const std::string& message) const {
  spdlog::info("{} {}: {}", change.resource, change.field, message);
  if (progress_hook_) progress_hook_(change, message);
}

void Platform::begin_observe() {
  links_.reset();
  addresses_.reset();
  rdma_devices_.reset();
}

}  // namespace rdmactl
