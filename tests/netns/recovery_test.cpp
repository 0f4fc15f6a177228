// SPDX-License-Identifier: Apache-2.0
// The recovery of a killed run, on the real kernel in throwaway namespaces (issue 24): it converges
// whatever the kernel did meanwhile by itself (duplicate address detection), it never replays a
// journal into a namespace that only has its inode number, it finds the journal's netdevs by
// ifindex (a renamed one is restored, one made again under the journaled name is left alone), the
// host lock and the pending journal are the namespace's whatever --root says, rdmactl's own files
// are never opened through a link, and the next run's report says what the recovery did.
//
// The killed runs are `apply --confirm`, SIGKILLed while they wait for the confirmation: every
// change is on the host and the journal stays, as after a crash at the worst moment.
#include <linux/if_addr.h>

#include <nlohmann/json.hpp>

#include "tests/netns/safety_fixture.h"

namespace rdmactl::test {
namespace netns_recovery_test {

class Recovery : public Safety {
 protected:
  std::string journal_file() { return root_.root() + "/var/lib/rdmactl/journal-" + ns().inode() + ".json"; }
  nlohmann::json journal() {
    std::ifstream in(journal_file());
    return nlohmann::json::parse(in, nullptr, false);
  }
  // An apply --confirm of `spec_path`, SIGKILLed once its changes are made and it waits.
  void kill_while_confirming(const std::string& spec_path, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"apply", "-f", spec_path, "--confirm", "60s"};
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t victim = start(args, "victim");
    ASSERT_TRUE(wait_confirming("victim")) << read("victim.err");
    ASSERT_EQ(::kill(victim, SIGKILL), 0);
    ASSERT_EQ(wait_for(victim), 128 + SIGKILL);
    ASSERT_TRUE(fs::exists(journal_file()));
  }
  std::string nothing() {
    const std::string path = root_.root() + "/nothing.yaml";
    std::ofstream(path) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: n\ndefaults:\n"
                           "  selftest: {enabled: false}\n";
    return path;
  }
  // `apply -f SPEC --format json`: its exit code, and its report in `report`.
  int apply_json(const std::string& spec_path, nlohmann::json& report, std::string* err = nullptr,
                 std::vector<std::string> extra = {}) {
    std::string out, ignored;
    std::vector<std::string> args = {"apply", "-f", spec_path, "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const int code = rdmactl(args, &out, err ? err : &ignored);
    report = nlohmann::json::parse(out, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << out;
    return code;
  }
  std::string mac(const std::string& netdev) {
    return ns().ip_json({"link", "show", "dev", netdev})[0]["address"].get<std::string>();
  }
  bool tentative(const std::string& netdev) {
    return ns().ip_json({"-6", "addr", "show", "dev", netdev}).dump().find("tentative") != std::string::npos;
  }
};

// Killed while veth0's link-local address was still in duplicate address detection, the journal
// has it tentative and the kernel's local route of it missing; a second later DAD is over. The
// recovery compares what rdmactl can write back, not what the kernel does by itself: it converges
// (the old code kept the journal for ever, and every later apply exited 1).
TEST_F(Recovery, AKilledApplyJournaledDuringDuplicateAddressDetectionIsRolledBack) {
  // Three DAD probes a second apart: the apply journals well inside them.
  ASSERT_EQ(ns().exec({"sysctl", "-qw", "net.ipv6.conf.veth0.dad_transmits=3"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
  kill_while_confirming(spec(9000, false));
  const nlohmann::json written = journal();
  const std::string snapshot = written["snapshot"].dump();
  bool journaled_tentative = false;
  for (const auto& n : written["snapshot"]["netdevs"]) {
    for (const auto& a : n["addresses"]) {
      if (a["cidr"].get<std::string>().rfind("fe80:", 0) == 0 && (a["flags"].get<unsigned>() & IFA_F_TENTATIVE)) {
        journaled_tentative = true;
      }
    }
  }
  ASSERT_TRUE(journaled_tentative) << "the journal was to be written during DAD: " << snapshot;
  for (int i = 0; i < 100 && tentative("veth0"); ++i) std::this_thread::sleep_for(100ms);
  ASSERT_FALSE(tentative("veth0")) << "DAD did not end within 10 s";

  nlohmann::json report;
  std::string err;
  EXPECT_EQ(apply_json(spec(9000, false), report, &err), 0) << report.dump(1) << err;
  EXPECT_EQ(report["recovery"]["outcome"], "rolled-back") << report.dump(1);
  EXPECT_EQ(report["recovery"]["changes"][0]["status"], "rolled-back") << report.dump(1);
  EXPECT_EQ(report["recovery"]["spec"]["sha256"].get<std::string>().size(), 64u) << report.dump(1);
  EXPECT_EQ(report["changes"][0]["status"], "applied") << report.dump(1);
  EXPECT_FALSE(fs::exists(journal_file()));
  EXPECT_EQ(mtu(), 9000);
  std::string out;
  EXPECT_EQ(rdmactl({"apply", "-f", spec(9000, false)}, &out, &err), 0) << out << err;
  EXPECT_NE(out.find("No drift"), std::string::npos) << out;
}

// A journal that another namespace left under the inode number this one has now (the kernel
// reuses them once a namespace is deleted): its cookie is another namespace's, so it is set aside
// and nothing of it touches this namespace's netdevs. The journal is a real one, made by a run
// killed in a second namespace and moved to this namespace's name, as inode reuse leaves it.
TEST_F(Recovery, AJournalOfAnotherNamespaceWithThisInodeNumberIsSetAsideAndTouchesNothing) {
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
  ASSERT_EQ(ns().ip({"addr", "add", "10.66.0.1/24", "dev", "veth0"}), 0);
  const nlohmann::json links_before = ns().ip_json({"link", "show"});
  const nlohmann::json addresses_before = ns().ip_json({"-4", "addr", "show"});

  std::string other_journal;
  {
    auto other = TestNamespace::create();
    ASSERT_TRUE(other.has_value()) << other.error().to_string();
    ASSERT_TRUE(other->add_veth("veth0", "veth1").has_value());
    ASSERT_EQ(other->ip({"addr", "add", "10.67.0.1/24", "dev", "veth0"}), 0);
    const std::string path = root_.root() + "/other.yaml";
    std::ofstream(path) << "apiVersion: rdmactl/v1\nkind: FabricSpec\nmetadata:\n  name: o\ndefaults:\n"
                           "  interfaces:\n    - name: veth0\n      mtu: 9000\n      state: down\n"
                           "      addresses: [10.68.0.1/24]\n  selftest: {enabled: false}\n";
    std::vector<std::string> args = {RDMACTL_BINARY, "--netns", other->name(), "--node", "safety",
                                     "--root", root_.root(), "apply", "-f", path, "--confirm", "60s"};
    std::vector<char*> cargv;
    for (const std::string& a : args) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string errfile = root_.root() + "/victim.err";
    posix_spawn_file_actions_addopen(&actions, 2, errfile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t victim = 0;
    ASSERT_EQ(posix_spawn(&victim, cargv[0], &actions, nullptr, cargv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_TRUE(wait_confirming("victim")) << read("victim.err");
    ::kill(victim, SIGKILL);
    wait_for(victim);
    other_journal = root_.root() + "/var/lib/rdmactl/journal-" + other->inode() + ".json";
    ASSERT_TRUE(fs::exists(other_journal));
    fs::remove(std::string("/run/rdmactl/journal-") + other->inode());  // its marker: the host's /run
  }  // the other namespace is deleted here; its inode number may be anyone's now
  fs::rename(other_journal, journal_file());

  nlohmann::json report;
  std::string err;
  EXPECT_EQ(apply_json(nothing(), report, &err), 0) << report.dump(1) << err;
  EXPECT_EQ(report["recovery"]["outcome"], "set-aside") << report.dump(1);
  EXPECT_NE(report["recovery"]["reason"].get<std::string>().find("another network namespace (cookie"),
            std::string::npos)
      << report.dump(1);
  EXPECT_EQ(ns().ip_json({"link", "show"}), links_before);
  EXPECT_EQ(ns().ip_json({"-4", "addr", "show"}), addresses_before);
  EXPECT_FALSE(fs::exists(journal_file()));
  bool set_aside = false;
  for (const auto& e : fs::directory_iterator(root_.root() + "/var/lib/rdmactl")) {
    if (e.path().filename().string().find(".set-aside-") != std::string::npos) set_aside = true;
  }
  EXPECT_TRUE(set_aside) << "the journal is kept beside, for whoever wants to read it";
}

// The same journal, but from before the last boot (its boot id another one): set aside too. And a
// journal of an older rdmactl, which recorded no namespace: its netdevs are matched by ifindex,
// kind and MAC, and this namespace's veth0 (another MAC) is not the journaled one: left alone.
TEST_F(Recovery, AJournalFromAnotherBootOrWhoseNetdevsAreOthersTouchesNothing) {
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
  kill_while_confirming(spec(9000, false));
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "mtu", "1400"}), 0);  // someone's since: must stay
  nlohmann::json written = journal();
  written["namespace"]["bootId"] = "00000000-0000-4000-8000-000000000000";
  std::ofstream(journal_file()) << written.dump();
  nlohmann::json report;
  std::string err;
  EXPECT_EQ(apply_json(nothing(), report, &err), 0) << report.dump(1) << err;
  EXPECT_EQ(report["recovery"]["outcome"], "set-aside") << report.dump(1);
  EXPECT_NE(report["recovery"]["reason"].get<std::string>().find("before the host last booted"), std::string::npos)
      << report.dump(1);
  EXPECT_EQ(mtu(), 1400);

  // An older rdmactl's journal (no namespace), whose veth0 was deleted and made again.
  kill_while_confirming(spec(9000, false));
  written = journal();
  written.erase("namespace");
  std::ofstream(journal_file()) << written.dump();
  const std::string old_mac = mac("veth0");
  ASSERT_EQ(ns().ip({"link", "del", "veth0"}), 0);
  ASSERT_TRUE(ns().add_veth("veth0", "veth1").has_value());
  ASSERT_NE(mac("veth0"), old_mac);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "mtu", "1400"}), 0);
  EXPECT_EQ(apply_json(nothing(), report, &err), 0) << report.dump(1) << err;
  EXPECT_EQ(report["recovery"]["outcome"], "rolled-back") << report.dump(1);
  ASSERT_EQ(report["recovery"]["notes"].size(), 1u) << report.dump(1);
  EXPECT_NE(report["recovery"]["notes"][0].get<std::string>().find("netdev/veth0 (ifindex"), std::string::npos)
      << report.dump(1);
  EXPECT_NE(report["recovery"]["notes"][0].get<std::string>().find("is another one, left alone"), std::string::npos)
      << report.dump(1);
  EXPECT_EQ(mtu(), 1400) << "the new veth0 was 'restored' with the old one's MTU";
  EXPECT_FALSE(fs::exists(journal_file()));
}

// rdmactl never renames a netdev; one renamed after the kill is the same netdev (its ifindex, kind
// and MAC): it is restored under its new name, and the recovery says so (the old code restored it
// and then reported "rollback did not restore").
TEST_F(Recovery, ANetdevRenamedSinceIsRestoredUnderItsNewName) {
  ASSERT_EQ(ns().ip({"link", "set", "veth1", "up"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "up"}), 0);
  kill_while_confirming(spec(9000, false));
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "down"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "veth0", "name", "vethr"}), 0);
  ASSERT_EQ(ns().ip({"link", "set", "vethr", "up"}), 0);
  nlohmann::json report;
  std::string err;
  EXPECT_EQ(apply_json(nothing(), report, &err), 0) << report.dump(1) << err;
  EXPECT_EQ(report["recovery"]["outcome"], "rolled-back") << report.dump(1);
  EXPECT_EQ(report["recovery"]["changes"][0]["resource"], "netdev/vethr") << report.dump(1);
  EXPECT_EQ(report["recovery"]["changes"][0]["status"], "rolled-back") << report.dump(1);
  ASSERT_EQ(report["recovery"]["notes"].size(), 1u) << report.dump(1);
  EXPECT_NE(report["recovery"]["notes"][0].get<std::string>().find("netdev/veth0 is named vethr now"), std::string::npos)
      << report.dump(1);
  EXPECT_EQ(ns().ip_json({"link", "show", "dev", "vethr"})[0]["mtu"], 1500);
  EXPECT_FALSE(fs::exists(journal_file()));
}

