// SPDX-License-Identifier: Apache-2.0
// What decides whether a user's process can use RDMA at all, for `doctor`: how much memory it may
// lock (every ibv_reg_mr pins its pages and counts them against RLIMIT_MEMLOCK unless the process
// has CAP_IPC_LOCK: drivers/infiniband/core/umem.c ib_umem_get, -ENOMEM beyond it), and the device
// files verbs and rdma_cm applications open. Read through HostFs (a fixture tree is a host).
// Sources:
//   - pam_limits' files, /etc/security/limits.conf then /etc/security/limits.d/*.conf in name order
//     (limits.conf(5): "<domain> <type> <item> <value>", memlock in KiB, "unlimited"/"infinity"/-1);
//     what login sessions (ssh, and so mpirun's remote launches) get;
//   - systemd's DefaultLimitMEMLOCK= in /etc/systemd/system.conf and the system.conf.d drop-ins
//     (systemd-system.conf(5): /etc, /run, /usr/local/lib, /usr/lib; a later file name wins, and a
//     name in /etc masks the same name elsewhere): what services get unless their unit sets
//     LimitMEMLOCK= (Slurm's slurmd.service sets infinity);
//   - /dev/infiniband/uverbs<N> (drivers/infiniband/core/uverbs_main.c: uverbs_devnode, mode 0666)
//     with /sys/class/infiniband_verbs/uverbs<N>/ibdev naming its device, and
//     /dev/infiniband/rdma_cm (ucma.c: ucma_misc, mode 0666); a udev rule may narrow either.
#pragma once

#include <string>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"
#include "agent/state/state.h"

namespace rdmactl {

// Fills HostState::access: {"memlock": {"limits": [{"file", "line", "domain", "type", "value"}],
// "systemd": {"value", "file", "line"} or {}}, "devices": [{"path", "ibdev"?, "mode": "0666",
// "group": "rdma"}]}.
void observe_access(const HostFs& fs, HostState& state);

// The RDMA subsystem's network namespace mode through RDMA netlink (RDMA_NLDEV_CMD_SYS_GET,
// RDMA_NLDEV_SYS_ATTR_NETNS_MODE: 1 shared, 0 exclusive; drivers/infiniband/core/nldev.c
// nldev_sys_get_doit), as `rdma system show netns` prints it: "shared" or "exclusive".
// kNotSupported on a kernel without RDMA netlink.
Result<std::string> read_rdma_netns_mode();
// The reply's parse, for tests: the mode of a RDMA_NLDEV_CMD_SYS_GET reply.
Result<std::string> parse_sys_get_netns_mode(const struct nlmsghdr* message);

}  // namespace rdmactl
