// SPDX-License-Identifier: Apache-2.0
// The self-test run: port selection, then loopback per port and peer test per address.
#include "agent/selftest/run.h"

#include <algorithm>

#include "agent/selftest/traffic_class.h"

namespace rdmactl {
namespace {

std::string port_ref_name(const PortRef& ref) { return ref.device->name + "/" + std::to_string(ref.port->port); }

SelftestResult port_result(const PortRef& ref) {
  SelftestResult r;
  r.test = "loopback";
  r.device = ref.device->name;
  r.port = ref.port->port;
  return r;
}

}  // namespace

PortSelection select_ports(const HostState& state, const NodeSpec* spec) {
  PortSelection selection;
  if (state.devices.empty()) {
    selection.nothing_to_test = state.recorded_from.empty() ? "no RDMA device on this host"
                                                            : "no RDMA device in the recorded state " + state.recorded_from;
    return selection;
  }
  std::vector<PortRef> candidates;
  bool named_by_spec = false;
  if (spec != nullptr) {
    for (const InterfaceSpec& interface : spec->interfaces) {
      auto ref = state.resolve_port(interface.selector);
      if (!ref) {
        // A netdev without an RDMA port is not an RDMA interface; a named RDMA device or PCI
        // function that is not there is hardware the spec expects and this host lacks.
        if (interface.selector.kind != Selector::Kind::kName) {
          SelftestResult missing;
          missing.test = "loopback";
          missing.device = interface.selector.kind == Selector::Kind::kRdmaDevice ? interface.selector.value : "";
          missing.port = interface.selector.port;
          missing.outcome = SelftestResult::Outcome::kFailed;
          missing.reason = "the spec names " + interface.selector.describe() + ": " + ref.error().message;
          selection.not_tested.push_back(std::move(missing));
          named_by_spec = true;
        }
        continue;
      }
      named_by_spec = true;
      const bool seen = std::any_of(candidates.begin(), candidates.end(),
                                    [&](const PortRef& c) { return c.port == ref->port; });
      if (!seen) candidates.push_back(*ref);
    }
  }
  if (!named_by_spec) {
    for (const DeviceState& device : state.devices) {
      for (const PortState& port : device.ports) candidates.push_back({&device, &port});
    }
  }
  std::string states;
  for (const PortRef& ref : candidates) {
    if (ref.port->state == "ACTIVE") {
      selection.ports.push_back(ref);
      continue;
    }
    const std::string state_text = ref.port->state.empty() ? "in an unknown state" : ref.port->state;
    states += (states.empty() ? "" : ", ") + port_ref_name(ref) + " " + state_text;
    // Only ports the spec names are reported one by one: an unused second port of a dual-port
    // adapter is normally DOWN and says nothing about this host's health.
    if (named_by_spec) {
      SelftestResult skipped = port_result(ref);
      skipped.outcome = SelftestResult::Outcome::kSkipped;
      skipped.reason = "the port is " + state_text + ", not ACTIVE (physical state " +
                       (ref.port->phys_state.empty() ? "unknown" : ref.port->phys_state) + ")";
      selection.not_tested.push_back(std::move(skipped));
    }
  }
  if (selection.ports.empty()) {
    selection.nothing_to_test = candidates.empty() ? "the RDMA devices have no ports"
                                                   : "no ACTIVE RDMA port to test: " + states;
  }
  return selection;
}

std::vector<PeerLocalPort> peer_local_ports(const HostState& state, const NodeSpec* spec) {
  std::vector<PeerLocalPort> out;
  for (const DeviceState& device : state.devices) {
    for (const PortState& port : device.ports) {
      out.push_back({device.name, port.port, port.link_layer, port.rate_gbps, port.rate,
                     traffic_class_for_port(state, spec, {&device, &port}), port.forced_traffic_class});
    }
  }
  return out;
}

SelftestReport run_selftest(const HostState& state, const NodeSpec* spec, const SelftestOptions& options,
                            const ProgressCallback& progress) {
  SelftestReport report;
  PortSelection selection = select_ports(state, spec);
  const bool any_failed = std::any_of(selection.not_tested.begin(), selection.not_tested.end(), [](const SelftestResult& r) {
    return r.outcome == SelftestResult::Outcome::kFailed;
  });
  if (selection.ports.empty() && !any_failed) {
    // Nothing can be tested, not even a peer: rdma_cm needs an ACTIVE port too.
    report.reason = selection.nothing_to_test;
    summarize(report);
    return report;
  }
  double ratio = kDefaultMinBandwidthRatio;
  if (spec != nullptr && spec->selftest.min_bandwidth_ratio) ratio = *spec->selftest.min_bandwidth_ratio;
  if (options.min_bandwidth_ratio) ratio = *options.min_bandwidth_ratio;

  auto notify = [&](const SelftestResult& r, bool finished) {
    if (progress) progress(r, finished);
  };
  for (const PortRef& ref : selection.ports) {
    LoopbackOptions loopback = options.loopback;
    loopback.min_bandwidth_ratio = ratio;
    loopback.netdev_addresses.clear();
    if (const NetdevState* netdev = state.find_netdev(ref.port->netdev)) loopback.netdev_addresses = netdev->addresses;
    loopback.traffic_class = traffic_class_for_port(state, spec, ref);
    notify(port_result(ref), false);
    auto ran = run_loopback(*ref.device, *ref.port, loopback);
    SelftestResult result;
    if (ran) {
      result = std::move(*ran);
      if (result.traffic_class) {
        const std::string forced = forced_class_note(ref.port->forced_traffic_class, *result.traffic_class);
        if (!forced.empty()) result.reason += "; " + forced;
      }
    } else {
      result = port_result(ref);
      result.traffic_class = loopback.traffic_class;
      result.outcome = SelftestResult::Outcome::kFailed;
      result.reason = ran.error().to_string();
    }
    notify(result, true);
    report.results.push_back(std::move(result));
  }

  std::vector<std::string> peers;
  if (spec != nullptr && spec->selftest.peers) peers = *spec->selftest.peers;
  for (const std::string& p : options.peers) {
    if (std::find(peers.begin(), peers.end(), p) == peers.end()) peers.push_back(p);
  }
  PeerOptions peer_options = options.peer;
  peer_options.min_bandwidth_ratio = ratio;
  peer_options.local_ports = peer_local_ports(state, spec);
  peer_options.fallback_class = spec_single_class(spec);
  if (!selection.ports.empty()) {
    for (const std::string& address : peers) {
      SelftestResult starting;
      starting.test = "peer";
      starting.peer = address;
      notify(starting, false);
      SelftestResult result = run_peer_test(address, peer_options);
      notify(result, true);
      report.results.push_back(std::move(result));
    }
  }
  for (SelftestResult& r : selection.not_tested) report.results.push_back(std::move(r));
  summarize(report);
  return report;
}

}  // namespace rdmactl
