// SPDX-License-Identifier: Apache-2.0
// rdmactl_pci_sriov_probe: a test-only program that runs rdmactl's sriov and pci reconcilers
// (reconcilers/sriov, reconcilers/pcie) through the engine against the real kernel, for the VM check
// tests/vm/checks/42-pci-sriov.sh: the spec is built here (a pci selector with sriov.numVfs and
// pcie.maxReadRequest), so the check does not depend on the spec file's syntax for them.
//
//   rdmactl_pci_sriov_probe observe BDF
//   rdmactl_pci_sriov_probe plan|apply BDF [--num-vfs N] [--max-read-request BYTES]
//
// observe prints the function's observed state ({"pci", "sriov", "pcieControl"}); plan and apply
// the engine's report. Exit: 0; 2 a plan with changes or an apply that failed (the report says
// why); 1 the host could not be observed; 64 a wrong command line.
#include <charconv>
#include <iostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/engine/engine.h"
#include "agent/state/report.h"
#include "reconcilers/pcie/pcie.h"
#include "reconcilers/sriov/sriov.h"

namespace {

using namespace rdmactl;

constexpr int kUsageExit = 64;

int usage(std::string_view problem) {
  std::cerr << "rdmactl_pci_sriov_probe: " << problem << "\n"
            << "usage: rdmactl_pci_sriov_probe observe BDF\n"
            << "       rdmactl_pci_sriov_probe plan|apply BDF [--num-vfs N] [--max-read-request BYTES]\n";
  return kUsageExit;
}

bool parse_int(std::string_view text, int& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

Engine make_engine() {
  ReconcilerTable table;
  table.push_back(reconcilers::make_sriov_reconciler());
  table.push_back(reconcilers::make_pcie_reconciler());
  Engine engine(std::move(table));
  engine.set_verify_delay(std::chrono::milliseconds(500));  // VFs appear as the kernel probes them
  return engine;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage("a command and a PCI address are needed");
  const std::string command = argv[1];
  InterfaceSpec iface;
  iface.selector = {Selector::Kind::kPci, argv[2], 1};
  iface.origin = {"probe", 1, 1, "interfaces[0]"};
  for (int i = 3; i < argc; i += 2) {
    if (i + 1 >= argc) return usage(std::string("no value for ") + argv[i]);
    int value = 0;
    if (!parse_int(argv[i + 1], value)) return usage(std::string("not a number: ") + argv[i + 1]);
    if (std::string_view(argv[i]) == "--num-vfs") {
      iface.sriov.num_vfs = value;
    } else if (std::string_view(argv[i]) == "--max-read-request") {
      iface.pcie.max_read_request = value;
    } else {
      return usage(std::string("unknown option ") + argv[i]);
    }
  }
  NodeSpec spec;
  spec.interfaces.push_back(iface);
  Engine engine = make_engine();
  Platform platform{HostFs("/")};
  if (command == "observe") {
    spec.interfaces[0].sriov.num_vfs = 0;  // so that both reconcilers observe the function
    spec.interfaces[0].pcie.max_read_request = 4096;
    auto state = engine.observe(platform, &spec, "probe");
    if (!state) {
      std::cerr << state.error().to_string() << "\n";
      return 1;
    }
    const nlohmann::json json = to_json(*state);
    for (const auto& f : json.value("pciFunctions", nlohmann::json::array())) {
      if (f.value("pci", "") == argv[2]) std::cout << f.dump(2) << "\n";
    }
    return 0;
  }
  if (command != "plan" && command != "apply") return usage("unknown command " + command);
  Report report;
  if (command == "plan") {
    auto state = engine.observe(platform, &spec, "probe");
    if (!state) {
      std::cerr << state.error().to_string() << "\n";
      return 1;
    }
    report = engine.plan(spec, *state);
  } else {
    report = engine.apply(platform, spec, "probe");
  }
  std::cout << to_json(report).dump(2) << "\n";
  const bool failed = !report.errors.empty() || report.count(ChangeStatus::kFailed) > 0 ||
                      (command == "plan" && !report.changes.empty());
  return failed ? 2 : 0;
}
