// SPDX-License-Identifier: Apache-2.0
// Which firmware parameters are whose, and how far each reaches (param_scope.h).
#include "reconcilers/nvconfig/param_scope.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace rdmactl::reconcilers {
namespace {

// The parameters of mlxconfig_host.db whose TLV has class 3 (Per_Host_Per_Function) or 7 (Per_Host),
// sorted: `sqlite3 mlxconfig_host.db "select distinct p.mlxconfig_name from params p join tlvs t on
// p.tlv_name = t.name where t.class in (3, 7) and p.mlxconfig_name != '' order by 1"` (Mellanox/mstflint
// @b9d9e844).
constexpr std::array<std::string_view, 140> kNvPerFunction = {
    "ADVANCED_PCI_SETTINGS", "ALLOW_RD_COUNTERS", "ATS_ENABLED", "BAR_PAGE_ALIGNMENT", "BOOT_DBG_LOG",
    "BOOT_DBG_LOG_ARP", "BOOT_DBG_LOG_DHCP", "BOOT_DBG_LOG_DHCP6", "BOOT_DBG_LOG_DRIVER_SETTINGS",
    "BOOT_DBG_LOG_DRV", "BOOT_DBG_LOG_IP", "BOOT_DBG_LOG_IPV6", "BOOT_DBG_LOG_NDP", "BOOT_DBG_LOG_NDRV",
    "BOOT_DBG_LOG_NDRV_CMD", "BOOT_DBG_LOG_NDRV_DEV", "BOOT_DBG_LOG_NDRV_PORT", "BOOT_DBG_LOG_NEIGHBOR",
    "BOOT_DBG_LOG_NETDEVICE", "BOOT_DBG_LOG_PXE_UNDI", "BOOT_DBG_LOG_ROMPREFIX", "BOOT_DBG_LOG_STATUS",
    "BOOT_DBG_LOG_STP", "BOOT_DBG_LOG_TCP", "BOOT_DBG_LOG_TCPIP", "BOOT_DBG_LOG_TFTP", "BOOT_DBG_LOG_UDP",
    "BOOT_DBG_LOG_URI", "BOOT_INTERRUPT_DIS", "BOOT_LACP_DIS", "BOOT_PKEY", "BOOT_RETRY_CNT1",
    "BOOT_UNDI_NETWORK_WAIT", "BOOT_VLAN", "BOOT_VLAN_EN", "DYNAMIC_VF_MSIX_TABLE", "ECPF_ESWITCH_MANAGER",
    "ECPF_PAGE_SUPPLIER", "EXP_ROM_NVME_UEFI_ARM_ENABLE", "EXP_ROM_NVME_UEFI_x86_ENABLE", "EXP_ROM_PXE_ENABLE",
    "EXP_ROM_UEFI_ARM_ENABLE", "EXP_ROM_UEFI_x86_ENABLE", "EXP_ROM_VIRTIO_BLK_UEFI_ARM_ENABLE",
    "EXP_ROM_VIRTIO_BLK_UEFI_x86_ENABLE", "EXP_ROM_VIRTIO_NET_PXE_ENABLE", "EXP_ROM_VIRTIO_NET_UEFI_ARM_ENABLE",
    "EXP_ROM_VIRTIO_NET_UEFI_x86_ENABLE", "FORCE_ETH_PCI_SUBCLASS", "HOST_DISABLE_PORT_COUNTER",
    "HOST_DISABLE_PORT_OWNER", "HOST_DISABLE_RSHIM", "HOST_DISABLE_TRACER_OWNER", "HOST_MKC_WRITE_SO",
    "HOST_PRIV_LEVEL", "IBM_AS_NOTIFY_EN", "IBM_CAPI_EN", "IBM_TUNNELED_ATOMIC_EN", "IP_VER",
    "LEGACY_BOOT_PROTOCOL", "MANAGEMENT_PF_MODE", "MKEY_BY_NAME_RANGE", "MULTI_PORT_VHCA_EN",
    "NVME_EMU_MNG_CLASS_CODE", "NVME_EMU_MNG_DEVICE_ID", "NVME_EMU_MNG_ENABLE", "NVME_EMU_MNG_MAX_QUEUE_DEPTH",
    "NVME_EMU_MNG_NUM_MSIX", "NVME_EMU_MNG_NUM_PF", "NVME_EMU_MNG_NUM_VF", "NVME_EMU_MNG_NUM_VF_MSIX",
    "NVME_EMU_MNG_REVISION_ID", "NVME_EMU_MNG_SUBS_ID", "NVME_EMU_MNG_SUBS_VENDOR_ID", "NVME_EMU_MNG_VENDOR_ID",
    "P2P_ORDERING_MODE", "PCI_SWITCH_EMU_MNG_ENABLE", "PCI_SWITCH_EMU_MNG_NUM_PORT",
    "PCI_SWITCH_EMU_MNG_NUM_TLP_PORT", "PCI_WR_ORDERING", "PF_DEVICE_ID", "PF_DEVICE_ID_ENABLE", "PF_NUM_OF_VF",
    "PF_NUM_PF_MSIX", "PF_NUM_SAT_PF", "PF_NUM_VF_MSIX", "PF_SD_GROUP", "PF_SF_BAR_SIZE", "PF_TOTAL_SF",
    "PF_VF_BAR2_MODE", "PORT_OWNER", "RENEG_ON_CHANGE", "ROCE_CONTROL", "SAFE_MODE_ENABLE", "SAFE_MODE_THRESHOLD",
    "SILENT_MODE", "TRACER_ENABLE", "UEFI_DEBUG_LOG_BLKIO", "UEFI_DEBUG_LOG_BM", "UEFI_DEBUG_LOG_CACHE",
    "UEFI_DEBUG_LOG_DISPATCH", "UEFI_DEBUG_LOG_EVENTS", "UEFI_DEBUG_LOG_FS", "UEFI_DEBUG_LOG_GCD",
    "UEFI_DEBUG_LOG_INIT", "UEFI_DEBUG_LOG_LOAD", "UEFI_DEBUG_LOG_PAGE", "UEFI_DEBUG_LOG_POOL",
    "UEFI_DEBUG_LOG_SNI", "UEFI_DEBUG_LOG_UNDI", "UEFI_HII_EN", "UEFI_LOGS", "UEFI_LOG_MIN_SEVERITY",
    "UEFI_LOG_VERBOSE", "VIRTIO_BLK_EMU_MNG_ENABLE", "VIRTIO_BLK_EMU_MNG_NUM_MSIX", "VIRTIO_BLK_EMU_MNG_NUM_PF",
    "VIRTIO_BLK_EMU_MNG_NUM_VF", "VIRTIO_BLK_EMU_MNG_NUM_VF_MSIX", "VIRTIO_BLK_EMU_MNG_PF_PCI_LAYOUT",
    "VIRTIO_BLK_EMU_MNG_SUBS_ID", "VIRTIO_BLK_EMU_MNG_SUBS_VENDOR_ID", "VIRTIO_BLK_EMU_MNG_VF_PCI_LAYOUT",
    "VIRTIO_FS_EMU_MNG_ENABLE", "VIRTIO_FS_EMU_MNG_NUM_MSIX", "VIRTIO_FS_EMU_MNG_NUM_PF",
    "VIRTIO_FS_EMU_MNG_NUM_VF", "VIRTIO_FS_EMU_MNG_NUM_VF_MSIX", "VIRTIO_FS_EMU_MNG_SUBS_ID",
    "VIRTIO_FS_EMU_MNG_SUBS_VENDOR_ID", "VIRTIO_NET_EMU_MNG_ENABLE", "VIRTIO_NET_EMU_MNG_NUM_MSIX",
    "VIRTIO_NET_EMU_MNG_NUM_PF", "VIRTIO_NET_EMU_MNG_NUM_VF", "VIRTIO_NET_EMU_MNG_NUM_VF_MSIX",
    "VIRTIO_NET_EMU_MNG_PF_PCI_LAYOUT", "VIRTIO_NET_EMU_MNG_SUBS_ID", "VIRTIO_NET_EMU_MNG_SUBS_VENDOR_ID",
    "VIRTIO_NET_EMU_MNG_VF_PCI_LAYOUT", "WOL_MAGIC_EN"};

// `select mlxconfig_name from params where dependency like '%advanced_pci_settings!=0%'`.
constexpr std::array<std::string_view, 3> kNvNeedAdvanced = {"FORCE_ETH_PCI_SUBCLASS", "IBM_CAPI_EN", "MAX_ACC_OUT_READ"};

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
  return ParamScope::kDevice;
}

bool nvconfig_needs_advanced(const std::string& param) {
  return std::find(kNvNeedAdvanced.begin(), kNvNeedAdvanced.end(), nv_base_name(param)) != kNvNeedAdvanced.end();
}

}  // namespace rdmactl::reconcilers
