// SPDX-License-Identifier: Apache-2.0
// What the nvconfig reconciler refuses to plan, each a plan error naming the spec entry and what to
// do: a parameter the device does not list (and why MAX_ACC_OUT_READ may be hidden), parameters other
// reconcilers set, read-only ones, a bare array name, a name for a number, SR-IOV values that
// contradict sriov.numVfs, two values for one function or for one device-wide parameter.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/unit/reconcilers/nvconfig_fixture.h"

namespace rdmactl {
namespace reconcilers_nvconfig_refusal_test {

using test::kPf0;
using test::kPf1;
using test::nv_interface;
using test::nv_spec;

class NvconfigRefusalTest : public test::NvconfigTest {
 protected:
  // The plan's only error, with no change planned for it.
  Error only_error(const NodeSpec& spec) {
    const DiffResult plan = diff(spec);
    EXPECT_EQ(plan.errors.size(), 1u) << messages(plan);
    return plan.errors.empty() ? Error{} : plan.errors[0];
  }
};

TEST_F(NvconfigRefusalTest, AParameterTheDeviceDoesNotListIsAskedOnceMoreWithoutIt) {
  add_function(kPf0);
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"FOO_BAR", "1"}, {"ROCE_CONTROL", "ROCE_ENABLE"}})});
  const Error e = only_error(spec);
  EXPECT_EQ(e.kind, ErrorKind::kNotSupported);
  EXPECT_EQ(e.message,
            "0000:3b:00.0 has no firmware parameter FOO_BAR (mstconfig does not list it): `mstconfig -d 0000:3b:00.0 "
            "q` lists those of this adapter and firmware");
  EXPECT_EQ(e.where, "fabric.yaml (rdmaDevice mlx5_0 port 1)");
  EXPECT_EQ(tools_.mstconfig_calls(), (std::vector<std::string>{"-d 0000:3b:00.0 -e q FOO_BAR ROCE_CONTROL",
                                                                 "-d 0000:3b:00.0 -e q ROCE_CONTROL"}));
  const HostState state = observe(spec);
  EXPECT_EQ((*state.find_pci_function(kPf0)->nvconfig)["notListed"], nlohmann::json::parse(R"j(["FOO_BAR"])j"));
}

TEST_F(NvconfigRefusalTest, AParameterHiddenUntilAdvancedPciSettingsSaysSo) {
  add_function(kPf0);
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"MAX_ACC_OUT_READ", "32"}})});
  EXPECT_EQ(only_error(spec).message,
            "0000:3b:00.0 has no firmware parameter MAX_ACC_OUT_READ (mstconfig does not list it): `mstconfig -d "
            "0000:3b:00.0 q` lists those of this adapter and firmware; "
            "MAX_ACC_OUT_READ is listed only while ADVANCED_PCI_SETTINGS is True for the next boot (its dependency in "
            "mstflint's mlxconfig_host.db): add ADVANCED_PCI_SETTINGS: True to this function's nvconfig");
  // Once ADVANCED_PCI_SETTINGS is staged, mstconfig lists it (the dependency reads next-boot values).
  tools_.firmware({"add-device", kPf0, "ConnectX6DX", "ADVANCED_PCI_SETTINGS=False(0),False(0),True(1)",
                   "MAX_ACC_OUT_READ=0,0,0"});
  const DiffResult plan = diff(spec);
  EXPECT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].desired, "32");
}

TEST_F(NvconfigRefusalTest, ParametersOtherReconcilersSetAreRefusedNamingTheirField) {
  add_function(kPf0);
  InterfaceSpec iface = nv_interface("mlx5_0", {{"LINK_TYPE_P1", "IB"}, {"ROCE_CC_PRIO_MASK_P1", "8"},
                                                {"CNP_DSCP_P1", "26"}});
  iface.ecn.cnp_dscp = 26;
  const DiffResult plan = diff(nv_spec({iface}));
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(messages(plan),
            "nvconfig CNP_DSCP_P1 is set through ecn.cnpDscp (another reconciler stages it): set ecn.cnpDscp and "
            "remove CNP_DSCP_P1 from nvconfig\n"
            "nvconfig LINK_TYPE_P1 is set through linkType (another reconciler stages it): set linkType and remove "
            "LINK_TYPE_P1 from nvconfig\n"
            "nvconfig ROCE_CC_PRIO_MASK_P1 is set through ecn.priorities (another reconciler stages it): set "
            "ecn.priorities and remove ROCE_CC_PRIO_MASK_P1 from nvconfig\n");
  EXPECT_TRUE(tools_.mstconfig_calls().empty()) << "a refused parameter is not even asked";

  // Without ecn.cnpDscp, nothing else writes the firmware's CNP DSCP.
  const DiffResult own = diff(nv_spec({nv_interface("mlx5_0", {{"CNP_DSCP_P1", "26"}})}));
  EXPECT_TRUE(own.errors.empty()) << messages(own);
  ASSERT_EQ(own.changes.size(), 1u);
}

