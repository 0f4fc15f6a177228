// SPDX-License-Identifier: Apache-2.0
// rdmactl's record of the firmware values it staged for the next boot, with the boot id they were
// staged under: the reboot-loop guard of the firmware-parameter reconcilers (link_type, nvconfig).
//
// A value that waits for the next boot while the firmware still runs the old one, and that rdmactl
// staged under another boot id than the current one, means the host was rebooted warm: a warm
// reboot does not load non-volatile firmware parameters, so staging again and rebooting again would
// loop forever; the reconciler reports an error asking for a power cycle instead.
//
// Each reconciler has its own file (link_type: /var/lib/rdmactl/link-type.json, nvconfig:
// /var/lib/rdmactl/nvconfig.json), so that neither rewrites records it does not own. The shape:
//   {"<pci>": {"<PARAM>": {"desired": <the value as the spec wrote it>, "bootId": "..."}}}
// A missing file is no record; an unreadable one is dropped with a warning: losing it only weakens
// the guard. observe and diff never write it; apply does, after a successful set.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/core/result.h"
#include "agent/platform/host_fs.h"

namespace rdmactl::reconcilers {

class BootStaging {
 public:
  // Reads `file` (under the root of `fs`, like every host file) and the current boot id.
  static BootStaging load(const HostFs& fs, std::string file);

  // The value rdmactl staged for `param` of `pci` during an earlier boot, if any.
  std::optional<nlohmann::json> staged_before_reboot(const std::string& pci, const std::string& param) const;

  // Records each (param, desired) of `pci` as staged during this boot and writes the file.
  Result<void> record(const HostFs& fs, const std::string& pci,
                      const std::vector<std::pair<std::string, nlohmann::json>>& staged);

 private:
  BootStaging(std::string file, nlohmann::json records, std::string boot_id)
      : file_(std::move(file)), records_(std::move(records)), boot_id_(std::move(boot_id)) {}

  std::string file_;
  nlohmann::json records_;
  std::string boot_id_;
};

}  // namespace rdmactl::reconcilers
