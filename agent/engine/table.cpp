// The ordered reconciler table and spec-origin text used in diff errors.
#include "agent/engine/reconciler.h"
#include "reconcilers/addresses/addresses.h"
#include "reconcilers/ecn/ecn.h"
#include "reconcilers/netdev/netdev.h"
#include "reconcilers/qos/qos.h"
#include "reconcilers/roce/roce.h"
#include "reconcilers/sysctl/sysctl.h"

namespace rdmactl {

ReconcilerTable make_reconciler_table() {
  ReconcilerTable table;
  // Order matters: MTU and link state before addresses; QoS before ECN and RoCE, which mark and
  // react on its priorities; host parameters last.
  table.push_back(reconcilers::make_netdev_reconciler());
  table.push_back(reconcilers::make_addresses_reconciler());
  table.push_back(reconcilers::make_qos_reconciler());
  table.push_back(reconcilers::make_ecn_reconciler());
  table.push_back(reconcilers::make_roce_reconciler());
  table.push_back(reconcilers::make_sysctl_reconciler());
  return table;
}

void check_unmanaged_fields(const NodeSpec& spec, DiffResult& out) {
  auto unmanaged = [&](const std::string& where, const char* field) {
    out.errors.push_back(make_error(ErrorKind::kNotSupported,
                                    std::string(field) + " is not managed by this version of rdmactl; "
                                                         "remove it from the spec or upgrade",
                                    where));
  };
  for (const InterfaceSpec& iface : spec.interfaces) {
    const std::string where = describe_origin(iface.origin) + " (" + iface.selector.describe() + ")";
    if (iface.link_type) unmanaged(where, "linkType");
    if (iface.ipoib.mode) unmanaged(where, "ipoib");
  }
  const SubnetManagerSpec& sm = spec.subnet_manager;
  if (sm.enabled || sm.priority || sm.port) unmanaged("subnetManager", "subnetManager");
}

std::string describe_origin(const SourceMark& origin) {
  std::string out = origin.file.empty() ? "<spec>" : origin.file;
  if (origin.line > 0) out += ":" + std::to_string(origin.line) + ":" + std::to_string(origin.column);
  if (!origin.path.empty()) out += " " + origin.path;
  return out;
}

}  // namespace rdmactl
