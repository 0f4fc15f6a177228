// SPDX-License-Identifier: Apache-2.0
// The writer's guarantees through the binary, on the real kernel in a throwaway namespace: one
// writer per host (the lock, with concurrent applies), a run killed half-way rolled back by the
// next one (the journal), SIGTERM rolling back, apply --confirm and rdmactl confirm, and the audit
// log. The host is a veth pair for rtnetlink plus, under --root, the cx7-ib fixture with Debian's
// OpenSM, whose fake systemctl can hold `enable` until the test lets it go: a breakpoint half-way
// through an apply (the MTU change is made, the SM change is in progress).
#include "tests/netns/safety_fixture.h"

namespace rdmactl::test {
namespace netns_safety_test {

TEST_F(Safety, ASecondWriterWaitsThenFailsNamingTheHolder) {
  state_.write("/units/opensm.block", "");
  const pid_t first = start({"apply", "-f", spec(9000, true)}, "first");
  ASSERT_TRUE(wait_blocked()) << read("first.err");
  std::string out, err;
  EXPECT_EQ(rdmactl({"apply", "-f", spec(1600, false), "--lock-timeout", "1s"}, &out, &err), 1) << out << err;
  EXPECT_NE(err.find("another rdmactl is changing this host: pid " + std::to_string(first) + " (rdmactl"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("apply -f"), std::string::npos) << err;
  // --lock-timeout 0 fails at once, as its help says.
  EXPECT_EQ(rdmactl({"apply", "-f", spec(1600, false), "--lock-timeout", "0"}, &out, &err), 1) << out << err;
  EXPECT_NE(err.find("not waiting (--lock-timeout 0)"), std::string::npos) << err;
  // plan takes no lock.
  EXPECT_EQ(rdmactl({"plan", "-f", spec(1600, false)}, &out, &err), 2) << out << err;
  fs::remove(state_.root() + "/units/opensm.block");
  EXPECT_EQ(wait_for(first), 0) << read("first.out") << read("first.err");
  EXPECT_EQ(mtu(), 9000);
}

TEST_F(Safety, ConcurrentAppliesAreSerializedAndEachConverges) {
  // Twenty rounds of two applies at once with different MTUs: both succeed, one after the other,
  // and the host ends as the one that ran last says (no mix, no undoing of verified changes).
  for (int round = 0; round < 20; ++round) {
    const pid_t a = start({"apply", "-f", spec(9000, false)}, "a");
    const pid_t b = start({"apply", "-f", spec(1600, false)}, "b");
    const int ra = wait_for(a, 60s);
    const int rb = wait_for(b, 60s);
    ASSERT_EQ(ra, 0) << "round " << round << ": " << read("a.out") << read("a.err");
    ASSERT_EQ(rb, 0) << "round " << round << ": " << read("b.out") << read("b.err");
    const int now = mtu();
    ASSERT_TRUE(now == 9000 || now == 1600) << now;
    std::string out;
    ASSERT_EQ(rdmactl({"plan", "-f", spec(now, false)}, &out), 0) << "round " << round << ": " << out;
  }
}

TEST_F(Safety, ARunKilledHalfWayIsRolledBackByTheNext) {
  const int before = mtu();
  state_.write("/units/opensm.block", "");
  const pid_t victim = start({"apply", "-f", spec(9000, true)}, "victim");
  ASSERT_TRUE(wait_blocked()) << read("victim.err");
  EXPECT_EQ(mtu(), 9000) << "the MTU change was made before the breakpoint";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_EQ(wait_for(victim), 128 + SIGKILL);
  EXPECT_TRUE(journal_exists());
  fs::remove(state_.root() + "/units/opensm.block");  // the orphaned systemctl finishes its start
  for (int i = 0; i < 200 && state_.read("/units/opensm.active") != "active\n"; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_EQ(state_.read("/units/opensm.active"), "active\n") << "the killed run's systemctl went on";

  // The next run (with a spec that changes nothing) rolls the killed one back before anything else.
  std::string out, err;
  const std::string nothing = root_.root() + "/nothing.yaml";
  std::ofstream(nothing) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: n\ndefaults:\n"
                            "  selftest: {enabled: false}\n";
  EXPECT_EQ(rdmactl({"apply", "-f", nothing}, &out, &err), 0) << out << err;
  // Its report says so (the report of the run after a recovery used to leave the recovery out).
  EXPECT_NE(out.find("Before this run: rolled back what the interrupted run pid " + std::to_string(victim)),
            std::string::npos)
      << out << err;
  EXPECT_EQ(mtu(), before);
  EXPECT_EQ(state_.read("/units/opensm.state"), "disabled\n") << err << state_.read("/calls.log");
  EXPECT_FALSE(journal_exists());
}

// Issue 13 items 3 and 4 together: a run killed after it replaced veth0's addresses took with them
// a static route whose prefsrc was the old primary (fib_sync_down_addr) and an address with
// noprefixroute. The killed run's reconcilers and their snapshots are gone with it; the next run
// writes the journal's reverts, which restore veth0 from the snapshot the journal kept: the
// addresses with their flag and order, and the route. The engine's comparison with that snapshot
// afterwards then finds nothing left to put back. Checked with `ip -j`, exactly as before.
TEST_F(Safety, AKilledRunsAddressesComeBackWithTheirFlagsAndRoutesFromTheJournalsSnapshot) {
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "10.77.0.1/24", "dev", "veth0"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "10.79.0.1/24", "dev", "veth0", "noprefixroute"}), 0);
  ASSERT_EQ(ns().ip({"route", "add", "10.78.0.0/16", "via", "10.77.0.254", "dev", "veth0", "src", "10.77.0.1",
                     "metric", "7", "proto", "static"}),
            0);
  const nlohmann::json addresses_before = ns().ip_json({"-4", "addr", "show", "dev", "veth0"})[0]["addr_info"];
  const nlohmann::json routes_before = ns().ip_json({"-4", "route", "show", "table", "all"});
  ASSERT_NE(routes_before.dump().find("10.78.0.0/16"), std::string::npos) << routes_before.dump();

