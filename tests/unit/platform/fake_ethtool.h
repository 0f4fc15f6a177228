// SPDX-License-Identifier: Apache-2.0
// A model of the kernel's ethtool generic netlink family for tests of EthtoolNetlink and the
// ethtool reconciler: CTRL_CMD_GETFAMILY as net/netlink/genetlink.c answers it, and
// ETHTOOL_MSG_{RINGS,CHANNELS,PAUSE}_{GET,SET} as net/ethtool/{netlink,rings,channels,pause}.c
// do, with three drivers behind them, each rule beside a comment naming the function it follows:
//   - veth (drivers/net/veth.c): get/set_channels only; rx/tx counts with the numbers of queues
//     the link was created with as maxima; veth_set_channels refuses rx or tx 0.
//   - netdevsim (drivers/net/netdevsim/ethtool.c, 6.1): rings of maximum 4096 each, starting at 0;
//     combined channels up to the bus device's num_queues; pause without autoneg.
//   - mlx5 (drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c): rx and tx rings rounded up to a
//     power of two, tx at least 64; combined channels only, not 0; pause without autoneg.
// Pause statistics (ETHTOOL_FLAG_STATS on ETHTOOL_MSG_PAUSE_GET): each driver's get_pause_stats
// fills what it has (mlx5e_stats_pause_get: both, from the 802.3 counters; nsim_get_pause_stats:
// rx 1 and tx 2, each when its debugfs report_stats_rx/tx is set; veth: no pause op at all), and
// pause_put_stats puts only what was filled. A kernel older than the flag refuses it.
// Left out: the RSS indirection table, ntuple rules and AF_XDP checks of ethnl_set_channels
// (nothing here configures them), notifications, dumps, ETHTOOL_A_PAUSE_STATS_SRC requests, and
// the other statistics (ETHTOOL_MSG_STATS_GET).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/platform/mnl.h"
#include "tests/unit/platform/scripted_kernel.h"

namespace rdmactl::test {

struct FakeEthtoolDevice {
  enum class Driver { kVeth, kNetdevsim, kMlx5 };
  int ifindex = 0;
  std::string name;
  Driver driver = Driver::kVeth;
  // struct ethtool_ringparam
  uint32_t rx = 0, rx_max = 0, rx_mini = 0, rx_mini_max = 0, rx_jumbo = 0, rx_jumbo_max = 0, tx = 0, tx_max = 0;
  // struct ethtool_channels
  uint32_t rx_count = 0, max_rx = 0, tx_count = 0, max_tx = 0, other_count = 0, max_other = 0,
           combined_count = 0, max_combined = 0;
  // struct ethtool_pauseparam
  bool autoneg = false, rx_pause = false, tx_pause = false;
  // struct ethtool_pause_stats as get_pause_stats leaves it: nullopt is ETHTOOL_STAT_NOT_SET.
  std::optional<uint64_t> tx_pause_frames, rx_pause_frames;
  int driver_sets = 0;  // calls of the driver's set_* op
};

class FakeEthtoolKernel {
 public:
  static constexpr uint32_t kPortId = 4343;
  uint16_t family_id = 0x1c;
  bool has_family = true;       // CONFIG_ETHTOOL_NETLINK
  bool caller_is_admin = true;  // CAP_NET_ADMIN (the SETs are GENL_UNS_ADMIN_PERM)
  bool knows_stats_flag = true;  // ETHTOOL_FLAG_STATS (pause statistics)

  FakeEthtoolDevice& add_veth(int ifindex, const std::string& name, uint32_t queues);
  FakeEthtoolDevice& add_netdevsim(int ifindex, const std::string& name, uint32_t num_queues);
  // netdevsim with its debugfs ethtool/pause/report_stats_rx and _tx.
  FakeEthtoolDevice& add_netdevsim(int ifindex, const std::string& name, uint32_t num_queues, bool report_stats_rx,
                                   bool report_stats_tx);
  FakeEthtoolDevice& add_mlx5(int ifindex, const std::string& name, uint32_t max_channels);
  FakeEthtoolDevice& device(const std::string& name);

  MnlSocket connect();
  // The requests received, in order (their bytes).
  std::vector<Bytes> requests;
  // How many SET requests of genetlink command `cmd` reached the family.
  size_t count(uint8_t cmd) const;

 private:
  std::vector<Bytes> answer(const nlmsghdr* request);
  std::vector<FakeEthtoolDevice> devices_;
};

}  // namespace rdmactl::test
