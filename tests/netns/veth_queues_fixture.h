// SPDX-License-Identifier: Apache-2.0
// A network namespace with the veth pair veth0/veth1 created with 4 queues each way (`ip link add
// ... numtxqueues 4 numrxqueues 4`): with IFLA_NUM_{TX,RX}_QUEUES given, veth_init_queues
// (drivers/net/veth.c) leaves the real counts at the numbers allocated, and veth_set_channels
// changes them up to those. queues() reads them as the kernel lists them in the namespace's
// /sys/class/net/veth0/queues (netif_set_real_num_{rx,tx}_queues adds and removes rx-N, tx-N).
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>

#include "tests/netns/netns_fixture.h"

namespace rdmactl::test {

class VethQueuesTest : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::string err;
    ASSERT_EQ(ns().ip({"link", "add", "veth0", "numtxqueues", "4", "numrxqueues", "4", "type", "veth", "peer",
                       "name", "veth1", "numtxqueues", "4", "numrxqueues", "4"},
                      nullptr, &err),
              0)
        << err;
  }

  // The real queues of veth0 as the kernel lists them: {rx, tx}.
  std::pair<int, int> queues() {
    std::string out;
    EXPECT_EQ(ns().exec({"ls", "/sys/class/net/veth0/queues"}, &out), 0);
    std::istringstream in(out);
    int rx = 0, tx = 0;
    for (std::string entry; in >> entry;) {
      if (entry.rfind("rx-", 0) == 0) ++rx;
      if (entry.rfind("tx-", 0) == 0) ++tx;
    }
    return {rx, tx};
  }
};

}  // namespace rdmactl::test
