// SPDX-License-Identifier: Apache-2.0
// The nvconfig reconciler's tests: the cx6dx-roce fixture (mlx5_0 on 0000:3b:00.0, mlx5_1 on
// 0000:3b:00.1: two functions of one ConnectX-6 Dx) with the fake mstconfig of tests/fake-tools,
// whose parameter types come from mstflint's mlxconfig_host.db (tests/fake-tools/mstconfig-params).
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "reconcilers/nvconfig/nvconfig.h"
#include "tests/unit/reconcilers/fake_tools.h"
#include "tests/unit/reconcilers/fixture_host.h"

namespace rdmactl::test {

inline constexpr const char* kNvBootIdFile = "/proc/sys/kernel/random/boot_id";
inline constexpr const char* kNvStagingFile = "/var/lib/rdmactl/nvconfig.json";
inline constexpr const char* kPf0 = "0000:3b:00.0";
inline constexpr const char* kPf1 = "0000:3b:00.1";

inline InterfaceSpec nv_interface(const std::string& device, NvconfigSpec nvconfig, std::optional<int> num_vfs = {}) {
  InterfaceSpec iface;
  iface.selector.kind = Selector::Kind::kRdmaDevice;
  iface.selector.value = device;
  iface.nvconfig = std::move(nvconfig);
  iface.sriov.num_vfs = num_vfs;
  iface.origin.file = "fabric.yaml";
  return iface;
}

inline NodeSpec nv_spec(std::vector<InterfaceSpec> interfaces) {
  NodeSpec spec;
  spec.interfaces = std::move(interfaces);
  return spec;
}

class NvconfigTest : public ReconcilerOnFixture {
 protected:
  void SetUp() override {
    auto reconciler = reconcilers::make_nvconfig_reconciler();
    reconciler_ = reconciler.get();
    use_fixture("cx6dx-roce", std::move(reconciler));
    tree_.write(kNvBootIdFile, "6c0a4a56-1b1e-4b7e-9d59-2f0c6c1f3a01\n");
  }

  // A function with SR-IOV off, ADVANCED_PCI_SETTINGS off (MAX_ACC_OUT_READ hidden),
  // PF_NUM_OF_VF_VALID off (PF_NUM_OF_VF hidden, as on the ConnectX-4 Lx capture), and more.
  void add_function(const std::string& pci, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"add-device", pci, "ConnectX6DX",
                                     "SRIOV_EN=False(0),False(0),False(0)",
                                     "NUM_OF_VFS=0,0,0",
                                     "PF_NUM_OF_VF_VALID=False(0),False(0),False(0)",
                                     "NUM_PF_MSIX=63,63,63",
                                     "ADVANCED_PCI_SETTINGS=False(0),False(0),False(0)",
                                     "MAX_ACC_OUT_READ=0,0,0",
                                     "ROCE_CONTROL=DEVICE_DEFAULT(0),DEVICE_DEFAULT(0),DEVICE_DEFAULT(0)",
                                     "LINK_TYPE_P1=ETH(2),ETH(2),ETH(2)",
                                     "CNP_DSCP_P1=48,48,48",
                                     "PCI_DOWNSTREAM_PORT_OWNER=Array[0..15],Array[0..15],Array[0..15]",
                                     "PCI_DOWNSTREAM_PORT_OWNER[4]=DEVICE_DEFAULT(0),DEVICE_DEFAULT(0),DEVICE_DEFAULT(0)"};
    args.insert(args.end(), extra.begin(), extra.end());
    tools_.firmware(args);
  }

  DiffResult diff(const NodeSpec& spec) {
    DiffResult out;
    reconciler_->diff(spec, observe(spec), out);
    return out;
  }

  // The one parameter's row as the fake mstconfig now has it: "default current next".
  std::string firmware_row(const std::string& pci, const std::string& param) const {
    std::istringstream file(read_file(tools_.state_dir() + "/devices/" + pci));
    for (std::string line; std::getline(file, line);) {
      if (line.rfind(param + " ", 0) == 0) return line.substr(param.size() + 1);
    }
    return "";
  }

  std::vector<std::string> sets() const {
    std::vector<std::string> out;
    for (const std::string& call : tools_.mstconfig_calls()) {
      if (call.find(" set ") != std::string::npos) out.push_back(call);
    }
    return out;
  }

  static std::string messages(const DiffResult& d) {
    std::string text;
    for (const Error& e : d.errors) text += e.message + "\n";
    return text;
  }

  Reconciler* reconciler_ = nullptr;
  FakeTools tools_;
};

}  // namespace rdmactl::test