// The lock is the namespace's: a second writer with another --root waits for it like any other.
// And a journal left under one --root blocks every other root's apply in that namespace until it
// is rolled back, instead of being undone later over their changes.
TEST_F(Recovery, TheLockAndThePendingJournalAreTheNamespacesWhateverTheRoot) {
  TempTree other;
  state_.write("/units/opensm.block", "");
  const pid_t first = start({"apply", "-f", spec(9000, true)}, "first");
  ASSERT_TRUE(wait_blocked()) << read("first.err");
  std::string out, err;
  const std::vector<std::string> other_root = {RDMACTL_BINARY, "--netns", ns().name(), "--node", "safety",
                                               "--root", other.root(), "apply", "-f", spec(1600, false),
                                               "--lock-timeout", "1s"};
  EXPECT_EQ(ns().run(other_root, &out, &err), 1) << out << err;
  EXPECT_NE(err.find("another rdmactl is changing this host: pid " + std::to_string(first)), std::string::npos) << err;
  fs::remove(state_.root() + "/units/opensm.block");
  EXPECT_EQ(wait_for(first), 0) << read("first.out") << read("first.err");
  EXPECT_EQ(mtu(), 9000);

  kill_while_confirming(spec(1700, false));
  ASSERT_EQ(mtu(), 1700);
  EXPECT_EQ(ns().run(other_root, &out, &err), 1) << out << err;
  EXPECT_NE(err.find("with another --root left its journal " + journal_file()), std::string::npos) << err;
  EXPECT_EQ(mtu(), 1700) << "nothing applied, nothing rolled back by the other root's run";
  EXPECT_EQ(rdmactl({"apply", "-f", nothing()}, &out, &err), 0) << out << err;  // rolls it back
  EXPECT_EQ(mtu(), 9000);
  EXPECT_EQ(ns().run(other_root, &out, &err), 0) << out << err;
  EXPECT_EQ(mtu(), 1600);
}

