// SPDX-License-Identifier: Apache-2.0
// Cost that grows with the host, not its square (issue 15), on the real kernel: what rdmactl asked
// of rtnetlink (netlink_counters, printed by `--log-level debug` at the end of plan and apply) for
// the same spec at a few netdevs and at many. A pass makes the same number of whole-table dumps
// whatever the number of netdevs, and one acknowledged request per change; a rollback's
// per-netdev reads are dumps the kernel filters to that netdev. Results are checked with `ip -j`.
// No time is measured: tests/bench/run.sh prints the figures.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/netns/netns_fixture.h"
#include "tests/unit/test_tree.h"

namespace rdmactl::test {
namespace netns_scale_test {

using nlohmann::json;

std::string binary_under_test() {
  const char* other = std::getenv("RDMACTL_BINARY_UNDER_TEST");
  return other != nullptr && *other != '\0' ? other : RDMACTL_BINARY;
}

struct Asked {
  long whole = -1;
  long one_netdev = -1;
  long requests = -1;
};

// The last "rtnetlink: W whole dumps, F one-netdev dumps, R requests" line of a debug log.
Asked asked_of(const std::string& log) {
  static const std::regex kLine(R"(rtnetlink: (\d+) whole dumps, (\d+) one-netdev dumps, (\d+) requests)");
  Asked out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kLine); it != std::sregex_iterator(); ++it) {
    out = {std::stol((*it)[1]), std::stol((*it)[2]), std::stol((*it)[3])};
  }
  return out;
}

class Scale : public NetnsTest {
 protected:
  // `count` veth pairs <prefix>N / <prefix>pN, and a spec giving each <prefix>N MTU 9000, up and
  // the address 10.<subnet>.N.<host>/24.
  std::string make(const std::string& prefix, int count, int subnet, int host, bool extra_sysctl = false) {
    std::vector<std::string> batch;
    for (int i = 0; i < count; ++i) {
      batch.push_back("link add " + prefix + std::to_string(i) + " type veth peer name " + prefix + "p" + std::to_string(i));
    }
    if (auto r = ns().ip_batch(batch); !r) ADD_FAILURE() << r.error().to_string();
    return spec(prefix, count, subnet, host, extra_sysctl);
  }

  std::string spec(const std::string& prefix, int count, int subnet, int host, bool extra_sysctl) {
    std::string text = "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata: {name: scale}\ndefaults:\n"
                       "  selftest: {enabled: false}\n  interfaces:\n";
    for (int i = 0; i < count; ++i) {
      text += "    - {name: " + prefix + std::to_string(i) + ", mtu: 9000, state: up, addresses: [10." +
              std::to_string(subnet) + "." + std::to_string(i) + "." + std::to_string(host) + "/24]}\n";
    }
    // The kernel refuses tcp_ecn 7 (proc_dointvec_minmax, 0..2): the last change fails.
    if (extra_sysctl) text += "  sysctl:\n    net.ipv4.tcp_ecn: \"7\"\n";
    const std::string path = root_.root() + "/" + prefix + std::to_string(host) + ".yaml";
    std::ofstream(path) << text;
    return path;
  }

  int rdmactl(const std::vector<std::string>& args, std::string* out, std::string* err) {
    // The host's own files (no --root): the sysctl is the namespace's /proc/sys, the lock and the
    // journal are per namespace.
    std::vector<std::string> argv = {binary_under_test(), "--netns", ns().name(), "--node", "scale",
                                     "--log-level", "debug"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, out, err);
  }

