// SPDX-License-Identifier: Apache-2.0
// The ipoib reconciler: IPoIB mode through sysfs, and the MTU each mode can carry (see ipoib.h).
#include "reconcilers/ipoib/ipoib.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kIpoibName = "ipoib";
constexpr unsigned kArphrdInfiniband = 32;
// IPOIB_ENCAP_LEN: the 4-byte IPoIB header in every datagram.
constexpr int kIpoibHeader = 4;
// The largest IB MTU (IB_MTU_4096); a port's may be smaller.
constexpr int kMaxIbMtu = 4096;
constexpr int kDatagramMaxMtu = kMaxIbMtu - kIpoibHeader;
// ipoib_change_mtu: new_mtu < ETH_MIN_MTU + IPOIB_ENCAP_LEN is EINVAL in datagram mode.
constexpr int kDatagramMinMtu = 68 + kIpoibHeader;
// OpenSM's default IPoIB broadcast group: OSM_DEFAULT_MGRP_MTU 0x04, 2048 bytes.
constexpr int kDefaultBroadcastMtu = 2048 - kIpoibHeader;
// A partition without mtu= gets OpenSM's default for its broadcast group (osm_prtn_config.c
// starts every partition's flags at mtu 4, OSM_DEFAULT_MGRP_MTU): 2048 bytes.
constexpr int kDefaultPartitionMtu = 2048;
// The default partition's P_Key with full membership, as an IPoIB netdev's sysfs `pkey` shows it.
constexpr unsigned kDefaultPkey = 0xffff;
// ipoib_ndo_init: max_mtu = IPOIB_CM_MTU (0x10000 - 0x10), for every IPoIB netdev.
constexpr int kMaxMtu = 65520;
// IPOIB_FLAGS_RC: the RC flag IPOIB_CM_SUPPORTED looks for in the address's first byte.
constexpr unsigned kRcFlag = 0x80;
constexpr const char* kEnhancedParameter = "/sys/module/ib_ipoib/parameters/ipoib_enhanced";
// The vendor driver's version, MODULE_VERSION of its modules ("23.10-1.1.9"; the upstream kernel's
// have none): ib_ipoib's, else mlx5_core's.
constexpr const char* kVendorVersionFiles[] = {"/sys/module/ib_ipoib/version", "/sys/module/mlx5_core/version"};

// MLNX_OFED 23.07 and later (and DOCA-OFED, which continues its numbering) run enhanced IPoIB
// only: "IPoIB ULP Mode Deprecation: Starting from this release, MLNX_OFED supports IPoIB enhanced
// mode only. The ability to switch back to ULP mode using ipoib_enhanced module parameter is not
// supported" (MLNX_OFED 23.07-0.5.0.0 release notes, Changes and New Features), and the InfiniBand
// connected transport is unsupported (24.07, Unsupported Functionalities). Versions are
// "YY.MM-..." since 23.04 and "5.x-..." before.
bool enhanced_only(const std::string& version) {
  int year = 0;
  int month = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &year, &month) != 2) return false;
  return year > 23 || (year == 23 && month >= 7);
}

std::string mode_file(const std::string& netdev) { return "/sys/class/net/" + netdev + "/mode"; }

// The first byte of "80:00:04:04:fe:80:...", nullopt when the text is not such an address.
std::optional<unsigned> first_byte(const std::string& address) {
  unsigned value = 0;
  if (address.size() < 2) return std::nullopt;
  const auto [end, ec] = std::from_chars(address.data(), address.data() + 2, value, 16);
  if (ec != std::errc() || end != address.data() + 2) return std::nullopt;
  return value;
}

// The spec's partition an IPoIB netdev is in: the one of its P_Key (sysfs `pkey`, with the
// membership bit; 0xffff for the default partition), nullptr when the spec has none for it.
const PartitionSpec* partition_of(const std::optional<std::vector<PartitionSpec>>& partitions, const NetdevState& n) {
  if (!partitions) return nullptr;
  unsigned pkey = kDefaultPkey;
  if (const std::string text = n.ipoib->value("pkey", ""); !text.empty()) {
    pkey = static_cast<unsigned>(std::strtoul(text.c_str(), nullptr, 16));
  }
  for (const PartitionSpec& p : *partitions) {
    if (static_cast<unsigned>(p.pkey) == (pkey & 0x7fff)) return &p;
  }
  return nullptr;
}

