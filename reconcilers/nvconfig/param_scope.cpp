// SPDX-License-Identifier: Apache-2.0
// Which firmware parameters are whose, and how far each reaches (param_scope.h).
#include "reconcilers/nvconfig/param_scope.h"

#include <algorithm>
#include <optional>
#include <array>
#include <string_view>

namespace rdmactl::reconcilers {
namespace {

// The parameters of mlxconfig_host.db whose TLV has class 3 (Per_Host_Per_Function), sorted:
// `sqlite3 mlxconfig_host.db "select distinct p.mlxconfig_name from params p join tlvs t on p.tlv_name
// = t.name where t.class = 3 and p.mlxconfig_name != '' order by 1"` (Mellanox/mstflint @b9d9e844).
constexpr std::array<std::string_view, 112> kNvPerFunction = {
    "ALLOW_RD_COUNTERS", "BOOT_DBG_LOG", "BOOT_DBG_LOG_ARP", "BOOT_DBG_LOG_DHCP", "BOOT_DBG_LOG_DHCP6",
    "BOOT_DBG_LOG_DRIVER_SETTINGS", "BOOT_DBG_LOG_DRV", "BOOT_DBG_LOG_IP", "BOOT_DBG_LOG_IPV6",
    "BOOT_DBG_LOG_NDP", "BOOT_DBG_LOG_NDRV", "BOOT_DBG_LOG_NDRV_CMD", "BOOT_DBG_LOG_NDRV_DEV",
    "BOOT_DBG_LOG_NDRV_PORT", "BOOT_DBG_LOG_NEIGHBOR", "BOOT_DBG_LOG_NETDEVICE", "BOOT_DBG_LOG_PXE_UNDI",
    "BOOT_DBG_LOG_ROMPREFIX", "BOOT_DBG_LOG_STATUS", "BOOT_DBG_LOG_STP", "BOOT_DBG_LOG_TCP", "BOOT_DBG_LOG_TCPIP",
    "BOOT_DBG_LOG_TFTP", "BOOT_DBG_LOG_UDP", "BOOT_DBG_LOG_URI", "BOOT_INTERRUPT_DIS", "BOOT_LACP_DIS",
    "BOOT_PKEY", "BOOT_RETRY_CNT1", "BOOT_UNDI_NETWORK_WAIT", "BOOT_VLAN", "BOOT_VLAN_EN", "ECPF_ESWITCH_MANAGER",
    "ECPF_PAGE_SUPPLIER", "IP_VER", "LEGACY_BOOT_PROTOCOL", "MKEY_BY_NAME_RANGE", "MULTI_PORT_VHCA_EN",
    "NVME_EMU_MNG_CLASS_CODE", "NVME_EMU_MNG_DEVICE_ID", "NVME_EMU_MNG_ENABLE", "NVME_EMU_MNG_MAX_QUEUE_DEPTH",
    "NVME_EMU_MNG_NUM_MSIX", "NVME_EMU_MNG_NUM_PF", "NVME_EMU_MNG_NUM_VF", "NVME_EMU_MNG_NUM_VF_MSIX",
    "NVME_EMU_MNG_REVISION_ID", "NVME_EMU_MNG_SUBS_ID", "NVME_EMU_MNG_SUBS_VENDOR_ID", "NVME_EMU_MNG_VENDOR_ID",
    "PCI_SWITCH_EMU_MNG_ENABLE", "PCI_SWITCH_EMU_MNG_NUM_PORT", "PCI_SWITCH_EMU_MNG_NUM_TLP_PORT",
    "PCI_WR_ORDERING", "PF_DEVICE_ID", "PF_DEVICE_ID_ENABLE", "PF_NUM_OF_VF", "PF_NUM_PF_MSIX", "PF_NUM_SAT_PF",
    "PF_NUM_VF_MSIX", "PF_SD_GROUP", "PF_SF_BAR_SIZE", "PF_TOTAL_SF", "PF_VF_BAR2_MODE", "PORT_OWNER",
    "RENEG_ON_CHANGE", "ROCE_CONTROL", "SILENT_MODE", "TRACER_ENABLE", "UEFI_DEBUG_LOG_BLKIO",
    "UEFI_DEBUG_LOG_BM", "UEFI_DEBUG_LOG_CACHE", "UEFI_DEBUG_LOG_DISPATCH", "UEFI_DEBUG_LOG_EVENTS",
    "UEFI_DEBUG_LOG_FS", "UEFI_DEBUG_LOG_GCD", "UEFI_DEBUG_LOG_INIT", "UEFI_DEBUG_LOG_LOAD",
    "UEFI_DEBUG_LOG_PAGE", "UEFI_DEBUG_LOG_POOL", "UEFI_DEBUG_LOG_SNI", "UEFI_DEBUG_LOG_UNDI", "UEFI_HII_EN",
    "UEFI_LOGS", "UEFI_LOG_MIN_SEVERITY", "UEFI_LOG_VERBOSE", "VIRTIO_BLK_EMU_MNG_ENABLE",
    "VIRTIO_BLK_EMU_MNG_NUM_MSIX", "VIRTIO_BLK_EMU_MNG_NUM_PF", "VIRTIO_BLK_EMU_MNG_NUM_VF",
    "VIRTIO_BLK_EMU_MNG_NUM_VF_MSIX", "VIRTIO_BLK_EMU_MNG_PF_PCI_LAYOUT", "VIRTIO_BLK_EMU_MNG_SUBS_ID",
    "VIRTIO_BLK_EMU_MNG_SUBS_VENDOR_ID", "VIRTIO_BLK_EMU_MNG_VF_PCI_LAYOUT", "VIRTIO_FS_EMU_MNG_ENABLE",
    "VIRTIO_FS_EMU_MNG_NUM_MSIX", "VIRTIO_FS_EMU_MNG_NUM_PF", "VIRTIO_FS_EMU_MNG_NUM_VF",
    "VIRTIO_FS_EMU_MNG_NUM_VF_MSIX", "VIRTIO_FS_EMU_MNG_SUBS_ID", "VIRTIO_FS_EMU_MNG_SUBS_VENDOR_ID",
    "VIRTIO_NET_EMU_MNG_ENABLE", "VIRTIO_NET_EMU_MNG_NUM_MSIX", "VIRTIO_NET_EMU_MNG_NUM_PF",
    "VIRTIO_NET_EMU_MNG_NUM_VF", "VIRTIO_NET_EMU_MNG_NUM_VF_MSIX", "VIRTIO_NET_EMU_MNG_PF_PCI_LAYOUT",
    "VIRTIO_NET_EMU_MNG_SUBS_ID", "VIRTIO_NET_EMU_MNG_SUBS_VENDOR_ID", "VIRTIO_NET_EMU_MNG_VF_PCI_LAYOUT",
    "WOL_MAGIC_EN"};

// The same for class 7 (Per_Host): nv_pci_conf, nv_host_priv_conf, nv_host_sw_accelerate_conf,
// safe_mode_conf.
constexpr std::array<std::string_view, 28> kNvPerHost = {
    "ADVANCED_PCI_SETTINGS", "ATS_ENABLED", "BAR_PAGE_ALIGNMENT", "DYNAMIC_VF_MSIX_TABLE",
    "EXP_ROM_NVME_UEFI_ARM_ENABLE", "EXP_ROM_NVME_UEFI_x86_ENABLE", "EXP_ROM_PXE_ENABLE",
    "EXP_ROM_UEFI_ARM_ENABLE", "EXP_ROM_UEFI_x86_ENABLE", "EXP_ROM_VIRTIO_BLK_UEFI_ARM_ENABLE",
    "EXP_ROM_VIRTIO_BLK_UEFI_x86_ENABLE", "EXP_ROM_VIRTIO_NET_PXE_ENABLE", "EXP_ROM_VIRTIO_NET_UEFI_ARM_ENABLE",
    "EXP_ROM_VIRTIO_NET_UEFI_x86_ENABLE", "FORCE_ETH_PCI_SUBCLASS", "HOST_DISABLE_PORT_COUNTER",
    "HOST_DISABLE_PORT_OWNER", "HOST_DISABLE_RSHIM", "HOST_DISABLE_TRACER_OWNER", "HOST_MKC_WRITE_SO",
    "HOST_PRIV_LEVEL", "IBM_AS_NOTIFY_EN", "IBM_CAPI_EN", "IBM_TUNNELED_ATOMIC_EN", "MANAGEMENT_PF_MODE",
    "P2P_ORDERING_MODE", "SAFE_MODE_ENABLE", "SAFE_MODE_THRESHOLD"};

// The parameters mstconfig lists only while another one, their enabler, is 1 (True) for the next
// boot: `select mlxconfig_name, dependency from params where dependency like '%_conf%'` (Mellanox/
// mstflint @b9d9e844), those whose dependency on a configuration TLV is one "enabler == 1" or
// "enabler != 0" (the rest of each is the firmware's capability, "..._supported"). Dependencies on a
// configuration value being 0, or on several (ROCE_CC_STEERING_EXT, USER_PROGRAMMABLE_CC,
// MULTIPATH_DSCP), are not in it: those parameters are refused as not listed.
struct NvEnabled {
  std::string_view param;
  std::string_view enabler;
  std::string_view one = "True";  // the enabler's value 1, by name
};
constexpr std::array<NvEnabled, 13> kNvEnabled = {{
    {"DISABLE_SLOT_POWER_LIMITER", "ADVANCED_POWER_SETTINGS"},      // $nv_power_conf.advanced_power_settings_en==1
    {"FORCE_ETH_PCI_SUBCLASS", "ADVANCED_PCI_SETTINGS"},            // $nv_pci_conf.advanced_pci_settings!=0
    {"IBM_CAPI_EN", "ADVANCED_PCI_SETTINGS"},                       // $nv_pci_conf.advanced_pci_settings!=0
    {"INTERNAL_CPU_ESWITCH_MANAGER", "INTERNAL_CPU_MODEL", "EMBEDDED_CPU"},  // internal_cpu_model==1
    {"INTERNAL_CPU_IB_VPORT0", "INTERNAL_CPU_MODEL", "EMBEDDED_CPU"},        // (EMBEDDED_CPU=0x1)
    {"INTERNAL_CPU_OFFLOAD_ENGINE", "INTERNAL_CPU_MODEL", "EMBEDDED_CPU"},
    {"INTERNAL_CPU_PAGE_SUPPLIER", "INTERNAL_CPU_MODEL", "EMBEDDED_CPU"},
    {"IP_OVER_VXLAN_PORT", "IP_OVER_VXLAN_EN"},                     // $nv_sw_offload_conf.ip_over_vxlan_en!=0
    {"MAX_ACC_OUT_READ", "ADVANCED_PCI_SETTINGS"},                  // $nv_pci_conf.advanced_pci_settings!=0
    {"PF_NUM_OF_VF", "PF_NUM_OF_VF_VALID"},                         // $nv_global_pci_conf.per_pf_total_vf == 1
    {"PF_NUM_SAT_PF", "INTERNAL_CPU_MODEL", "EMBEDDED_CPU"},        // $nv_internal_cpu_conf.internal_cpu_model==1
    {"PHY_RATE_MASK", "PHY_RATE_MASK_OVERRIDE"},                    // $nv_link_phy_conf.phy_rate_mask_override==1
    {"SAFE_MODE_THRESHOLD", "SAFE_MODE_ENABLE"},                    // $safe_mode_conf.safe_mode_enable == 1
}};

// The name without an array index: "PCI_DOWNSTREAM_PORT_OWNER[4]" -> "PCI_DOWNSTREAM_PORT_OWNER".
std::string_view nv_base_name(const std::string& param) {
  return std::string_view(param).substr(0, param.find('['));
}

}  // namespace

ParamScope nvconfig_scope(const std::string& param) {
  const std::string_view base = nv_base_name(param);
  const size_t p = base.rfind("_P");
  if (p != std::string_view::npos && is_port_parameter(base, base.substr(0, p))) return ParamScope::kPort;
  if (std::binary_search(kNvPerFunction.begin(), kNvPerFunction.end(), base)) return ParamScope::kFunction;
  if (std::binary_search(kNvPerHost.begin(), kNvPerHost.end(), base)) return ParamScope::kHost;
  return ParamScope::kDevice;
}

std::optional<NvEnabler> nvconfig_enabler(const std::string& param) {
  // A Physical_Port parameter's enabler is of the same port: GenericCommander::checkDependency finds
  // the dependency's TLV with the parameter's own port (getDependencyTLVByName(name, cTLV->_port, ...)).
  std::string_view base = nv_base_name(param);
  std::string_view port;
  if (nvconfig_scope(param) == ParamScope::kPort) {
    port = base.substr(base.rfind("_P"));
    base = base.substr(0, base.rfind("_P"));
  }
  for (const NvEnabled& e : kNvEnabled) {
    if (e.param == base) return NvEnabler{std::string(e.enabler) + std::string(port), std::string(e.one)};
  }
  return std::nullopt;
}

}  // namespace rdmactl::reconcilers