  // Every <prefix>N as the spec says (or, `converged` false, as created: 1500, down, no address).
  void expect_netdevs(const std::string& prefix, int count, int subnet, int host, bool converged) {
    const json links = ns().ip_json({"link", "show"});
    const json addresses = ns().ip_json({"-4", "addr", "show"});
    for (int i = 0; i < count; ++i) {
      const std::string name = prefix + std::to_string(i);
      bool found = false;
      for (const json& l : links) {
        if (l.value("ifname", "") != name) continue;
        found = true;
        EXPECT_EQ(l["mtu"], converged ? 9000 : 1500) << name;
        const json flags = l["flags"];
        const bool up = std::find(flags.begin(), flags.end(), "UP") != flags.end();
        EXPECT_EQ(up, converged) << name;
      }
      EXPECT_TRUE(found) << name;
      std::vector<std::string> local;
      for (const json& a : addresses) {
        if (a.value("ifname", "") != name) continue;
        for (const json& info : a["addr_info"]) local.push_back(info["local"].get<std::string>());
      }
      const std::string wanted = "10." + std::to_string(subnet) + "." + std::to_string(i) + "." + std::to_string(host);
      if (converged) {
        EXPECT_EQ(local, std::vector<std::string>{wanted}) << name;
      } else {
        EXPECT_TRUE(local.empty()) << name;
      }
    }
  }

  TempTree root_;  // the specs
};

TEST_F(Scale, APassMakesTheSameDumpsForFourNetdevsAsForFortyEight) {
  const std::string few = make("s", 4, 31, 1);
  const std::string many = make("m", 48, 32, 1);
  std::string out, err;
  ASSERT_EQ(rdmactl({"apply", "-f", few}, &out, &err), 0) << out << err;
  const Asked small = asked_of(err);
  ASSERT_EQ(rdmactl({"apply", "-f", many}, &out, &err), 0) << out << err;
  const Asked large = asked_of(err);
  ASSERT_GE(small.whole, 0) << "no rtnetlink line in the debug log: " << err;
  // MTU, state and address of each: three acknowledged requests a netdev, nothing else.
  EXPECT_EQ(small.requests, 3 * 4);
  EXPECT_EQ(large.requests, 3 * 48);
  EXPECT_EQ(large.whole, small.whole) << "a dump per netdev: 4 netdevs took " << small.whole << ", 48 took "
                                      << large.whole;
  EXPECT_EQ(large.one_netdev, small.one_netdev);
  // Observe, the snapshot's routes, the addresses batch's fresh read, verify and its side effects.
  EXPECT_LE(large.whole, 8) << err;
  expect_netdevs("s", 4, 31, 1, true);
  expect_netdevs("m", 48, 32, 1, true);

  // A plan of the converged host: one link dump and one address dump, at any size.
  ASSERT_EQ(rdmactl({"plan", "-f", many}, &out, &err), 0) << out << err;
  const Asked plan = asked_of(err);
  EXPECT_EQ(plan.whole, 2) << err;
  EXPECT_EQ(plan.requests, 0) << err;
  // A no-op apply writes nothing.
  ASSERT_EQ(rdmactl({"apply", "-f", many}, &out, &err), 0) << out << err;
  EXPECT_EQ(asked_of(err).requests, 0) << err;
}

// The kernel refuses the last change (a sysctl) after every netdev was changed: the rollback puts
// each netdev back, and its whole dumps do not grow with the number of netdevs (its per-netdev
// reads are the kernel's filtered dumps).
TEST_F(Scale, ARollbackOfManyNetdevsRestoresEachWithoutADumpPerNetdev) {
  const std::string few = make("r", 4, 33, 2, true);
  const std::string many = make("q", 40, 34, 2, true);
  std::string out, err;
  ASSERT_EQ(rdmactl({"apply", "-f", few, "--format", "json"}, &out, &err), 1) << out << err;
  const Asked small = asked_of(err);
  EXPECT_EQ(json::parse(out)["summary"]["rolledBack"], 3 * 4) << out;
  ASSERT_EQ(rdmactl({"apply", "-f", many, "--format", "json"}, &out, &err), 1) << out << err;
  const Asked large = asked_of(err);
  const json report = json::parse(out);
  EXPECT_EQ(report["summary"]["rolledBack"], 3 * 40) << out;
  EXPECT_EQ(report["summary"]["failed"], 1) << out;  // the sysctl
  EXPECT_EQ(large.whole, small.whole) << "4 netdevs: " << small.whole << " whole dumps, 40: " << large.whole;
  EXPECT_LE(large.one_netdev, 4 * 40) << err;
  expect_netdevs("r", 4, 33, 2, false);
  expect_netdevs("q", 40, 34, 2, false);
}

}  // namespace netns_scale_test
}  // namespace rdmactl::test
