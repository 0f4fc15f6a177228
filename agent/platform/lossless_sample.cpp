// SPDX-License-Identifier: Apache-2.0
// Two samples of the lossless counters (lossless_sample.h).
#include "agent/platform/lossless_sample.h"

#include <map>
#include <optional>
#include <set>

namespace rdmactl {
namespace {

using Field = std::optional<uint64_t>;

// The counters as the state's JSON names them, in one flat list: "priorities.<p>.<name>" or "<name>".
std::map<std::string, uint64_t> flatten(const LosslessCounters& c) {
  std::map<std::string, uint64_t> out;
  const auto put = [&](const std::string& key, const Field& value) {
    if (value) out[key] = *value;
  };
  for (int p = 0; p < kPriorities; ++p) {
    const PriorityCounters& pc = c.priority[static_cast<size_t>(p)];
    const std::string at = std::to_string(p) + ".";
    put(at + "rxPause", pc.pause.rx_pause);
    put(at + "txPause", pc.pause.tx_pause);
    put(at + "rxPauseDuration", pc.pause.rx_pause_duration);
    put(at + "rxDiscards", pc.rx_discards);
    put(at + "rxBufDiscard", pc.rx_buf_discard);
    put(at + "rxCongDiscard", pc.rx_cong_discard);
  }
  put("rxDiscardsPhy", c.rx_discards_phy);
  put("rxOutOfBuffer", c.rx_out_of_buffer);
  put("pauseStormWarning", c.tx_pause_storm_warning_events);
  put("pauseStormError", c.tx_pause_storm_error_events);
  return out;
}

nlohmann::json to_json(const std::map<std::string, uint64_t>& flat) {
  nlohmann::json out = {{"priorities", nlohmann::json::object()}};
  for (const auto& [key, value] : flat) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      out[key] = value;
    } else {
      out["priorities"][key.substr(0, dot)][key.substr(dot + 1)] = value;
    }
  }
  return out;
}

}  // namespace

void observe_lossless_counters(const CounterReader& read, const std::function<void(std::chrono::milliseconds)>& sleep,
                               std::chrono::milliseconds interval, HostState& state) {
  std::set<std::string> netdevs;
  for (const DeviceState& d : state.devices) {
    for (const PortState& p : d.ports) {
      if (p.link_layer == "Ethernet" && !p.netdev.empty()) netdevs.insert(p.netdev);
    }
  }
  nlohmann::json out = {{"intervalSeconds", static_cast<double>(interval.count()) / 1000.0},
                        {"netdevs", nlohmann::json::object()}};
  std::map<std::string, std::map<std::string, uint64_t>> first;
  for (const std::string& netdev : netdevs) {
    auto counters = read(netdev);
    if (!counters) {
      out["netdevs"][netdev] = {{"error", counters.error().to_string()}};
      continue;
    }
    const LosslessCounters c = classify_lossless_counters(*counters);
    if (c.naming == CounterNaming::kUnknown) {
      out["netdevs"][netdev] = {{"naming", counter_naming_name(c.naming)}};
      continue;
    }
    first[netdev] = flatten(c);
  }
  if (first.empty()) {
    state.lossless = out;
    return;
  }
  sleep(interval);
  for (const auto& [netdev, before] : first) {
    auto counters = read(netdev);
    if (!counters) {
      out["netdevs"][netdev] = {{"error", counters.error().to_string()}};
      continue;
    }
    const LosslessCounters c = classify_lossless_counters(*counters);
    const auto after = flatten(c);
    std::map<std::string, uint64_t> delta;
    for (const auto& [key, value] : after) {
      auto was = before.find(key);
      if (was != before.end() && value >= was->second) delta[key] = value - was->second;
    }
    out["netdevs"][netdev] = {{"naming", counter_naming_name(c.naming)}, {"delta", to_json(delta)}, {"total", to_json(after)}};
  }
  state.lossless = out;
}

}  // namespace rdmactl