// rdmactl's own files are never opened through a link: an audit log planted as a link to another
// file gets no line (the apply goes on, and says why it keeps no audit log), a journal directory
// that is a link stops the apply before its first write, and so does a link in the lock's place.
TEST_F(Recovery, OwnFilesAreNeverOpenedThroughALink) {
  root_.write("/victim", "secret\n");
  fs::create_directories(root_.root() + "/var/log/rdmactl");
  fs::create_symlink(root_.root() + "/victim", root_.root() + "/var/log/rdmactl/audit.jsonl");
  std::string out, err;
  EXPECT_EQ(rdmactl({"apply", "-f", spec(9000, false)}, &out, &err), 0) << out << err;
  EXPECT_EQ(read("victim"), "secret\n");
  EXPECT_NE(err.find("audit.jsonl: is a symbolic link"), std::string::npos) << err;

  fs::create_directories(root_.root() + "/elsewhere");
  fs::remove_all(root_.root() + "/var/lib/rdmactl");  // the first apply made it
  fs::create_symlink(root_.root() + "/elsewhere", root_.root() + "/var/lib/rdmactl");
  EXPECT_EQ(rdmactl({"apply", "-f", spec(1600, false)}, &out, &err), 1) << out << err;
  EXPECT_NE(err.find("var/lib/rdmactl: cannot read the journal an interrupted apply may have left: is a symbolic "
                     "link or not a directory"),
            std::string::npos)
      << out << err;
  EXPECT_EQ(mtu(), 9000);
  EXPECT_TRUE(fs::is_empty(root_.root() + "/elsewhere"));
  fs::remove(root_.root() + "/var/lib/rdmactl");

  const std::string lock = "/run/rdmactl/lock-" + ns().inode();
  fs::remove(lock);
  fs::create_symlink(root_.root() + "/victim", lock);
  EXPECT_EQ(rdmactl({"apply", "-f", spec(1600, false)}, &out, &err), 1) << out << err;
  fs::remove(lock);
  EXPECT_NE(err.find("cannot open the host lock"), std::string::npos) << err;
  EXPECT_EQ(read("victim"), "secret\n");
  EXPECT_EQ(mtu(), 9000);
}

