// SPDX-License-Identifier: Apache-2.0
// How much an observe costs through RouteSocket compared with running iproute2 and parsing its JSON.
//
// In a throwaway namespace with kPairs veth pairs (all up, one IPv4 and one IPv6 address each), it
// times RouteSocket::dump_links + dump_addresses against `ip -j link show` + `ip -j addr show`
// (process start, kernel dump and JSON parse: what the agent would pay if it shelled out) and
// prints per-observe times and their ratio. Figures only: nothing here passes or fails on speed.
// Needs root. Built as build/tests/rdmactl_netlink_bench; not a test.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "agent/platform/netlink.h"
#include "tests/netns/netns_fixture.h"

namespace rdmactl {
namespace {

constexpr int kPairs = 200;
constexpr int kNetlinkRounds = 200;
constexpr int kIpRounds = 20;  // each round starts two processes; fewer rounds give stable figures

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<std::string> setup_commands() {
  std::vector<std::string> commands;
  for (int i = 0; i < kPairs; ++i) {
    const std::string a = "ba" + std::to_string(i);
    const std::string b = "bb" + std::to_string(i);
    const std::string net = std::to_string(i / 256) + "." + std::to_string(i % 256);
    commands.push_back("link add " + a + " type veth peer name " + b);
    commands.push_back("link set " + a + " up");
    commands.push_back("link set " + b + " up");
    commands.push_back("addr add 10." + net + ".1/24 dev " + a);
    commands.push_back("addr add 10." + net + ".2/24 dev " + b);
    commands.push_back("addr add 2001:db8:" + std::to_string(i) + "::1/64 dev " + a);
  }
  return commands;
}

int run() {
  if (const std::string why = test::netns_unavailable_reason(); !why.empty()) {
    std::fprintf(stderr, "netlink_bench needs root and network namespaces: %s\n", why.c_str());
    return 1;
  }
  auto created = test::TestNamespace::create();
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().to_string().c_str());
    return 1;
  }
  test::TestNamespace ns = std::move(created).value();
  if (auto setup = ns.ip_batch(setup_commands()); !setup) {
    std::fprintf(stderr, "%s\n", setup.error().to_string().c_str());
    return 1;
  }
  std::optional<Result<RouteSocket>> opened;
  auto entered = ns.run_in_thread([&] { opened.emplace(RouteSocket::open()); });
  if (!entered || !opened || !*opened) {
    std::fprintf(stderr, "cannot open a RouteSocket in %s: %s\n", ns.name().c_str(),
                 !entered ? entered.error().to_string().c_str()
                          : (opened ? opened->error().to_string().c_str() : "no result"));
    return 1;
  }
  RouteSocket sock = std::move(*opened).value();

  size_t links = 0;
  size_t addresses = 0;
  auto start = Clock::now();
  for (int round = 0; round < kNetlinkRounds; ++round) {
    auto l = sock.dump_links();
    auto a = sock.dump_addresses();
    if (!l || !a) {
      std::fprintf(stderr, "dump failed: %s\n",
                   (!l ? l.error() : a.error()).to_string().c_str());
      return 1;
    }
    links = l->size();
    addresses = a->size();
  }
  const double netlink_ms = ms_since(start) / kNetlinkRounds;

  size_t ip_links = 0;
  size_t ip_addresses = 0;
  start = Clock::now();
  for (int round = 0; round < kIpRounds; ++round) {
    std::string link_out;
    std::string addr_out;
    if (ns.ip({"-j", "link", "show"}, &link_out) != 0 || ns.ip({"-j", "addr", "show"}, &addr_out) != 0) {
      std::fprintf(stderr, "ip failed\n");
      return 1;
    }
    const auto link_json = nlohmann::json::parse(link_out, nullptr, false);
    const auto addr_json = nlohmann::json::parse(addr_out, nullptr, false);
    ip_links = link_json.size();
    ip_addresses = 0;
    for (const auto& l : addr_json) ip_addresses += l.value("addr_info", nlohmann::json::array()).size();
  }
  const double ip_ms = ms_since(start) / kIpRounds;

  std::printf("namespace %s: %d veth pairs\n", ns.name().c_str(), kPairs);
  std::printf("RouteSocket dump_links+dump_addresses: %8.3f ms per observe (%zu links, %zu addresses, %d rounds)\n",
              netlink_ms, links, addresses, kNetlinkRounds);
  std::printf("ip -j link show + ip -j addr show:     %8.3f ms per observe (%zu links, %zu addresses, %d rounds)\n",
              ip_ms, ip_links, ip_addresses, kIpRounds);
  std::printf("ratio ip / RouteSocket: %.1fx\n", ip_ms / netlink_ms);
  return 0;
}

}  // namespace
}  // namespace rdmactl

int main() { return rdmactl::run(); }
