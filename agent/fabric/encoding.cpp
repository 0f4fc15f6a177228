// SPDX-License-Identifier: Apache-2.0
// Names of the PortInfo, SMInfo and PortCounters encodings (see encoding.h for the sources).
#include "agent/fabric/encoding.h"

#include <array>
#include <map>
#include <utility>

namespace rdmactl::fabric {
namespace {

std::string unknown(int value) { return "?(" + std::to_string(value) + ")"; }

}  // namespace

std::string port_state_name(int state) {
  static const std::array<const char*, 5> kNames = {"NoChange", "Down", "Initialize", "Armed", "Active"};
  return state >= 0 && state < static_cast<int>(kNames.size()) ? kNames[state] : unknown(state);
}

std::string phys_state_name(int phys_state) {
  static const std::array<const char*, 8> kNames = {
      "NoChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"};
  return phys_state >= 0 && phys_state < static_cast<int>(kNames.size()) ? kNames[phys_state] : unknown(phys_state);
}

std::string sm_state_name(int state) {
  static const std::array<const char*, 4> kNames = {"NotActive", "Discovering", "Standby", "Master"};
  return state >= 0 && state < static_cast<int>(kNames.size()) ? kNames[state] : unknown(state);
}

namespace {
// bit, lanes, name (mad_dump_linkwidth).
constexpr std::array<std::pair<int, int>, 5> kWidths = {{{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}}};
}  // namespace

int width_lanes(int width_bit) {
  for (const auto& [bit, lanes] : kWidths) {
    if (bit == width_bit) return lanes;
  }
  return 0;
}

std::string width_name(int width_bit) {
  const int lanes = width_lanes(width_bit);
  return lanes ? std::to_string(lanes) + "x" : unknown(width_bit);
}

int widest(int mask) {
  int best = 0;
  for (const auto& [bit, lanes] : kWidths) {
    if ((mask & bit) && lanes > width_lanes(best)) best = bit;
  }
  return best;
}

const std::vector<std::string>& speed_names() {
  static const std::vector<std::string> kNames = {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"};
  return kNames;
}

int speed_rank(const std::string& name) {
  const auto& names = speed_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i) + 1;
  }
  return 0;
}

std::string speed_name(int speed_bit) {
  switch (speed_bit) {
    case 1: return "SDR";
    case 2: return "DDR";
    case 4: return "QDR";
    default: return "";
  }
}

std::string ext_speed_name(int ext_bit) {
  switch (ext_bit) {
    case 1: return "FDR";
    case 2: return "EDR";
    case 4: return "HDR";
    case 8: return "NDR";
    case 32: return "XDR";
    default: return "";
  }
}

double lane_gbps(const std::string& speed) {
  // As libibmad dump.c prints them; FDR10 as ibqueryerrors.c print_port_config ("10.0 Gbps (FDR10)").
  static const std::array<std::pair<const char*, double>, 9> kRates = {{{"SDR", 2.5},
                                                                        {"DDR", 5.0},
                                                                        {"QDR", 10.0},
                                                                        {"FDR10", 10.0},
                                                                        {"FDR", 14.0625},
                                                                        {"EDR", 25.78125},
                                                                        {"HDR", 53.125},
                                                                        {"NDR", 106.25},
                                                                        {"XDR", 212.5}}};
  for (const auto& [name, gbps] : kRates) {
    if (speed == name) return gbps;
  }
  return 0;
}

const std::vector<std::string>& error_counter_names() {
  // IB_PC_ERR_SYM_F .. IB_PC_VL15_DROPPED_F of libibmad fields.c, the range ibqueryerrors
  // print_results walks, less three it also reports that the issue leaves to other tools:
  // PortRcvSwitchRelayErrors (common on switches, `ibqueryerrors -c` suppresses it),
  // PortXmitConstraintErrors and PortRcvConstraintErrors (partition enforcement), and
  // PortXmitWait (congestion, not an error).
  // The three are not read: a threshold for them is refused (schemas/fabric-spec.schema.json).
  static const std::vector<std::string> kNames = {
      "SymbolErrorCounter",      "LinkErrorRecoveryCounter",     "LinkDownedCounter",
      "PortRcvErrors",           "PortRcvRemotePhysicalErrors",  "PortXmitDiscards",
      "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped"};
  return kNames;
}

uint64_t counter_max(const std::string& counter) {
  // libibmad fields.c (rdma-core 44), PortCounters: BITSOFFS(32, 16) SymbolErrorCounter, (48, 8)
  // LinkErrorRecoveryCounter, (56, 8) LinkDownedCounter, (64, 16) PortRcvErrors, (80, 16)
  // PortRcvRemotePhysicalErrors, (112, 16) PortXmitDiscards, (152, 4) LocalLinkIntegrityErrors,
  // (156, 4) ExcessiveBufferOverrunErrors, (176, 16) VL15Dropped.
  static const std::map<std::string, uint64_t> kMax = {
      {"SymbolErrorCounter", 0xffff},     {"LinkErrorRecoveryCounter", 0xff},
      {"LinkDownedCounter", 0xff},        {"PortRcvErrors", 0xffff},
      {"PortRcvRemotePhysicalErrors", 0xffff}, {"PortXmitDiscards", 0xffff},
      {"LocalLinkIntegrityErrors", 0xf},  {"ExcessiveBufferOverrunErrors", 0xf},
      {"VL15Dropped", 0xffff}};
  auto it = kMax.find(counter);
  return it == kMax.end() ? 0 : it->second;
}

}  // namespace rdmactl::fabric