  const std::string path = root_.root() + "/addresses-sm.yaml";
  std::ofstream(path) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: safety\ndefaults:\n"
                         "  interfaces:\n    - name: veth0\n      addresses: [10.77.0.2/24]\n"
                         "  subnetManager: {enabled: true, priority: 15, port: {rdmaDevice: mlx5_0, port: 1}}\n"
                         "  selftest: {enabled: false}\n";
  state_.write("/units/opensm.block", "");
  const pid_t victim = start({"apply", "-f", path}, "victim");
  ASSERT_TRUE(wait_blocked()) << read("victim.err");
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_EQ(wait_for(victim), 128 + SIGKILL);
  const std::string half = ns().ip_json({"-4", "route", "show", "table", "all"}).dump();
  EXPECT_EQ(half.find("10.78.0.0/16"), std::string::npos) << "removing 10.77.0.1 took the route with it: " << half;
  fs::remove(state_.root() + "/units/opensm.block");
  for (int i = 0; i < 200 && state_.read("/units/opensm.active") != "active\n"; ++i) std::this_thread::sleep_for(50ms);

  std::string out, err;
  const std::string nothing = root_.root() + "/nothing.yaml";
  std::ofstream(nothing) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: n\ndefaults:\n"
                            "  selftest: {enabled: false}\n";
  EXPECT_EQ(rdmactl({"apply", "-f", nothing}, &out, &err), 0) << out << err;
  EXPECT_EQ(err.find("putting them back from the snapshot"), std::string::npos)
      << "the reverts restore from the journal's snapshot themselves, flag and route included: " << err;
  EXPECT_NE(err.find("revert netdev/veth0 addresses"), std::string::npos) << err;
  EXPECT_EQ(ns().ip_json({"-4", "addr", "show", "dev", "veth0"})[0]["addr_info"], addresses_before);
  EXPECT_EQ(ns().ip_json({"-4", "route", "show", "table", "all"}), routes_before);
  EXPECT_FALSE(journal_exists());
}

// Verify compares the whole of every netdev the plan touched: taking veth0 down (the spec's only
// change) drops the static route through it (fib_disable_ip). Nothing the spec names differs, so
// the apply succeeds, and the report says what else changed instead of leaving it to be found.
TEST_F(Safety, AVerifiedApplyReportsWhatTheKernelChangedBeyondTheSpec) {
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "10.77.0.1/24", "dev", "veth0"}), 0);
  ASSERT_EQ(ns().ip({"route", "add", "10.78.0.0/16", "via", "10.77.0.254", "dev", "veth0", "proto", "static"}), 0);
  const std::string path = root_.root() + "/down.yaml";
  std::ofstream(path) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: safety\ndefaults:\n"
                         "  interfaces:\n    - name: veth0\n      state: down\n  selftest: {enabled: false}\n";
  std::string out, err;
  ASSERT_EQ(rdmactl({"apply", "-f", path, "--format", "json"}, &out, &err), 0) << out << err;
  const nlohmann::json report = nlohmann::json::parse(out);
  ASSERT_TRUE(report["sideEffects"].is_array()) << out;
  const std::string effects = report["sideEffects"].dump();
  EXPECT_NE(effects.find("route 10.78.0.0/16 via 10.77.0.254 dev veth0"), std::string::npos) << effects;
  EXPECT_NE(effects.find("is gone"), std::string::npos) << effects;
  EXPECT_EQ(effects.find("state"), std::string::npos) << "the state change is the spec's, not a side effect: " << effects;
  EXPECT_EQ(ns().ip_json({"-4", "route", "show", "10.78.0.0/16"}).size(), 0u);

  // Nothing more to do: the next apply has no change and so no side effect to report.
  ASSERT_EQ(rdmactl({"apply", "-f", path, "--format", "json"}, &out, &err), 0) << out << err;
  EXPECT_EQ(nlohmann::json::parse(out)["sideEffects"], nlohmann::json::array()) << out;
}