TEST_F(NvconfigRefusalTest, AReadOnlyParameterIsRefusedOnlyWhenItWouldChange) {
  add_function(kPf0, {"KEEP_ETH_LINK_UP_P1=True(1),True(1),True(1),RO"});
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"KEEP_ETH_LINK_UP_P1", "False"}})})).message,
            "KEEP_ETH_LINK_UP_P1 of 0000:3b:00.0 is read-only (mstconfig marks it RO: the firmware lets this host "
            "read it, not write it, as on a restricted host of a multi-host adapter, mstprivhost restrict, or a "
            "BlueField host whose Arm side configures it), and it is True(1), not False: set it where it is writable");
  // Already the spec's value: nothing to write, nothing refused (a restricted host's SR-IOV, set
  // by the privileged host).
  const DiffResult same = diff(nv_spec({nv_interface("mlx5_0", {{"KEEP_ETH_LINK_UP_P1", "True"}})}));
  EXPECT_TRUE(same.errors.empty()) << messages(same);
  EXPECT_TRUE(same.changes.empty());
}

TEST_F(NvconfigRefusalTest, ARefusalOfMstflint421SaysTheParameterIsNotWritableHere) {
  // Debian 12's mstflint 4.21 prints no RO and lists the parameter as writable; its set fails with
  // "The Device doesn't support X parameter" (queryParamViews asks for write support).
  std::ofstream(tools_.state_dir() + "/version-4.21").put('\n');
  add_function(kPf0, {"KEEP_ETH_LINK_UP_P1=True(1),True(1),True(1),RO"});
  const NodeSpec spec = nv_spec({nv_interface("mlx5_0", {{"KEEP_ETH_LINK_UP_P1", "False"}})});
  const DiffResult plan = diff(spec);
  ASSERT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 1u);
  const Report applied = engine_->apply(*platform_, spec, "n");
  ASSERT_EQ(applied.changes.size(), 1u);
  const std::string& why = applied.changes[0].error;
  EXPECT_NE(why.find("The Device doesn't support KEEP_ETH_LINK_UP_P1 parameter (mstconfig listed it: the firmware "
                     "does not let this host write it"),
            std::string::npos)
      << why;
}

TEST_F(NvconfigRefusalTest, AnArrayIsSetByElement) {
  add_function(kPf0);
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"PCI_DOWNSTREAM_PORT_OWNER", "HOST_0"}})})).message,
            "PCI_DOWNSTREAM_PORT_OWNER of 0000:3b:00.0 is an array (Array[0..15]): name its elements in nvconfig, "
            "PCI_DOWNSTREAM_PORT_OWNER[0], PCI_DOWNSTREAM_PORT_OWNER[1], ...");
  const NodeSpec element = nv_spec({nv_interface("mlx5_0", {{"PCI_DOWNSTREAM_PORT_OWNER[4]", "HOST_0"}})});
  const Report applied = engine_->apply(*platform_, element, "n");
  ASSERT_TRUE(applied.errors.empty()) << applied.errors[0].to_string();
  EXPECT_EQ(firmware_row(kPf0, "PCI_DOWNSTREAM_PORT_OWNER[4]"), "DEVICE_DEFAULT(0) DEVICE_DEFAULT(0) HOST_0(1)");
}

TEST_F(NvconfigRefusalTest, ANumberParameterGivenANameIsRefused) {
  add_function(kPf0);
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"NUM_PF_MSIX", "True"}})})).message,
            "NUM_PF_MSIX of 0000:3b:00.0 takes a number (mstconfig prints 63), not True");
}

TEST_F(NvconfigRefusalTest, SriovValuesInNvconfigMustAllowNumVfs) {
  add_function(kPf0);
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"SRIOV_EN", "False"}}, 8)})).message,
            "sriov.numVfs 8 needs the firmware's SRIOV_EN True, but nvconfig sets it to False: set SRIOV_EN: True, "
            "or sriov.numVfs: 0");
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"NUM_OF_VFS", "4"}}, 8)})).message,
            "sriov.numVfs 8 needs the firmware's NUM_OF_VFS at least 8, but nvconfig sets it to 4: raise NUM_OF_VFS, "
            "or lower sriov.numVfs");
  // The spec's own values rule when they allow numVfs.
  const DiffResult plan = diff(nv_spec({nv_interface("mlx5_0", {{"NUM_OF_VFS", "16"}, {"SRIOV_EN", "1"}}, 8)}));
  EXPECT_TRUE(plan.errors.empty()) << messages(plan);
  ASSERT_EQ(plan.changes.size(), 2u);
  EXPECT_EQ(plan.changes[0].desired, "16");
  EXPECT_EQ(plan.changes[0].note, "");
  EXPECT_EQ(plan.changes[1].desired, "1");
  // No VFs asked: the firmware is left alone.
  EXPECT_TRUE(diff(nv_spec({nv_interface("mlx5_0", {}, 0)})).changes.empty());
}

