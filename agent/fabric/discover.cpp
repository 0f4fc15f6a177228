// SPDX-License-Identifier: Apache-2.0
// Discovery through rdma-core's libibnetdisc (topology), libibmad (SMInfo, NodeInfo, PortCounters)
// and libibumad (the local devices). See discover.h.
#include "agent/fabric/discover.h"

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <endian.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "agent/fabric/decode.h"
#include "agent/fabric/encoding.h"

namespace rdmactl::fabric {
namespace {

constexpr int kAllPorts = 0xFF;

struct FabricDeleter {
  void operator()(ibnd_fabric_t* f) const { ibnd_destroy_fabric(f); }
};
struct MadPortDeleter {
  void operator()(ibmad_port* p) const { mad_rpc_close_port(p); }
};

// NodeDescription is 64 bytes, NUL-padded when shorter (IBA 14.2.5.2).
std::string node_description(const char* bytes, std::size_t size) {
  return std::string(bytes, strnlen(bytes, size));
}

// The local device and port: checked here, before libibnetdisc, so that "no InfiniBand port" says
// what there is instead of libibnetdisc's "can't open MAD port".
struct LocalPort {
  std::string ca;
  int port = 0;
  uint64_t guid = 0;
};

Result<LocalPort> local_port(const DiscoverOptions& options) {
  if (umad_init() < 0) return make_error(ErrorKind::kPlatform, "libibumad: umad_init failed");
  char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  std::memset(names, 0, sizeof names);
  const int count = umad_get_cas_names(names, UMAD_MAX_DEVICES);
  auto none = [] {
    return make_error(ErrorKind::kNotFound,
                      "no InfiniBand port: libibumad finds no RDMA device (/sys/class/infiniband is empty or "
                      "the ib_umad module is not loaded)");
  };
  if (count <= 0) return none();
  std::vector<std::string> devices;
  std::vector<std::string> ib_ports;  // "dev/port"
  for (int i = 0; i < count; ++i) {
    const std::string name(names[i], strnlen(names[i], UMAD_CA_NAME_LEN));
    umad_ca_t ca{};
    // When /sys/class/infiniband cannot be read, umad_get_cas_names still returns one name, its
    // default "mthca0" (umad.c umad_get_cas_names, def_ca_name): only a device that opens counts.
    if (umad_get_ca(name.c_str(), &ca) < 0) continue;
    devices.push_back(name);
    for (int p = 0; p <= ca.numports && p < UMAD_CA_MAX_PORTS; ++p) {
      if (!ca.ports[p]) continue;
      const std::string layer = ca.ports[p]->link_layer;
      // libibumad umad.c resolve_ca_port: "InfiniBand" or "IB" (sysfs link_layer; older kernels
      // have none, which libibumad reads as "IB").
      if (layer == "InfiniBand" || layer == "IB") ib_ports.push_back(name + "/" + std::to_string(p));
    }
    umad_release_ca(&ca);
  }
  if (devices.empty()) return none();
  auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  if (!options.ca.empty() && std::find(devices.begin(), devices.end(), options.ca) == devices.end()) {
    return make_error(ErrorKind::kNotFound,
                      "no InfiniBand port: no RDMA device " + options.ca + " (devices: " + join(devices) + ")",
                      options.ca);
  }
  if (ib_ports.empty()) {
    return make_error(ErrorKind::kNotFound, "no InfiniBand port: devices " + join(devices) +
                                                " have only Ethernet (RoCE) ports; `rdmactl fabric` scans an "
                                                "InfiniBand subnet");
  }
  umad_port_t port{};
  if (umad_get_port(options.ca.empty() ? nullptr : options.ca.c_str(), options.port, &port) < 0) {
    const std::string wanted = (options.ca.empty() ? std::string("any device") : options.ca) +
                               (options.port ? " port " + std::to_string(options.port) : std::string());
    return make_error(ErrorKind::kNotFound,
                      "no InfiniBand port: " + wanted + " has none usable (InfiniBand ports: " + join(ib_ports) + ")",
                      options.ca);
  }
  LocalPort out{port.ca_name, port.portnum, be64toh(port.port_guid)};
  const std::string layer = port.link_layer;
  const unsigned phys = port.phys_state;
  umad_release_port(&port);
  if (layer != "InfiniBand" && layer != "IB") {
    return make_error(ErrorKind::kNotFound,
                      "no InfiniBand port: " + out.ca + " port " + std::to_string(out.port) + " is " + layer +
                          " (InfiniBand ports: " + join(ib_ports) + ")",
                      out.ca);
  }
  if (static_cast<int>(phys) != kPhysLinkUp) {
    return make_error(ErrorKind::kPlatform,
                      out.ca + " port " + std::to_string(out.port) + " has no link (physical state " +
                          phys_state_name(static_cast<int>(phys)) + "): nothing to scan from it",
                      out.ca);
  }
  return out;
}

class Queries {
 public:
  Queries(ibmad_port* port, int timeout_ms) : port_(port), timeout_(timeout_ms) {}

