// SPDX-License-Identifier: Apache-2.0
// The RDMA devices of the host: the list from RDMA netlink (RDMA_NLDEV) on a live host, every
// detail from sysfs. Under a fixture root (--root other than /) the list comes from sysfs too.
#pragma once

#include <vector>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"
#include "agent/state/state.h"

namespace rdmactl {

// No RDMA device (no /sys/class/infiniband, or an empty one) is an empty list, not an error.
Result<std::vector<DeviceState>> observe_rdma_devices(const HostFs& fs);

}  // namespace rdmactl
