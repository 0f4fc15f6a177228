// SPDX-License-Identifier: Apache-2.0
// What the subnet_manager reconciler's files share: the reconciler class (its verbs in
// subnet_manager.cpp, the rest in the file named for the object it handles) and the OpenSM layouts.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/engine/reconciler.h"
#include "reconcilers/subnet_manager/opensm_conf.h"
#include "reconcilers/subnet_manager/partitions.h"
#include "reconcilers/subnet_manager/sm_tools.h"

namespace rdmactl::reconcilers::subnet_manager_detail {

using nlohmann::json;
using namespace subnet_manager;

inline constexpr const char* kName = "subnet_manager";
inline constexpr const char* kResource = "subnet-manager";
inline constexpr const char* kWhere = "subnetManager";

// How a distribution packages OpenSM: the service, the file OpenSM reads its options from, and the
// shell variables file the service sources. Each layout takes the port and the priority elsewhere
// (see port_location and priority_location).
enum class LayoutKind { kDebian, kRhel, kDoca };
struct Layout {
  LayoutKind kind;
  const char* name;
  const char* service;
  const char* config_file;
  const char* vars_file;  // nullptr: none
};

// Where a layout takes a value: a key of OpenSM's config file, or a shell variable.
struct Location {
  std::string file;
  std::string key;
  bool shell = false;
  std::string describe() const { return file + " " + key; }
};

// opensm_layout.cpp
std::optional<Layout> detect_layout(const HostFs& fs);
Location priority_location(const HostFs& fs, const Layout& layout);
Location port_location(const HostFs& fs, const Layout& layout);
std::optional<std::string> read_location(const HostFs& fs, const Location& at);
std::string not_installed();

// sm_config.cpp
std::vector<std::string> ports_guids(const json& ports);

// sm_service.cpp: the local ports and Debian's opensm@ instances.
// Every port of every RDMA device in the order OpenSM (get_port_guid, through libvendor's
// osm_vendor_get_all_port_attr and libibumad's umad_get_cas_names: alphasort) and `ibstat -p`
// (umad_sort_ca_device_list: strcmp) list them: devices by name, a device's ports by number, every
// link layer (libibumad lists RoCE ports as InfiniBand ones: it reads no link layer to list them).
std::vector<PortRef> umad_ports(const HostState& state);
// One opensm@ instance that Debian's opensm.service starts: `systemctl start $(echo $PORTS | sed -r
// "s/(\w+)/opensm@\1.service/g")`, PORTS=ALL being `ibstat -p` (every non-zero port GUID,
// "0x%016" PRIx64, RoCE ports included), and each instance runs `opensm --guid WORD`.
struct DebianInstance {
  std::string word;                 // as PORTS spells it (ALL: as ibstat -p prints it)
  // The GUID opensm --guid reads from the word (base 16); where that is 0 or all ones, the one
  // get_port_guid(INVALID_GUID) takes: the only port; none where there are more (OpenSM prompts)
  std::optional<std::string> guid;
  PortRef port;  // the local port with that GUID; none: no such port here
  // The word reads no GUID and this host has more than one port: OpenSM (no --daemon in
  // opensm@.service) asks on its terminal which one to bind (main.c get_port_guid) and, its
  // stdin being /dev/null under systemd, loops there: the unit is active, no SM runs.
  bool prompts = false;
  std::string unit() const { return "opensm@" + word; }
  // OpenSM runs only on an InfiniBand port of this host: on an Ethernet (RoCE) port it cannot
  // register QP0 (drivers/infiniband/core/mad.c ib_register_mad_agent: "Ethernet devices will not
  // have QP0", -EPROTONOSUPPORT) and exits; on a GUID of no local port it finds no port and exits.
  bool can_run() const { return port.port && port.port->link_layer == "InfiniBand"; }
  std::string describe() const;
};
// The instances PORTS implies (null or NONE: none).
std::vector<DebianInstance> debian_instances(const HostState& state, const json& ports);

// partitions_file.cpp
Result<std::string> partitions_file(const HostFs& fs, const Layout& layout);
void partition_changes(const SubnetManagerSpec& sm, const json& local, bool running, DiffResult& out);

// sm_service.cpp
const char* package_of(const std::string& tool);

// subnet_manager.cpp
Error sm_error(ErrorKind kind, std::string message);

class SubnetManagerReconciler final : public Reconciler {
 public:
  explicit SubnetManagerReconciler(std::chrono::milliseconds settle) : settle_(settle) {}

  const char* name() const override { return kName; }

  // subnet_manager.cpp
  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override;
  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override;
  Result<void> apply(Platform& platform, const HostState& state, const Change& change) override;

 private:
  static void tool_errors(const SubnetManagerSpec& sm, const json& root, DiffResult& out);

  // sm_config.cpp: the priority and the port, and OpenSM's restart after a pass of config writes
  static void observe_config(const HostFs& fs, const Layout& layout, json& local, json& unknown);
  static void config_changes(const SubnetManagerSpec& sm, const HostState& state, DiffResult& out);
  static Result<std::string> desired_guid(const HostState& state, const Selector& selector);
  Result<void> apply_config(const HostFs& fs, const HostState& state, const Change& change);
  Result<void> restart_if_due(const HostState& state, const Change& change);
  bool is_forward(const HostState& state, const Change& change) const;
  bool restart_due(const HostState& state, const Change& change, bool forward) const;

  // partitions_file.cpp
  static void observe_partitions(const HostFs& fs, const Layout& layout, json& local, json& unknown);
  Result<void> apply_partitions(const HostFs& fs, const HostState& state, const Change& change);

  // sm_service.cpp
  void observe_service(const HostState& state, const Layout& layout, json& local, json& unknown, json& missing);
  static bool running_as_asked(const SubnetManagerSpec& sm, const HostState& state, bool want);
  Result<void> apply_enabled(const HostFs& fs, const HostState& state, const Change& change);
  static Result<bool> unit_active(const std::string& unit);
  static Result<void> systemctl(std::vector<std::string> args);

  // sm_election.cpp
  void observe_master(const HostState& state, const json& local, json& out, json& missing);
  static void check_election(const SubnetManagerSpec& sm, const HostState& state, DiffResult& out);
  void wait_for_election(const HostState& state, bool forward) const;

  // The subnetManager part of the spec observe last ran for (none for show), the layout it found,
  // and the sminfo command it used: apply uses them to write where the layout takes each value,
  // to restart once per pass and to wait for the election.
  std::optional<SubnetManagerSpec> spec_;
  std::optional<Layout> layout_;
  std::vector<std::string> sminfo_argv_;
  std::chrono::milliseconds settle_;
};

}  // namespace rdmactl::reconcilers::subnet_manager_detail