  // SMInfo of the SM behind the port a directed route ends at.
  void sminfo(ib_portid_t path, SubnetManager& sm) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!smp_query_via(data, &path, IB_ATTR_SMINFO, 0, timeout_, port_)) {
      sm.error = "no answer to SMInfo (no SM runs behind this port any more, or it does not answer)";
      return;
    }
    uint64_t guid = 0;
    mad_decode_field(data, IB_SMINFO_GUID_F, &guid);
    sm.guid = guid;
    sm.activity_count = mad_get_field(data, 0, IB_SMINFO_ACT_F);
    sm.priority = static_cast<int>(mad_get_field(data, 0, IB_SMINFO_PRIO_F));
    sm.state = static_cast<int>(mad_get_field(data, 0, IB_SMINFO_STATE_F));
    sm.answered = true;
  }

  // NodeInfo and NodeDescription of whatever answers at the end of `path`.
  void whois(ib_portid_t path, DanglingPort& d) {
    uint8_t info[IB_SMP_DATA_SIZE] = {};
    if (!smp_query_via(info, &path, IB_ATTR_NODE_INFO, 0, timeout_, port_)) {
      d.error = "no answer to NodeInfo";
      return;
    }
    d.answered = true;
    d.type = static_cast<NodeType>(mad_get_field(info, 0, IB_NODE_TYPE_F));
    d.node_guid = mad_get_field64(info, 0, IB_NODE_GUID_F);
    d.port_guid = mad_get_field64(info, 0, IB_NODE_PORT_GUID_F);
    d.port = static_cast<int>(mad_get_field(info, 0, IB_NODE_LOCAL_PORT_F));
    char desc[IB_SMP_DATA_SIZE + 1] = {};
    if (smp_query_via(desc, &path, IB_ATTR_NODE_DESC, 0, timeout_, port_)) {
      d.description = node_description(desc, IB_SMP_DATA_SIZE);
    }
  }

  // The error counters of `portnum` (or kAllPorts) behind `lid`, from PortCountersExtended when
  // `extended` (ibqueryerrors.c print_errors), else PortCounters; false when the PMA did not answer.
  bool counters(int lid, int portnum, bool extended, std::map<std::string, uint64_t>& out) {
    uint8_t pc[1024] = {};
    ib_portid_t portid{};
    ib_portid_set(&portid, lid, 0, 0);
    if (!pma_query_via(pc, &portid, portnum, timeout_, extended ? IB_GSI_PORT_COUNTERS_EXT : IB_GSI_PORT_COUNTERS,
                       port_)) {
      return false;
    }
    out = error_counters_of(pc, extended);
    return true;
  }

  // PerfMgt ClassPortInfo of the PMA behind `lid` (ibqueryerrors.c query_cap_mask).
  std::optional<PmCapabilities> pm_caps(int lid, int portnum) {
    uint8_t pc[1024] = {};
    ib_portid_t portid{};
    ib_portid_set(&portid, lid, 0, 0);
    if (!pma_query_via(pc, &portid, portnum, timeout_, CLASS_PORT_INFO, port_)) return std::nullopt;
    return pm_capabilities(pc);
  }

 private:
  ibmad_port* port_;
  int timeout_;
};

