// SPDX-License-Identifier: Apache-2.0
// Platform: the host handles that reconcilers share during one reconcile.
//
// It owns the file root (HostFs) and the rtnetlink socket, and caches the link and address dumps
// for one observe pass, so that every reconciler reading netdevs costs one dump in all, not one
// each; the engine's snapshot before apply is made from the same dumps. The RDMA device inventory
// is cached the same way. begin_observe() drops the cache before the next pass (verify observes
// again).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/result.h"
#include "agent/platform/devlink.h"
#include "agent/platform/ethtool_netlink.h"
#include "agent/platform/host_fs.h"
#include "agent/platform/mnl.h"
#include "agent/platform/netlink.h"
#include "agent/state/change.h"
#include "agent/state/state.h"

namespace rdmactl {

struct Snapshot;

class Platform {
 public:
  explicit Platform(HostFs fs) : fs_(std::move(fs)) {}

  const HostFs& fs() const { return fs_; }
  // The rtnetlink socket, opened on first use (in the netns the process is in).
  Result<RouteSocket*> route();
  // This pass's RTM_GETLINK / RTM_GETADDR dumps, made on first use.
  Result<const std::vector<LinkInfo>*> links();
  Result<const std::vector<AddressInfo>*> addresses();
  // The NETLINK_ROUTE libmnl socket DCB requests go through, opened on first use.
  Result<MnlSocket*> dcb_socket();
  // Tests put a socket connected to a fake DCB kernel here before the first use.
  void set_dcb_socket(MnlSocket socket) { dcb_socket_.emplace(std::move(socket)); }
  // The devlink (generic netlink) client, opened on first use. Under a fixture root (--root other
  // than /) devlink is not asked: its devices are the kernel's, not the fixture's (kNotSupported),
  // unless a test put a client over a fake kernel here first.
  Result<Devlink*> devlink();
  void set_devlink(Devlink devlink) { devlink_.emplace(std::move(devlink)); }
  // The ethtool (generic netlink) client, opened on first use in the netns the process is in.
  // Under a fixture root it is not asked either (kNotSupported), unless a test put one here.
  Result<EthtoolNetlink*> ethtool();
  void set_ethtool(EthtoolNetlink ethtool) { ethtool_.emplace(std::move(ethtool)); }
  // This pass's RDMA devices (RDMA netlink + sysfs), read on first use.
  Result<const std::vector<DeviceState>*> rdma_devices();
  // Forget the dumps: the next links()/addresses() asks the kernel again.
  void begin_observe();

  // Progress of a long write (a firmware burn takes minutes): logged, and told to the hook (the
  // audit log) when one is set.
  using ProgressHook = std::function<void(const Change& change, const std::string& message)>;
  void set_progress_hook(ProgressHook hook) { progress_hook_ = std::move(hook); }
  void progress(const Change& change, const std::string& message) const;

  // The signal that asked this run to stop (SIGTERM, SIGINT, SIGHUP; 0: none), for a reconciler
  // whose write has steps that must not start once it has (a firmware burn is not followed by a
  // reset). Set by the writer's session (agent/safety/session.h), null otherwise.
  void set_interrupt(const std::atomic<int>* signal) { interrupt_ = signal; }
  int interrupt_signal() const { return interrupt_ != nullptr ? interrupt_->load() : 0; }

  // How long a write may wait for a lock another run holds (a firmware operation on the same
  // adapter): the writer's --lock-timeout.
  void set_lock_timeout(std::chrono::milliseconds timeout) { lock_timeout_ = timeout; }
  std::chrono::milliseconds lock_timeout() const { return lock_timeout_; }
  // How long a firmware write waits for another run's burn or reset of its adapter to end:
  // lock_timeout() unless set. apply waits as long as a burn may take (an orphaned one is already
  // under way, and Ctrl-C ends the wait); serve its lock timeout, then its next trigger.
  void set_firmware_wait(std::chrono::milliseconds wait) { firmware_wait_ = wait; }
  std::chrono::milliseconds firmware_wait() const { return firmware_wait_.value_or(lock_timeout_); }

  // Set by serve (agent/daemon/live_host): it runs unattended, no person reads its plans before they
  // are applied, and its HTTP API listens on these addresses (the --listen host; a wildcard or
  // loopback address is none a netdev carries). The firmware reconciler does not take a disruptive
  // reset nobody read, nor takes down the netdev the API is reached through.
  void set_unattended(bool unattended) { unattended_ = unattended; }
  bool unattended() const { return unattended_; }
  void set_served_addresses(std::vector<std::string> addresses) { served_addresses_ = std::move(addresses); }
  const std::vector<std::string>& served_addresses() const { return served_addresses_; }

  // The snapshot the engine took before this apply's first write (or recovery loaded from a
  // journal), while it applies and rolls back; null otherwise. A reconciler's write back of an
  // observed value (a revert) restores its netdev from it: what its own write disturbed beyond the
  // field comes back too, without a snapshot of its own per write.
  const Snapshot* snapshot_before() const { return snapshot_before_; }
  void set_snapshot_before(const Snapshot* snapshot) { snapshot_before_ = snapshot; }

 private:
  HostFs fs_;
  std::optional<RouteSocket> route_;
  std::optional<MnlSocket> dcb_socket_;
  std::optional<Devlink> devlink_;
  std::optional<Error> devlink_error_;  // why Devlink::open failed, kept for the Platform's life
  std::optional<EthtoolNetlink> ethtool_;
  std::optional<Error> ethtool_error_;  // likewise for EthtoolNetlink::open
  std::optional<std::vector<LinkInfo>> links_;
  std::optional<std::vector<AddressInfo>> addresses_;
  std::optional<std::vector<DeviceState>> rdma_devices_;
  const Snapshot* snapshot_before_ = nullptr;
  ProgressHook progress_hook_;
  const std::atomic<int>* interrupt_ = nullptr;
  std::chrono::milliseconds lock_timeout_{std::chrono::seconds(120)};
  std::optional<std::chrono::milliseconds> firmware_wait_;
  bool unattended_ = false;
  std::vector<std::string> served_addresses_;
};

}  // namespace rdmactl
