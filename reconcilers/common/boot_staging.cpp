// SPDX-License-Identifier: Apache-2.0
// The staging record of the reboot-loop guard (boot_staging.h).
#include "reconcilers/common/boot_staging.h"

#include <spdlog/spdlog.h>

#include "agent/core/json_text.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kStagingBootIdFile = "/proc/sys/kernel/random/boot_id";

}  // namespace

BootStaging BootStaging::load(const HostFs& fs, std::string file) {
  auto id = fs.read(kStagingBootIdFile);
  std::string boot_id = id ? *id : std::string();
  if (!fs.exists(file)) return BootStaging(std::move(file), nlohmann::json::object(), std::move(boot_id));
  auto text = fs.read(file);
  nlohmann::json records = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!records.is_object()) {
    spdlog::warn("{}: not a JSON object, ignoring it (it only records values rdmactl staged)", file);
    records = nlohmann::json::object();
  }
  return BootStaging(std::move(file), std::move(records), std::move(boot_id));
}

std::optional<nlohmann::json> BootStaging::staged_before_reboot(const std::string& pci,
                                                                const std::string& param) const {
  if (boot_id_.empty() || !records_.contains(pci) || !records_[pci].is_object()) return std::nullopt;
  const nlohmann::json& function = records_[pci];
  if (!function.contains(param) || !function[param].is_object()) return std::nullopt;
  const nlohmann::json& record = function[param];
  const std::string staged_boot = record.value("bootId", "");
  if (staged_boot.empty() || staged_boot == boot_id_ || !record.contains("desired")) return std::nullopt;
  return record["desired"];
}

Result<void> BootStaging::record(const HostFs& fs, const std::string& pci,
                                 const std::vector<std::pair<std::string, nlohmann::json>>& staged) {
  if (!records_[pci].is_object()) records_[pci] = nlohmann::json::object();
  for (const auto& [param, desired] : staged) records_[pci][param] = {{"desired", desired}, {"bootId", boot_id_}};
  return fs.replace_file(file_, json_text(records_, 2) + "\n");
}

}  // namespace rdmactl::reconcilers
