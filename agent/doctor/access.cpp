// SPDX-License-Identifier: Apache-2.0
// The doctor's locked memory and device access checks, over HostState::access
// (agent/platform/rdma_access.h). Every ibv_reg_mr pins its pages and counts them against the
// process's RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK (drivers/infiniband/core/umem.c ib_umem_get:
// -ENOMEM past it): MPI's "cannot register memory" and NCCL's fallback to sockets. The threshold is
// unlimited, as Open MPI's FAQ (openfabrics, "How can a system administrator (or user) change
// locked memory limits?") and NVIDIA's container guides (`--ulimit memlock=-1`) set it: an RDMA job
// registers its buffers, and a GPU job its GPU memory, so any finite limit is a job size that
// fails; Open MPI's list shows osu_bibw hanging at 128 MiB. The kernel's default is 8 MiB since
// Linux 5.16 (include/uapi/linux/resource.h MLOCK_LIMIT), 64 KiB before. GPU memory registered
// through dma-buf (umem_dmabuf.c ib_umem_dmabuf_get) is not counted; ib_umem_get's pages are.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "agent/doctor/doctor_internal.h"

namespace rdmactl::doctor_detail {
namespace {

// pam_limits' and systemd's words for no limit (pam_limits.c process_limit: "unlimited",
// "infinity", -1, case-insensitive; systemd: "infinity", or soft:hard both "infinity").
bool unlimited(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (value == "infinity:infinity") return true;
  return value == "unlimited" || value == "infinity" || value == "-1";
}

// A pam_limits value in KiB, as text for a message: "65536 KiB".
std::string kib_text(const std::string& value) { return unlimited(value) ? value : value + " KiB"; }

std::string where(const nlohmann::json& entry) {
  return entry.value("file", "") + ":" + std::to_string(entry.value("line", 0));
}

constexpr const char* kLimitsFix =
    "allow RDMA users to lock all the memory they register: `* soft memlock unlimited` and `* hard memlock "
    "unlimited` in /etc/security/limits.d/rdma.conf (or for their group, `@rdma`), then log in again; a job "
    "started by a service gets the service's limit (LimitMEMLOCK=infinity in its unit)";

}  // namespace

void Doctor::check_memlock() {
  if (!state_.access || !state_.access->is_object()) return;
  const nlohmann::json memlock = state_.access->value("memlock", nlohmann::json::object());
  // pam_limits (linux-pam modules/pam_limits/pam_limits.c): limits.conf, then limits.d in name
  // order; for one domain and type the later line wins ("-" sets both). The wildcard is what every
  // user without an entry of their own gets. A limit the files leave unset keeps what the session
  // inherits (init_limits: getrlimit of the login service, sshd's), and a soft limit above the hard
  // one is cut to it (setup_limits): only both set to unlimited makes a session unlimited.
  std::string soft, hard;
  nlohmann::json soft_at, hard_at;
  std::vector<std::string> others;
  for (const nlohmann::json& e : memlock.value("limits", nlohmann::json::array())) {
    const std::string domain = e.value("domain", ""), type = e.value("type", ""), value = e.value("value", "");
    if (domain != "*") {
      others.push_back(domain + " " + kib_text(value) + " (" + where(e) + ")");
      continue;
    }
    if (type == "soft" || type == "-") soft = value, soft_at = e;
    if (type == "hard" || type == "-") hard = value, hard_at = e;
  }
  const std::string also = others.empty() ? "" : "; entries of their own: " + others.front() +
                                                     (others.size() > 1 ? ", ..." : "");
  const std::string inherited = "what the login service (sshd) has: 8 MiB by default on Linux 5.16 and later, "
                                "64 KiB before";
  std::string problem;
  if (soft.empty() && hard.empty()) {
    problem = "no memlock limit for all users in /etc/security/limits.conf or limits.d: login sessions (ssh, and so "
              "mpirun's remote ranks) keep " + inherited;
  } else if (!soft.empty() && !unlimited(soft)) {
    problem = "the soft memlock limit of all users is " + kib_text(soft) + " (" + where(soft_at) + ")";
  } else if (!hard.empty() && !unlimited(hard)) {
    problem = "the hard memlock limit of all users is " + kib_text(hard) + " (" + where(hard_at) +
              "), and the soft one is cut to it";
  } else if (hard.empty()) {
    problem = "the soft memlock limit of all users is unlimited (" + where(soft_at) +
              ") but no hard one is set: pam_limits cuts the soft limit to the inherited hard one, " + inherited;
  } else if (soft.empty()) {
    problem = "the hard memlock limit of all users is unlimited (" + where(hard_at) +
              ") but no soft one is set: sessions keep the inherited soft limit, " + inherited;
  }
  if (!problem.empty()) {
    add("memlock", "warning", "host/pam_limits",
        problem + ": ibv_reg_mr fails with ENOMEM past it unless the process has CAP_IPC_LOCK" + also, kLimitsFix);
  }
  // systemd's default for services. Unset, services get systemd's DEFAULT_RLIMIT_MEMLOCK (8 MiB,
  // since v251) or before v251 the kernel's default: units that start RDMA jobs set their own
  // (Slurm's slurmd.service sets LimitMEMLOCK=infinity), so that is a note; a finite value set
  // here is a site's cap on every unit that does not, a finding.
  const nlohmann::json systemd = memlock.value("systemd", nlohmann::json::object());
  const std::string value = systemd.value("value", "");
  if (value.empty()) {
    report_.notes.push_back({"host", "systemd's DefaultLimitMEMLOCK is not set: services get 8 MiB of locked memory "
                                     "(64 KiB with systemd before 251 on a kernel before 5.16) unless their unit sets "
                                     "LimitMEMLOCK= (Slurm's slurmd.service sets infinity; a container runtime's unit "
                                     "may not)"});
  } else if (!unlimited(value)) {
    add("memlock", "warning", "host/systemd",
        "systemd's DefaultLimitMEMLOCK is " + value + " (" + where(systemd) +
            "): every service without a LimitMEMLOCK= of its own, and the jobs and containers it starts, can "
            "register at most that much memory",
        "set DefaultLimitMEMLOCK=infinity in /etc/systemd/system.conf.d/rdma.conf and run `systemctl "
        "daemon-reexec`, or LimitMEMLOCK=infinity in the units that start RDMA jobs (slurmd, the container runtime)");
  }
}

void Doctor::check_device_access() {
  if (!state_.access || !state_.access->is_object() || state_.devices.empty()) return;
  const nlohmann::json devices = state_.access->value("devices", nlohmann::json::array());
  bool any_uverbs = false;
  for (const nlohmann::json& f : devices) {
    const std::string path = f.value("path", "");
    const bool cm = path.ends_with("/rdma_cm");
    any_uverbs = any_uverbs || !cm;
    if (f.value("missing", false)) {
      if (cm) {
        add("device-access", "warning", "host/rdma_cm",
            "/dev/infiniband/rdma_cm is missing (rdma_ucm not loaded): applications that connect through rdma_cm "
            "(perftest -R, MPI over UCX's rdmacm, NVMe-oF, iSER) fail",
            "load it: `modprobe rdma_ucm` (rdma-core's /etc/rdma/modules/rdma.conf lists it for "
            "rdma-load-modules@rdma.service)");
      } else {
        add("device-access", "error", "rdma/" + f.value("ibdev", path),
            path + " is missing: verbs applications cannot open " + f.value("ibdev", std::string("the device")),
            "check udev and devtmpfs (`udevadm trigger -s infiniband_verbs`)");
      }
      continue;
    }
    const std::string mode = f.value("mode", "");
    // Others read and write: 0666 as the kernel makes them; a narrower mode is a udev rule's.
    if (mode.size() == 4 && mode.back() != '6' && mode.back() != '7') {
      add("device-access", "warning", cm ? "host/rdma_cm" : "rdma/" + f.value("ibdev", path),
          path + " is mode " + mode + " (group " + f.value("group", "?") + "), not 0666 as the kernel creates it: "
              "users outside that group cannot use RDMA (ibv_open_device fails with EACCES)",
          "add the users to group " + f.value("group", "?") + ", or find the udev rule that sets the mode "
          "(`grep -r infiniband /etc/udev/rules.d`) if it is not meant");
    }
  }
  if (!any_uverbs) {
    add("device-access", "error", "host/uverbs",
        "no /dev/infiniband/uverbs* device (ib_uverbs not loaded): `ibv_devices` lists nothing and verbs "
        "applications see no RDMA device, though the kernel has " + std::to_string(state_.devices.size()),
        "load it: `modprobe ib_uverbs` (rdma-core's /etc/rdma/modules/rdma.conf lists it for "
        "rdma-load-modules@rdma.service)");
  }
  const std::string netns = state_.access->value("netnsMode", "");
  if (netns == "shared") {
    report_.notes.push_back({"host", "RDMA netns mode is shared (`rdma system show netns`): every network namespace, "
                                     "and so every container, sees every RDMA device; `rdma system set netns exclusive` "
                                     "gives each namespace only the devices moved into it"});
  } else if (netns == "exclusive") {
    report_.notes.push_back({"host", "RDMA netns mode is exclusive: a container sees an RDMA device only once it is "
                                     "moved into its namespace (`rdma dev set <dev> netns <ns>`, as the RDMA CNI does)"});
  }
}

}  // namespace rdmactl::doctor_detail