// Why connected mode cannot be set on this netdev, with the way out for the driver in use.
std::string no_connected_mode(const NetdevState& n) {
  const nlohmann::json& ipoib = *n.ipoib;
  if (!ipoib.value("modeFile", true)) {
    return n.name + " has no /sys/class/net/" + n.name + "/mode: the kernel's IPoIB has no connected mode "
           "(CONFIG_INFINIBAND_IPOIB_CM is off); use ipoib.mode: datagram";
  }
  std::string why = n.name + " runs enhanced IPoIB, which has no connected mode: its hardware address has no RC flag "
                    "(IPOIB_CM_SUPPORTED), which only legacy IPoIB sets (ConnectX-4 and later under mlx5 run enhanced "
                    "IPoIB). Use ipoib.mode: datagram (an MTU up to the IPoIB partition's IB MTU - 4)";
  const std::string version = ipoib.value("driverVersion", "");
  if (!version.empty() && enhanced_only(version)) {
    return n.name + " cannot run connected mode: its driver, MLNX_OFED/DOCA-OFED " + version +
           ", runs enhanced IPoIB only (from 23.07 on, ipoib_enhanced=0 no longer switches to legacy IPoIB and connected "
           "mode is refused). Use ipoib.mode: datagram (an MTU up to the IPoIB partition's IB MTU - 4: 4092 with a "
           "partition of mtu 4096)";
  }
  if (ipoib.contains("ipoibEnhanced")) {
    why += ", or, with this MLNX_OFED driver (before 23.07" + (version.empty() ? std::string() : ": " + version) +
           "), switch ib_ipoib to legacy IPoIB: `options ib_ipoib ipoib_enhanced=0` in /etc/modprobe.d/ib_ipoib.conf, "
           "then reload ib_ipoib (or reboot); MLNX_OFED and DOCA-OFED 23.07 and later have no legacy IPoIB";
  } else {
    why += "; with the upstream driver, legacy IPoIB on mlx5 needs a kernel built without CONFIG_MLX5_CORE_IPOIB, "
           "or MLNX_OFED before 23.07 with ib_ipoib ipoib_enhanced=0 (23.07 and later run enhanced IPoIB only)";
  }
  return why;
}

