// The ipoib reconciler: IPoIB mode through sysfs, and the MTU each mode can carry (see ipoib.h).
#include "reconcilers/ipoib/ipoib.h"

#include <charconv>
#include <string>

#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "ipoib";
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
// ipoib_ndo_init: max_mtu = IPOIB_CM_MTU (0x10000 - 0x10), for every IPoIB netdev.
constexpr int kMaxMtu = 65520;
// IPOIB_FLAGS_RC: the RC flag IPOIB_CM_SUPPORTED looks for in the address's first byte.
constexpr unsigned kRcFlag = 0x80;
constexpr const char* kEnhancedParameter = "/sys/module/ib_ipoib/parameters/ipoib_enhanced";

std::string mode_file(const std::string& netdev) { return "/sys/class/net/" + netdev + "/mode"; }

// The first byte of "80:00:04:04:fe:80:...", nullopt when the text is not such an address.
std::optional<unsigned> first_byte(const std::string& address) {
  unsigned value = 0;
  if (address.size() < 2) return std::nullopt;
  const auto [end, ec] = std::from_chars(address.data(), address.data() + 2, value, 16);
  if (ec != std::errc() || end != address.data() + 2) return std::nullopt;
  return value;
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
  if (ipoib.contains("ipoibEnhanced")) {
    why += ", or, with this DOCA/MLNX-OFED driver, switch ib_ipoib to legacy IPoIB: `options ib_ipoib "
           "ipoib_enhanced=0` in /etc/modprobe.d/ib_ipoib.conf, then reload ib_ipoib (or reboot)";
  } else {
    why += "; with the upstream driver, legacy IPoIB on mlx5 needs a kernel built without CONFIG_MLX5_CORE_IPOIB, "
           "or the DOCA-OFED driver with ib_ipoib ipoib_enhanced=0";
  }
  return why;
}

class IpoibReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }

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
      auto address = fs.read(dir + "/address");
      const std::optional<unsigned> flags = address ? first_byte(*address) : std::nullopt;
      ipoib["connectedMode"] = flags && (*flags & kRcFlag) != 0 && ipoib.value("modeFile", true);
      if (vendor_ipoib) {
        auto value = fs.read(kEnhancedParameter);
        ipoib["ipoibEnhanced"] = value ? *value : "";
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
      out.compared(netdev_resource(n.name), "ipoib.mode", kName);
      if (current != *iface.ipoib.mode) {
        Change change = make_change(netdev_resource(n.name), "ipoib.mode", current, *iface.ipoib.mode, kName, true);
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

IpoibMtuCheck check_ipoib_mtu(const InterfaceSpec& iface, const NetdevState& n) {
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
  } else if (mtu > kDefaultBroadcastMtu) {
    check.note = "datagram mode carries at most the IPoIB broadcast group's MTU - 4, set by the subnet manager's "
                 "partition: OpenSM's default (mtu=4, 2048) gives 2044; `mtu=5` (4096) on the partition's line in "
                 "partitions.conf gives 4092";
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