TEST_F(Safety, AKilledRunIsKeptAndReportedWithKeepInterrupted) {
  state_.write("/units/opensm.block", "");
  const pid_t victim = start({"apply", "-f", spec(9000, true)}, "victim");
  ASSERT_TRUE(wait_blocked());
  ::kill(victim, SIGKILL);
  wait_for(victim);
  fs::remove(state_.root() + "/units/opensm.block");
  std::string out, err;
  EXPECT_EQ(rdmactl({"apply", "-f", spec(9000, false), "--keep-interrupted"}, &out, &err), 0) << out << err;
  EXPECT_NE(out.find("Before this run: kept as it was left by the interrupted run"), std::string::npos) << out;
  // The report says what the killed run did, as the host shows it: the MTU was written before it
  // was killed (the subnet manager's start blocked). The journal is gone: the next run has no
  // recovery to report.
  EXPECT_NE(out.find("mtu: 1500 -> 9000  (applied"), std::string::npos) << out;
  std::string json;
  EXPECT_EQ(rdmactl({"apply", "-f", spec(9000, false), "--format", "json"}, &json, &err), 0) << json << err;
  EXPECT_EQ(json.find("\"recovery\""), std::string::npos) << "no journal left, no recovery: " << json;
  EXPECT_EQ(mtu(), 9000);
  EXPECT_FALSE(journal_exists());
}

TEST_F(Safety, SigtermFinishesTheCurrentChangeRollsBackAndExits1) {
  const int before = mtu();
  state_.write("/units/opensm.block", "");
  const pid_t run = start({"apply", "-f", spec(9000, true), "--format", "json"}, "run");
  ASSERT_TRUE(wait_blocked());
  ASSERT_EQ(::kill(run, SIGTERM), 0);
  std::this_thread::sleep_for(200ms);
  fs::remove(state_.root() + "/units/opensm.block");
  EXPECT_EQ(wait_for(run), 1) << read("run.out") << read("run.err");
  const auto report = nlohmann::json::parse(read("run.out"));
  EXPECT_TRUE(report["errors"].dump().find("interrupted by SIGTERM") != std::string::npos) << report.dump(2);
  EXPECT_EQ(mtu(), before);
  EXPECT_EQ(state_.read("/units/opensm.state"), "disabled\n") << "the change in progress finished, then was reverted";
  EXPECT_FALSE(journal_exists());
}