class IpoibReconciler final : public Reconciler {
 public:
  const char* name() const override { return kIpoibName; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    const HostFs& fs = platform.fs();
    const bool vendor_ipoib = fs.exists(kEnhancedParameter);
    for (NetdevState& n : state.netdevs) {
      const std::string dir = "/sys/class/net/" + n.name;
      // The link dump's ifi_type is what sysfs `type` shows (dev->type): no file read per netdev.
      // Only a netdev observed without it (a fixture tree) is asked through sysfs.
      if (n.arptype != 0 && n.arptype != kArphrdInfiniband) continue;
      if (n.arptype == 0) {
        auto type = fs.read(dir + "/type");
        if (!type || *type != std::to_string(kArphrdInfiniband)) continue;
      }
      nlohmann::json ipoib = nlohmann::json::object();
      if (auto mode = fs.read(mode_file(n.name))) {
        ipoib["mode"] = *mode;
      } else {
        ipoib["mode"] = "datagram";
        ipoib["modeFile"] = false;
      }
      // ipoib_main.c show_pkey: "0x%04x", the membership bit included (0xffff: the default partition).
      if (auto pkey = fs.read(dir + "/pkey")) ipoib["pkey"] = *pkey;
      auto address = fs.read(dir + "/address");
      const std::optional<unsigned> flags = address ? first_byte(*address) : std::nullopt;
      ipoib["connectedMode"] = flags && (*flags & kRcFlag) != 0 && ipoib.value("modeFile", true);
      if (vendor_ipoib) {
        auto value = fs.read(kEnhancedParameter);
        ipoib["ipoibEnhanced"] = value ? *value : "";
        for (const char* file : kVendorVersionFiles) {
          if (auto version = fs.read(file)) {
            ipoib["driverVersion"] = *version;
            // Even an address with the RC flag gets no connected mode from these drivers.
            if (enhanced_only(*version)) ipoib["connectedMode"] = false;
            break;
          }
        }
      }
      n.ipoib = std::move(ipoib);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.ipoib.mode) continue;
      // A port whose firmware link type is staged to become InfiniBand has no IPoIB netdev until
      // the reboot: its ipoib settings wait for it, like the link type itself.
      if (waits_for_link_type(iface, state)) continue;
      auto netdev = state.resolve(iface.selector);
      if (!netdev) {
        out.errors.push_back(selector_error(iface, netdev.error()));
        continue;
      }
      const NetdevState& n = **netdev;
      if (!n.ipoib) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kNotSupported,
                              n.name + " is not an IPoIB netdev (ipoib.mode applies to InfiniBand ports only)")));
        continue;
      }
      const std::string current = n.ipoib->value("mode", "");
      if (*iface.ipoib.mode == "connected" && !n.ipoib->value("connectedMode", false)) {
        out.errors.push_back(selector_error(iface, make_error(ErrorKind::kNotSupported, no_connected_mode(n))));
        continue;
      }
      out.compared(netdev_resource(n.name), "ipoib.mode", kIpoibName);
      if (current != *iface.ipoib.mode) {
        Change change = make_change(netdev_resource(n.name), "ipoib.mode", current, *iface.ipoib.mode, kIpoibName, true);
        change.via = "sysfs /sys/class/net/" + n.name + "/mode";
        change.note = *iface.ipoib.mode == "connected"
                          ? "the kernel sets the MTU to 65520 on entering connected mode"
                          : "the kernel lowers the MTU to the broadcast group's MTU - 4 on leaving connected mode";
        out.changes.push_back(std::move(change));
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    if (change.field != "ipoib.mode") return unknown_field(change);
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    // ipoib_set_mode takes exactly "connected\n" or "datagram\n".
    return platform.fs().write(mode_file((*netdev)->name), change.desired.get<std::string>() + "\n");
  }

 private:
  static bool waits_for_link_type(const InterfaceSpec& iface, const HostState& state) {
    if (iface.link_type != std::string("infiniband")) return false;
    auto port = state.resolve_port(iface.selector);
    return port && port->port->link_layer != "InfiniBand";
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_ipoib_reconciler() { return std::make_unique<IpoibReconciler>(); }

IpoibMtuCheck check_ipoib_mtu(const InterfaceSpec& iface, const NetdevState& n,
                              const std::optional<std::vector<PartitionSpec>>& partitions) {
  IpoibMtuCheck check;
  if (!iface.mtu || !n.ipoib) return check;
  const int mtu = *iface.mtu;
  const std::string mode = iface.ipoib.mode.value_or(n.ipoib->value("mode", "datagram"));
  if (mode == "connected" && iface.ipoib.mode && !n.ipoib->value("connectedMode", false)) {
    check.mode_unavailable = true;
    return check;
  }
  if (mtu > kMaxMtu) {
    check.error = "mtu " + std::to_string(mtu) + " is above the largest IPoIB MTU, " + std::to_string(kMaxMtu) +
                  " (the netdev's max_mtu, connected mode)";
  } else if (mode == "connected") {
    return check;
  } else if (mtu > kDatagramMaxMtu) {
    check.error = "mtu " + std::to_string(mtu) + " is above what IPoIB datagram mode carries on " + n.name +
                  ": the port's IB MTU (at most 4096) minus the 4-byte IPoIB header, " + std::to_string(kDatagramMaxMtu) +
                  (n.ipoib->value("connectedMode", false)
                       ? "; set ipoib.mode: connected (up to 65520) or mtu " + std::to_string(kDatagramMaxMtu) + " or less"
                       : "; set mtu " + std::to_string(kDatagramMaxMtu) + " or less (" + n.name +
                             " has no connected mode)");
  } else if (mtu < kDatagramMinMtu) {
    check.error = "mtu " + std::to_string(mtu) + " is below what IPoIB datagram mode takes (" +
                  std::to_string(kDatagramMinMtu) + ")";
  } else if (const PartitionSpec* partition = partition_of(partitions, n)) {
    // The spec says what the partition's broadcast group carries: above it, the kernel would
    // clamp the MTU silently (ipoib_change_mtu takes min(new_mtu, mcast_mtu) in datagram mode).
    const int ib_mtu = partition->mtu.value_or(kDefaultPartitionMtu);
    if (mtu > ib_mtu - kIpoibHeader) {
      check.error = "mtu " + std::to_string(mtu) + " is above what " + n.name + " carries in datagram mode in partition " +
                    partition->name + " (" + partition->origin.file + ":" + std::to_string(partition->origin.line) +
                    ", " + partition->origin.path + "): its IB MTU " + std::to_string(ib_mtu) +
                    (partition->mtu ? "" : " (OpenSM's default, no mtu given)") + " minus the 4-byte IPoIB header is " +
                    std::to_string(ib_mtu - kIpoibHeader) + "; give the partition mtu: 4096 (" +
                    std::to_string(kDatagramMaxMtu) + ") or set mtu " + std::to_string(ib_mtu - kIpoibHeader) +
                    " or less";
    }
  } else if (mtu > kDefaultBroadcastMtu) {
    check.note = "datagram mode carries at most the IPoIB broadcast group's MTU - 4, set by the subnet manager's "
                 "partition: OpenSM's default (mtu=4, 2048) gives 2044; `mtu=5` (4096) on the partition's line in "
                 "partitions.conf gives 4092 (subnetManager.partitions with mtu: 4096 says so, and lets plan check it)";
  }
  return check;
}

std::string ipoib_mtu_clamped(const std::string& netdev, int wanted, int got) {
  return "the kernel set " + netdev + "'s MTU to " + std::to_string(got) + ", not " + std::to_string(wanted) +
         ": IPoIB datagram mode carries at most the broadcast group's MTU - 4, which the subnet manager's IPoIB "
         "partition sets (" + std::to_string(got + kIpoibHeader) + " here). On the subnet manager's node, give the "
         "partition `mtu=5` (4096) in partitions.conf (e.g. `Default=0x7fff, ipoib, mtu=5 : ALL=full;` in "
         "/etc/opensm/partitions.conf, /etc/rdma/partitions.conf on RHEL) and restart OpenSM, or set mtu " +
         std::to_string(got) + " or less";
}

}  // namespace rdmactl::reconcilers