TEST_F(NvconfigRefusalTest, OneFunctionOrOneAdapterHasOneValue) {
  add_function(kPf0);
  add_function(kPf1);
  InterfaceSpec by_pci = nv_interface("", {{"ROCE_CONTROL", "ROCE_DISABLE"}});
  by_pci.selector.kind = Selector::Kind::kPci;
  by_pci.selector.value = kPf0;
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"ROCE_CONTROL", "ROCE_ENABLE"}}), by_pci})).message,
            "another interface entry sets ROCE_CONTROL of 0000:3b:00.0 to ROCE_ENABLE, this one to ROCE_DISABLE");
  // NUM_PF_MSIX is device-wide (Global class); ROCE_CONTROL is per function (Per_Host_Per_Function).
  const Error e = only_error(nv_spec({nv_interface("mlx5_0", {{"NUM_PF_MSIX", "32"}, {"ROCE_CONTROL", "ROCE_ENABLE"}}),
                                      nv_interface("mlx5_1", {{"NUM_PF_MSIX", "16"}, {"ROCE_CONTROL", "ROCE_DISABLE"}})}));
  EXPECT_EQ(e.message,
            "NUM_PF_MSIX is one value for the whole adapter (mlxconfig's Global class), but 0000:3b:00.0 is given 32 "
            "and 0000:3b:00.1 16: give every function of the adapter the same value");
  EXPECT_EQ(e.where, "fabric.yaml (rdmaDevice mlx5_1 port 1)");
  // An explicit NUM_OF_VFS on one function below another function's numVfs.
  EXPECT_EQ(only_error(nv_spec({nv_interface("mlx5_0", {{"NUM_OF_VFS", "4"}}), nv_interface("mlx5_1", {}, 8)})).message,
            "NUM_OF_VFS is one value for the whole adapter (mlxconfig's Global class), but 0000:3b:00.0 is given 4 "
            "and 0000:3b:00.1 at least 8 (for sriov.numVfs 8): give every function of the adapter the same value");
}

TEST_F(NvconfigRefusalTest, APerHostOrPerPortParameterHasOneValueForBothFunctions) {
  add_function(kPf0, {"KEEP_ETH_LINK_UP_P1=True(1),True(1),True(1)"});
  add_function(kPf1, {"KEEP_ETH_LINK_UP_P1=True(1),True(1),True(1)"});
  // ADVANCED_PCI_SETTINGS is nv_pci_conf, class Per_Host: TLVConf::getPerHostTypeBe names no function.
  Error e = only_error(nv_spec({nv_interface("mlx5_0", {{"ADVANCED_PCI_SETTINGS", "True"}}),
                                nv_interface("mlx5_1", {{"ADVANCED_PCI_SETTINGS", "False"}})}));
  EXPECT_EQ(e.message,
            "ADVANCED_PCI_SETTINGS is one value for all functions of the adapter on this host (mlxconfig's Per_Host "
            "class), but 0000:3b:00.0 is given True and 0000:3b:00.1 False: give every function of the adapter the "
            "same value");
  EXPECT_EQ(e.where, "fabric.yaml (rdmaDevice mlx5_1 port 1)");
  // KEEP_ETH_LINK_UP_P1 is port 1's (Physical_Port class), which either function reaches.
  e = only_error(nv_spec({nv_interface("mlx5_0", {{"KEEP_ETH_LINK_UP_P1", "True"}}),
                          nv_interface("mlx5_1", {{"KEEP_ETH_LINK_UP_P1", "False"}})}));
  EXPECT_EQ(e.message,
            "KEEP_ETH_LINK_UP_P1 is one value for port 1 of the adapter (mlxconfig's Physical_Port class), but "
            "0000:3b:00.0 is given True and 0000:3b:00.1 False: give every function of the adapter the same value");
}

TEST_F(NvconfigRefusalTest, AFailingQueryIsAnErrorWithMstconfigsMessage) {
  const Error e = only_error(nv_spec({nv_interface("mlx5_0", {{"ROCE_CONTROL", "ROCE_ENABLE"}})}));
  EXPECT_EQ(e.kind, ErrorKind::kPlatform);
  EXPECT_EQ(e.message,
            "cannot read the firmware parameters of 0000:3b:00.0: mstconfig -d 0000:3b:00.0 -e q ROCE_CONTROL exited "
            "with 1: -E- Failed to open the device");
}

}  // namespace reconcilers_nvconfig_refusal_test
}  // namespace rdmactl