TEST_F(Safety, ApplyConfirmKeepsConfirmedChangesAndRevertsTheOthers) {
  const int before = mtu();
  const pid_t confirmed = start({"apply", "-f", spec(9000, false), "--confirm", "60s"}, "confirmed");
  // Once applied, it waits: confirm from another process.
  ASSERT_TRUE(wait_confirming("confirmed")) << read("confirmed.err");
  // The command it prints, run as printed, reaches this apply's journal (same --root and --netns).
  const std::string said = read("confirmed.err");
  const auto from = said.find("run `") + 5;
  const std::string command = said.substr(from, said.find('`', from) - from);
  EXPECT_EQ(command, "rdmactl --root " + root_.root() + " --netns " + ns().name() + " confirm");
  std::vector<std::string> words;
  std::istringstream split(command);
  for (std::string word; split >> word;) words.push_back(word == "rdmactl" ? RDMACTL_BINARY : word);
  std::string out, err;
  EXPECT_EQ(ns().run(words, &out, &err), 0) << command << "\n" << out << err;
  EXPECT_EQ(wait_for(confirmed), 0) << read("confirmed.out") << read("confirmed.err");
  EXPECT_EQ(mtu(), 9000);
  EXPECT_EQ(rdmactl({"confirm"}, &out, &err), 1) << "nothing is waiting any more";

  // Not confirmed: reverted at the deadline, exit 1.
  const pid_t lapsed = start({"apply", "-f", spec(1600, false), "--confirm", "2s", "--format", "json"}, "lapsed");
  EXPECT_EQ(wait_for(lapsed), 1) << read("lapsed.out") << read("lapsed.err");
  EXPECT_EQ(mtu(), 9000) << "back to the value before the unconfirmed apply";
  EXPECT_NE(read("lapsed.out").find("not confirmed (rdmactl confirm) within 2 s"), std::string::npos)
      << read("lapsed.out");
  EXPECT_FALSE(journal_exists());

  // SIGTERM during the wait: reverted, exit 1, and the report names the signal, not a deadline.
  const pid_t stopped = start({"apply", "-f", spec(1600, false), "--confirm", "60s"}, "stopped");
  ASSERT_TRUE(wait_confirming("stopped")) << read("stopped.err");
  ::kill(stopped, SIGTERM);
  EXPECT_EQ(wait_for(stopped), 1) << read("stopped.out") << read("stopped.err");
  EXPECT_EQ(mtu(), 9000);
  EXPECT_NE(read("stopped.out").find("stopped by SIGTERM while waiting for `rdmactl confirm`: every change was reverted"),
            std::string::npos)
      << read("stopped.out");
  EXPECT_FALSE(journal_exists());
  (void)before;
}

TEST_F(Safety, EveryWriteIsAuditedAsOneJsonLine) {
  std::string out, err;
  ASSERT_EQ(rdmactl({"apply", "-f", spec(9000, false)}, &out, &err), 0) << out << err;
  const std::string log = read("var/log/rdmactl/audit.jsonl");
  std::istringstream lines(log);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line)) << log;
  const auto entry = nlohmann::json::parse(line);
  EXPECT_EQ(entry["resource"], "netdev/veth0");
  EXPECT_EQ(entry["field"], "mtu");
  EXPECT_EQ(entry["new"], 9000);
  EXPECT_EQ(entry["action"], "apply");
  EXPECT_EQ(entry["result"], "ok");
  EXPECT_EQ(entry["node"], "safety");
  EXPECT_EQ(entry["who"].get<std::string>().rfind("cli:", 0), 0u) << entry.dump();
  EXPECT_EQ(entry.value("command", ""), "rdmactl --netns " + ns().name() + " --node safety --root " + root_.root() +
                                            " apply -f " + spec(9000, false))
      << entry.dump();
  EXPECT_FALSE(std::getline(lines, line)) << "one write, one line: " << log;
}

}  // namespace netns_safety_test
}  // namespace rdmactl::test