void read_counters(Queries& q, FabricScan& scan) {
  for (FabricNode& node : scan.nodes) {
    auto fail_all = [&](const std::string& why) {
      for (FabricPort& p : node.ports) {
        if (p.number == 0) continue;
        p.counters_error = why;
        ++scan.counters_failed;
      }
    };
    if (node.type == NodeType::kSwitch) {
      // ibqueryerrors.c print_node: a switch is reached at its LID (port 0); every port is read
      // through it; with AllPortSelect one query sums them all, and only a sum above zero is worth
      // reading port by port.
      const FabricPort* port0 = node.port(0);
      if (node.lid == 0 || !port0 || port0->state != kPortActive) {
        fail_all("the switch has no LID or is not Active: its PMA is reached by LID only");
        continue;
      }
      const auto caps = q.pm_caps(node.lid, 0);
      const bool extended = caps && caps->extended_error_counters();
      bool read_each = true;
      if (caps && caps->all_port_select() && q.counters(node.lid, kAllPorts, extended, node.all_port_counters)) {
        read_each = std::any_of(node.all_port_counters.begin(), node.all_port_counters.end(),
                                [](const auto& kv) { return kv.second > 0; });
      }
      for (FabricPort& p : node.ports) {
        if (p.number == 0) continue;
        p.counters_extended = extended;
        if (!read_each) {
          for (const std::string& name : error_counter_names()) p.counters[name] = 0;  // all sums are 0
          continue;
        }
        if (!q.counters(node.lid, p.number, extended, p.counters)) {
          p.counters_error = extended ? "no answer to PortCountersExtended" : "no answer to PortCounters";
          ++scan.counters_failed;
        }
      }
    } else {
      for (FabricPort& p : node.ports) {
        if (p.lid == 0 || p.state != kPortActive) {
          p.counters_error = "the port has no LID or is not Active: its PMA is reached by LID only";
          ++scan.counters_failed;
          continue;
        }
        // rdmactl asks each CA port's PMA for its ClassPortInfo, since the ports of one CA may
        // differ in extended counters and each PMA is reached at its own port's LID. ibqueryerrors
        // (v44 print_node) asks once per node, through the first port present, and uses that
        // answer for every port: rdmactl departs from it here on purpose.
        const auto caps = q.pm_caps(p.lid, p.number);
        p.counters_extended = caps && caps->extended_error_counters();
        if (!q.counters(p.lid, p.number, p.counters_extended, p.counters)) {
          p.counters_error = p.counters_extended ? "no answer to PortCountersExtended" : "no answer to PortCounters";
          ++scan.counters_failed;
        }
      }
    }
  }
}

// The scan of what libibnetdisc found from `local`: its nodes, each port with its peer's index and
// port. `order` gets each node's ibnd_node_t, at its index in scan.nodes.
FabricScan scan_of(const ibnd_fabric_t& fabric, const LocalPort& local, std::vector<const ibnd_node_t*>& order) {
  FabricScan scan;
  scan.ca = local.ca;
  scan.ca_port = local.port;
  scan.local_guid = local.guid;
  scan.mads = fabric.total_mads_used;
  std::map<const ibnd_node_t*, std::size_t> index;
  for (ibnd_node_t* n = fabric.nodes; n; n = n->next) {
    index[n] = order.size();
    order.push_back(n);
  }
  for (const ibnd_node_t* n : order) {
    FabricNode node;
    node.type = static_cast<NodeType>(n->type);
    node.guid = n->guid;
    node.description = node_description(n->nodedesc, IB_SMP_DATA_SIZE);
    node.num_ports = n->numports;
    node.lid = n->type == IB_NODE_SWITCH ? n->smalid : 0;
    for (int p = 0; p <= n->numports; ++p) {
      const ibnd_port_t* port = n->ports ? n->ports[p] : nullptr;
      if (!port) continue;
      FabricPort fp = port_of(n, port);
      if (port->remoteport && port->remoteport->node) {
        fp.peer = PortRef{index.at(port->remoteport->node), port->remoteport->portnum};
      }
      if (node.lid == 0 && p > 0) node.lid = fp.lid;
      node.ports.push_back(std::move(fp));
    }
    scan.nodes.push_back(std::move(node));
  }
  if (fabric.from_node) scan.local_node = index.at(fabric.from_node);
  return scan;
}