// Issue 24 item 7: SIGHUP during the confirm wait is the dropped SSH session --confirm exists for.
// The wait goes on (and says so); `rdmactl confirm` from another session keeps the changes.
TEST_F(Recovery, SighupDuringTheConfirmWaitIsIgnoredAndSaidSo) {
  const pid_t apply = start({"apply", "-f", spec(9000, false), "--confirm", "60s"}, "apply");
  ASSERT_TRUE(wait_confirming("apply")) << read("apply.err");
  ASSERT_EQ(::kill(apply, SIGHUP), 0);
  for (int i = 0; i < 100 && read("apply.err").find("SIGHUP") == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_NE(read("apply.err").find("SIGHUP (the session hung up?) ignored while waiting for `rdmactl confirm`"),
            std::string::npos)
      << read("apply.err");
  EXPECT_EQ(::waitpid(apply, nullptr, WNOHANG), 0) << "SIGHUP ended the wait";
  std::string out, err;
  EXPECT_EQ(rdmactl({"confirm"}, &out, &err), 0) << out << err;
  EXPECT_EQ(wait_for(apply), 0) << read("apply.out") << read("apply.err");
  EXPECT_EQ(mtu(), 9000);
}

}  // namespace netns_recovery_test
}  // namespace rdmactl::test
