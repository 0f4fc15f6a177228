// SPDX-License-Identifier: Apache-2.0
// How a distribution packages OpenSM: which layout the host has, and where that layout takes the
// SM priority and port (a key of OpenSM's config file, or a shell variable the service sources).
#include "reconcilers/subnet_manager/subnet_manager_internal.h"

#include <optional>
#include <string>

namespace rdmactl::reconcilers::subnet_manager_detail {

namespace {

constexpr const char* kPriorityKey = "sm_priority";
constexpr const char* kGuidKey = "guid";

// Debian and Ubuntu (package opensm): opensm.service, a oneshot, starts opensm@<guid>.service
// (`opensm --guid %I`) for each port GUID of PORTS in /etc/default/opensm (ALL by default); OpenSM
// reads /etc/opensm/opensm.conf (the package ships none), and --guid overrides its guid line.
constexpr Layout kDebian{LayoutKind::kDebian, "debian", "opensm", "/etc/opensm/opensm.conf", "/etc/default/opensm"};
// RHEL, Fedora, Rocky (Fedora's opensm.spec, --with-opensm-conf-sub-dir=rdma): opensm.service runs
// /usr/libexec/opensm-launch; OpenSM reads /etc/rdma/opensm.conf; /etc/sysconfig/opensm's GUIDS and
// PRIORITY, where set, are what Red Hat's networking guide has admins edit instead.
constexpr Layout kRhel{LayoutKind::kRhel, "rhel", "opensm", "/etc/rdma/opensm.conf", "/etc/sysconfig/opensm"};
// MLNX_OFED / DOCA-OFED: the SysV script /etc/init.d/opensmd (a generated systemd unit), OpenSM
// reading /etc/opensm/opensm.conf.
constexpr Layout kDoca{LayoutKind::kDoca, "doca", "opensmd", "/etc/opensm/opensm.conf", nullptr};

std::string read_or_empty(const HostFs& fs, const std::string& path) {
  if (!fs.exists(path)) return {};
  auto text = fs.read_file(path);
  return text ? *text : std::string();
}

bool shell_var_set_nonempty(const HostFs& fs, const char* file, const char* key) {
  if (file == nullptr) return false;
  const auto value = shell_var_value(read_or_empty(fs, file), key);
  return value && !value->empty();
}

}  // namespace

// Which layout the host has, from the files its package installs (under --root).
std::optional<Layout> detect_layout(const HostFs& fs) {
  if (fs.exists("/etc/init.d/opensmd")) return kDoca;
  for (const char* path : {"/lib/systemd/system/opensm@.service", "/usr/lib/systemd/system/opensm@.service",
                           "/etc/default/opensm"}) {
    if (fs.exists(path)) return kDebian;
  }
  for (const char* path : {"/usr/libexec/opensm-launch", "/etc/sysconfig/opensm", "/etc/rdma/opensm.conf"}) {
    if (fs.exists(path)) return kRhel;
  }
  return std::nullopt;
}

Location priority_location(const HostFs& fs, const Layout& layout) {
  if (layout.kind == LayoutKind::kRhel && shell_var_set_nonempty(fs, layout.vars_file, "PRIORITY")) {
    return {layout.vars_file, "PRIORITY", true};
  }
  return {layout.config_file, kPriorityKey, false};
}

Location port_location(const HostFs& fs, const Layout& layout) {
  if (layout.kind == LayoutKind::kDebian) return {layout.vars_file, "PORTS", true};
  if (layout.kind == LayoutKind::kRhel && shell_var_set_nonempty(fs, layout.vars_file, "GUIDS")) {
    return {layout.vars_file, "GUIDS", true};
  }
  return {layout.config_file, kGuidKey, false};
}

std::optional<std::string> read_location(const HostFs& fs, const Location& at) {
  const std::string text = read_or_empty(fs, at.file);
  return at.shell ? shell_var_value(text, at.key) : opensm_conf_value(text, at.key);
}

std::string not_installed() {
  return "OpenSM is not installed: no opensm unit or init script (Debian, Ubuntu: apt install opensm; RHEL, "
         "Fedora: dnf install opensm; DOCA/MLNX-OFED: its opensm package)";
}

}  // namespace rdmactl::reconcilers::subnet_manager_detail
