// SPDX-License-Identifier: Apache-2.0
// RDMA inventory: device names from RDMA netlink where the kernel has it, details from sysfs.
#include "agent/platform/rdma_inventory.h"

#include <spdlog/spdlog.h>

#include "agent/platform/rdma_netlink.h"
#include "agent/platform/rdma_sysfs.h"

namespace rdmactl {

Result<std::vector<DeviceState>> observe_rdma_devices(const HostFs& fs) {
  if (!fs.exists("/sys/class/infiniband")) return std::vector<DeviceState>{};
  if (fs.root() != "/") return read_rdma_devices(fs);
  // On a live host the kernel's own list decides which devices exist (sysfs may still show a
  // device that is being removed); sysfs then gives every attribute.
  auto names = rdma_device_names();
  if (!names) {
    spdlog::debug("RDMA netlink unavailable ({}); listing /sys/class/infiniband", names.error().to_string());
    return read_rdma_devices(fs);
  }
  std::string listed;
  for (const std::string& name : *names) listed += (listed.empty() ? "" : " ") + name;
  spdlog::debug("RDMA netlink lists {} device(s): {}", names->size(), listed);
  return read_rdma_devices(fs, &*names);
}

}  // namespace rdmactl
