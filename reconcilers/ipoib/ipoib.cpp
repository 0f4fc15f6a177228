// The ipoib reconciler: IPoIB mode through sysfs, and the MTU each mode can carry (see ipoib.h).
#include "reconcilers/ipoib/ipoib.h"

#include <string>

#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "ipoib";
constexpr int kArphrdInfiniband = 32;
// The largest IB MTU is 4096 bytes; IPoIB's datagram header takes 4 of them.
constexpr int kMaxIbMtu = 4096;
constexpr int kIpoibHeader = 4;
constexpr int kDatagramMaxMtu = kMaxIbMtu - kIpoibHeader;
// IPOIB_CM_MTU: the connected-mode limit (64 KiB minus headers).
constexpr int kConnectedMaxMtu = 65520;

std::string mode_file(const std::string& netdev) { return "/sys/class/net/" + netdev + "/mode"; }

class IpoibReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }

  Result<void> observe(Platform& platform, const NodeSpec*, HostState& state) override {
    const HostFs& fs = platform.fs();
    for (NetdevState& n : state.netdevs) {
      auto type = fs.read("/sys/class/net/" + n.name + "/type");
      if (!type || *type != std::to_string(kArphrdInfiniband)) continue;
      auto mode = fs.read(mode_file(n.name));
      if (mode) n.ipoib = nlohmann::json{{"mode", *mode}};
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.ipoib.mode && !(iface.mtu && mtu_limited_by_mode(iface, state))) continue;
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
        if (iface.ipoib.mode) {
          out.errors.push_back(selector_error(
              iface, make_error(ErrorKind::kNotSupported,
                                n.name + " is not an IPoIB netdev (ipoib.mode applies to InfiniBand ports only)")));
        }
        continue;
      }
      const std::string current = n.ipoib->value("mode", "");
      const std::string mode = iface.ipoib.mode.value_or(current);
      if (iface.mtu) {
        const int limit = mode == "connected" ? kConnectedMaxMtu : kDatagramMaxMtu;
        if (*iface.mtu > limit) {
          out.errors.push_back(selector_error(iface, make_error(ErrorKind::kInvalidSpec, mtu_message(*iface.mtu, mode, n.name))));
          continue;
        }
      }
      if (iface.ipoib.mode && current != *iface.ipoib.mode) {
        out.changes.push_back(make_change(netdev_resource(n.name), "ipoib.mode", current, *iface.ipoib.mode, kName, true));
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override {
    if (change.field != "ipoib.mode") return unknown_field(change);
    auto netdev = netdev_for_change(state, change);
    if (!netdev) return netdev.error();
    return platform.fs().write(mode_file((*netdev)->name), change.desired.get<std::string>());
  }

 private:
  // Whether the spec's MTU must be checked against an IPoIB mode: only on IPoIB netdevs.
  static bool mtu_limited_by_mode(const InterfaceSpec& iface, const HostState& state) {
    auto netdev = state.resolve(iface.selector);
    return netdev && (*netdev)->ipoib.has_value();
  }

  static bool waits_for_link_type(const InterfaceSpec& iface, const HostState& state) {
    if (iface.link_type != std::string("infiniband")) return false;
    auto port = state.resolve_port(iface.selector);
    return port && port->port->link_layer != "InfiniBand";
  }

  static std::string mtu_message(int mtu, const std::string& mode, const std::string& netdev) {
    if (mode == "connected") {
      return "mtu " + std::to_string(mtu) + " is above what IPoIB connected mode carries on " + netdev + " (" +
             std::to_string(kConnectedMaxMtu) + ")";
    }
    return "mtu " + std::to_string(mtu) + " is above what IPoIB datagram mode carries on " + netdev +
           ": the IB MTU (at most " + std::to_string(kMaxIbMtu) + ") minus the 4-byte IPoIB header, " +
           std::to_string(kDatagramMaxMtu) + "; set ipoib.mode: connected (up to " + std::to_string(kConnectedMaxMtu) +
           ") or mtu " + std::to_string(kDatagramMaxMtu) + " or less";
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_ipoib_reconciler() { return std::make_unique<IpoibReconciler>(); }

}  // namespace rdmactl::reconcilers
