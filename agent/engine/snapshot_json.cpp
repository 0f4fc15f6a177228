// SPDX-License-Identifier: Apache-2.0
// A snapshot as JSON and back, for the journal (see snapshot.h).
#include <stdexcept>

#include "agent/engine/snapshot.h"

namespace rdmactl {

nlohmann::json to_json(const Snapshot& snapshot) {
  using nlohmann::json;
  json netdevs = json::array();
  for (const NetdevSnapshot& n : snapshot.netdevs) {
    json addresses = json::array();
    for (const AddressInfo& a : n.addresses) {
      json address = {{"ifindex", a.ifindex}, {"family", a.family},   {"cidr", a.cidr},
                      {"scope", a.scope},     {"flags", a.flags},     {"peer", a.peer},
                      {"broadcast", a.broadcast}, {"label", a.label}, {"validLft", a.valid_lft},
                      {"preferredLft", a.preferred_lft}};
      if (a.metric) address["metric"] = *a.metric;
      if (a.proto) address["proto"] = *a.proto;
      addresses.push_back(std::move(address));
    }
    netdevs.push_back({{"ifindex", n.ifindex}, {"name", n.name}, {"kind", n.kind}, {"mac", n.mac},
                       {"mtu", n.mtu}, {"flags", n.flags}, {"operState", n.oper_state}, {"master", n.master},
                       {"link", n.link}, {"addresses", std::move(addresses)}});
    if (n.sysctls_read) netdevs.back()["sysctls"] = n.sysctls;
  }
  json routes = json::array();
  static const char kHex[] = "0123456789abcdef";
  for (const RouteInfo& r : snapshot.routes) {
    if (r.message.empty()) continue;  // not from a dump: nothing a restore could send
    std::string hex;
    hex.reserve(r.message.size() * 2);
    for (const unsigned char byte : r.message) {
      hex += kHex[byte >> 4];
      hex += kHex[byte & 0xf];
    }
    routes.push_back({{"route", r.describe()}, {"message", std::move(hex)}});
  }
  // When it was taken, as wall-clock seconds: a run that loads it (after a crash) counts the
  // lifetimes of addresses down from then.
  const auto age = std::chrono::steady_clock::now() - snapshot.taken;
  const auto taken_at = std::chrono::duration_cast<std::chrono::seconds>(
      (std::chrono::system_clock::now() - age).time_since_epoch());
  return {{"netdevs", std::move(netdevs)}, {"routes", std::move(routes)}, {"takenAt", taken_at.count()}};
}

Result<Snapshot> snapshot_from_json(const nlohmann::json& j) {
  Snapshot snap;
  snap.taken = std::chrono::steady_clock::now();
  try {
    for (const auto& n : j.at("netdevs")) {
      NetdevSnapshot netdev;
      netdev.ifindex = n.at("ifindex").get<int>();
      netdev.name = n.at("name").get<std::string>();
      netdev.kind = n.at("kind").get<std::string>();
      netdev.mac = n.at("mac").get<std::string>();
      netdev.mtu = n.at("mtu").get<unsigned>();
      netdev.flags = n.at("flags").get<unsigned>();
      netdev.oper_state = n.at("operState").get<std::string>();
      netdev.master = n.at("master").get<int>();
      netdev.link = n.at("link").get<int>();
      // A journal of a version that read every netdev's sysctls has them for each.
      if (n.contains("sysctls")) {
        netdev.sysctls = n.at("sysctls").get<std::map<std::string, std::string>>();
        netdev.sysctls_read = true;
      }
      for (const auto& a : n.at("addresses")) {
        AddressInfo address;
        address.ifindex = a.at("ifindex").get<int>();
        address.family = a.at("family").get<int>();
        address.cidr = a.at("cidr").get<std::string>();
        address.scope = a.at("scope").get<int>();
        address.flags = a.at("flags").get<std::uint32_t>();
        address.peer = a.at("peer").get<std::string>();
        address.broadcast = a.at("broadcast").get<std::string>();
        address.label = a.at("label").get<std::string>();
        address.valid_lft = a.at("validLft").get<std::uint32_t>();
        address.preferred_lft = a.at("preferredLft").get<std::uint32_t>();
        if (a.contains("metric")) address.metric = a.at("metric").get<std::uint32_t>();
        if (a.contains("proto")) address.proto = a.at("proto").get<std::uint8_t>();
        netdev.addresses.push_back(std::move(address));
      }
      snap.netdevs.push_back(std::move(netdev));
    }
    if (j.contains("takenAt")) {
      const auto taken_at = std::chrono::system_clock::time_point(std::chrono::seconds(j.at("takenAt").get<long long>()));
      const auto age = std::chrono::system_clock::now() - taken_at;
      if (age > std::chrono::system_clock::duration::zero()) {
        snap.taken -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(age);
      }
    }
    for (const auto& r : j.at("routes")) {
      const std::string hex = r.at("message").get<std::string>();
      std::vector<unsigned char> message;
      if (hex.size() % 2 != 0) throw std::invalid_argument("odd hex length");
      for (size_t i = 0; i < hex.size(); i += 2) {
        message.push_back(static_cast<unsigned char>(std::stoul(hex.substr(i, 2), nullptr, 16)));
      }
      auto parsed = parse_route_message(message);
      if (!parsed) return parsed.error();
      snap.routes.push_back(std::move(parsed).value());
    }
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kPlatform, std::string("not a netdev snapshot: ") + e.what());
  }
  snap.index_netdevs();
  return snap;
}

}  // namespace rdmactl