// The subnet managers behind node `i`'s ports, by SMInfo.
void query_subnet_managers(Queries& q, const std::vector<const ibnd_node_t*>& order, std::size_t i,
                           FabricScan& scan) {
  const ibnd_node_t* n = order[i];
  const FabricNode& node = scan.nodes[i];
  for (const FabricPort& p : node.ports) {
    // A switch's SM sits behind port 0 (its CapabilityMask speaks for the switch); a CA's behind
    // the port that has the capability.
    const bool sm_port = node.type == NodeType::kSwitch ? p.number == 0 : p.number > 0;
    if (!sm_port || !(p.cap_mask & kCapIsSm)) continue;
    SubnetManager sm;
    sm.port = PortRef{i, p.number};
    sm.lid = p.lid;
    // By directed route, which works before any LID is assigned: to a CA port through the switch
    // port it hangs off (sm_route_via), so that the route ends at the port whose PortInfo said
    // IsSM: where libibnetdisc merged two nodes of one GUID (its path_portid is the first one's),
    // and on the scanning adapter's other ports, which a route of 0 hops does not reach.
    ib_portid_t path = n->path_portid;
    if (const auto via = sm_route_via(scan, i, p.number)) {
      ib_portid_t through = order[via->node]->path_portid;
      if (through.drpath.cnt + 1 < IB_SUBNET_PATH_HOPS_MAX) {
        through.drpath.p[++through.drpath.cnt] = static_cast<uint8_t>(via->port);
        path = through;
      }
    }
    q.sminfo(path, sm);
    scan.subnet_managers.push_back(sm);
  }
}

// What answers behind switch `i`'s ports that are LinkUp with no peer libibnetdisc found.
void query_dangling(Queries& q, const ibnd_node_t* n, std::size_t i, FabricScan& scan) {
  for (const FabricPort& p : scan.nodes[i].ports) {
    if (p.number == 0 || p.phys_state != kPhysLinkUp || p.peer) continue;
    ib_portid_t path = n->path_portid;
    if (path.drpath.cnt + 1 >= IB_SUBNET_PATH_HOPS_MAX) continue;
    path.drpath.p[++path.drpath.cnt] = static_cast<uint8_t>(p.number);
    DanglingPort d;
    d.at = PortRef{i, p.number};
    q.whois(path, d);
    scan.dangling.push_back(d);
  }
}

}  // namespace

Result<FabricScan> discover_fabric(const DiscoverOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto local = local_port(options);
  if (!local) return std::move(local).error();

  ibnd_config_t config{};
  // The Mellanox ExtendedPortInfo, the only place FDR10 shows (a link at FDR10 reads QDR in
  // PortInfo): infiniband-diags ask for it by default (ibdiag_common.c ibd_ibnetdisc_flags =
  // IBND_CONFIG_MLX_EPI), libibnetdisc only of Mellanox devices at LinkUp/QDR (ibnetdisc.c
  // recv_port_info, is_mlnx_ext_port_info_supported).
  config.flags = IBND_CONFIG_MLX_EPI;
  config.timeout_ms = static_cast<unsigned>(options.timeout_ms);
  config.retries = static_cast<unsigned>(options.retries);
  std::vector<char> ca_name(local->ca.begin(), local->ca.end());
  ca_name.push_back('\0');
  std::unique_ptr<ibnd_fabric_t, FabricDeleter> fabric(
      ibnd_discover_fabric(ca_name.data(), local->port, nullptr, &config));
  if (!fabric) {
    return make_error(ErrorKind::kPlatform,
                      "libibnetdisc could not discover the subnet from " + local->ca + " port " +
                          std::to_string(local->port) + " (ibnd_discover_fabric failed; see its messages above)",
                      local->ca);
  }

  std::vector<const ibnd_node_t*> order;
  FabricScan scan = scan_of(*fabric, *local, order);

  int mgmt_classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_PERFORMANCE_CLASS};
  std::unique_ptr<ibmad_port, MadPortDeleter> mad(mad_rpc_open_port(ca_name.data(), local->port, mgmt_classes, 3));
  if (!mad) {
    return make_error(ErrorKind::kPlatform,
                      "libibmad: cannot open a MAD port on " + local->ca + " port " + std::to_string(local->port),
                      local->ca);
  }
  if (options.timeout_ms > 0) mad_rpc_set_timeout(mad.get(), options.timeout_ms);
  if (options.retries > 0) mad_rpc_set_retries(mad.get(), options.retries);
  Queries q(mad.get(), options.timeout_ms);

  for (std::size_t i = 0; i < order.size(); ++i) {
    query_subnet_managers(q, order, i, scan);
    if (scan.nodes[i].type != NodeType::kSwitch) continue;
    query_dangling(q, order[i], i, scan);
  }
  if (options.counters) read_counters(q, scan);
  scan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return scan;
}

}  // namespace rdmactl::fabric
