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

// A generic netlink client of the kernel's (devlink, ethtool), opened on first use. Under a fixture
// root it is not asked: its devices are the kernel's, not the fixture's. A kernel without the
// family answers the same for every device: asked once a pass, the failure kept in `error`.
template <typename Client, typename Open>
Result<Client*> open_kernel_client(const HostFs& fs, std::optional<Client>& client, std::optional<Error>& error,
                                   const char* what, Open open) {
  if (!client) {
    if (fs.root() != "/") {
      return make_error(ErrorKind::kNotSupported, std::string(what) + " is not asked under --root " + fs.root() +
                                                      ": its devices are the kernel's, not the fixture's");
    }
    if (error) return *error;
    auto opened = open();
    if (!opened) {
      error = opened.error();
      return opened.error();
    }
    client.emplace(std::move(opened).value());
  }
  return &*client;
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
  return open_kernel_client(fs_, devlink_, devlink_error_, "devlink", [] { return Devlink::open(); });
}

Result<EthtoolNetlink*> Platform::ethtool() {
  return open_kernel_client(fs_, ethtool_, ethtool_error_, "ethtool netlink",
                            [] { return EthtoolNetlink::open(); });
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
