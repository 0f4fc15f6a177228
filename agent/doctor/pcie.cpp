// SPDX-License-Identifier: Apache-2.0
// The doctor's PCIe checks: the link's width and speed against the device's best, its bandwidth
// against the ACTIVE ports of every function that shares it, and each RDMA function's
// Max_Read_Request_Size.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "agent/doctor/doctor_internal.h"

namespace rdmactl {

double pcie_bandwidth_gbps(const std::string& speed, int width) {
  double gts = 0;
  if (std::sscanf(speed.c_str(), "%lf", &gts) != 1 || gts <= 0) return 0;
  // Line encoding: 8b/10b up to Gen2, 128b/130b for Gen3-5, FLIT (242/256) from Gen6.
  const double efficiency = gts <= 5.0 ? 0.8 : gts <= 32.0 ? 128.0 / 130.0 : 242.0 / 256.0;
  return gts * efficiency * width;
}

namespace doctor_detail {
namespace {

// --- PCIe links ---------------------------------------------------------------------------------
// "0000:3b:00.1" -> "0000:3b:00": functions of one device (same domain:bus:device) sit behind one
// upstream port and share its link; every function's Link Status reports that one link.
std::string pci_device_of(const std::string& bdf) {
  const auto dot = bdf.rfind('.');
  return dot == std::string::npos ? bdf : bdf.substr(0, dot);
}

// "8.0 GT/s PCIe" -> "Gen3"; "" when the speed is not understood.
std::string pcie_generation(const std::string& speed) {
  double gts = 0;
  if (std::sscanf(speed.c_str(), "%lf", &gts) != 1) return {};
  static const std::pair<double, const char*> kGens[] = {{2.5, "Gen1"},  {5, "Gen2"},  {8, "Gen3"},   {16, "Gen4"},
                                                          {32, "Gen5"}, {64, "Gen6"}, {128, "Gen7"}};
  for (const auto& [rate, gen] : kGens) {
    if (std::fabs(gts - rate) < 0.01) return gen;
  }
  return {};
}

// "a and b", "a, b and c".
std::string join_and(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  }
  return out;
}

// What a port must carry: its rate while ACTIVE. A down port's sysfs rate is a driver default, not a
// negotiated line rate (mlx5_query_port_roce starts from 4X QDR), so counting it would invent load;
// the next doctor run after the port comes up counts it.
double active_rate(const DeviceState& d, std::vector<double>* rates = nullptr) {
  double sum = 0;
  for (const PortState& p : d.ports) {
    if (p.state != "ACTIVE" || p.rate_gbps <= 0) continue;
    sum += p.rate_gbps;
    if (rates) rates->push_back(p.rate_gbps);
  }
  return sum;
}

bool pcie_below_best(const PcieLink& link) {
  const bool narrow = link.max_width && *link.width < *link.max_width;
  const bool slow = !link.max_speed.empty() && link.speed != link.max_speed &&
                    pcie_bandwidth_gbps(link.speed, 1) < pcie_bandwidth_gbps(link.max_speed, 1);
  return narrow || slow;
}

}  // namespace

// Functions of one PCI device share one link: group them once, lowest function first.
void Doctor::group_pcie_links() {
  for (const DeviceState& d : state_.devices) {
    if (!d.pci.empty() && d.pcie.width && *d.pcie.width > 0) links_[pci_device_of(d.pci)].push_back(&d);
  }
  for (auto& [slot, functions] : links_) {
    std::sort(functions.begin(), functions.end(),
              [](const DeviceState* a, const DeviceState* b) { return a->pci < b->pci; });
  }
}

// PCIe: the link's width and speed against the device's best, and its bandwidth against the
// ports it carries. Functions of one device (a dual-port ConnectX as mlx5_0 on .0 and mlx5_1 on
// .1) share one link: they are checked once, together, on the lowest function; a function that
// reports no link width (an SR-IOV VF, whose link registers read zero) stays out of the group.
void Doctor::check_pcie(const DeviceState& d) {
  if (d.pci.empty() || !d.pcie.width) return;
  const auto group = links_.find(pci_device_of(d.pci));
  if (group == links_.end() || group->second.size() < 2) return check_pcie_single(d);
  if (group->second.front() == &d) check_pcie_shared(group->second);
}

void Doctor::check_pcie_single(const DeviceState& d) {
  const std::string resource = "pci/" + d.pci;
  if (pcie_below_best(d.pcie)) {
    add("pcie-link", "warning", resource,
        "PCIe link runs x" + std::to_string(*d.pcie.width) + " at " + d.pcie.speed + "; " + d.name +
            " can do x" + std::to_string(d.pcie.max_width.value_or(*d.pcie.width)) + " at " + d.pcie.max_speed,
        "reseat the card or move it to a full-width slot of its generation; check the BIOS slot settings");
  }
  const double rate = active_rate(d);
  const double pcie = pcie_bandwidth_gbps(d.pcie.speed, *d.pcie.width);
  if (pcie > 0 && rate > pcie) {
    add("pcie-bandwidth", "error", resource,
        "PCIe x" + std::to_string(*d.pcie.width) + " at " + d.pcie.speed + " carries about " + format_gbps(pcie) +
            " Gb/s, less than the " + format_gbps(rate) + " Gb/s of " + d.name + "'s ports",
        "100 Gb/s needs PCIe Gen3 x16 (or Gen4 x8); 200 Gb/s needs Gen4 x16; 400 Gb/s needs Gen5 x16");
  }
}

// One finding per shortfall of a shared link, naming every function on it. The link must carry
// all its ACTIVE ports at line rate at once (NCCL and storage drive both ports of a card), so
// their rates are summed. A warning when each device alone fits (only concurrent traffic is
// capped), an error when one device alone already exceeds the link.
void Doctor::check_pcie_shared(const std::vector<const DeviceState*>& functions) {
  const DeviceState& first = *functions.front();
  const PcieLink& link = first.pcie;  // function 0 holds the link's control; all report its status
  std::vector<std::string> names;
  std::vector<std::string> bdfs{first.pci};
  for (const DeviceState* f : functions) {
    names.push_back(f->name);
    if (f != &first) bdfs.push_back(f->pci.substr(f->pci.rfind('.')));
  }
  const std::string who = join_and(names) + " (" + join_and(bdfs) + ")";
  const std::string resource = "pci/" + first.pci;
  if (pcie_below_best(link)) {
    add("pcie-link", "warning", resource,
        "PCIe link runs x" + std::to_string(*link.width) + " at " + link.speed + "; " + who +
            " share it and can do x" + std::to_string(link.max_width.value_or(*link.width)) + " at " +
            link.max_speed,
        "reseat the card or move it to a full-width slot of its generation; check the BIOS slot settings");
  }
  std::vector<double> rates;
  double total = 0;
  double largest_device = 0;
  for (const DeviceState* f : functions) {
    const double device = active_rate(*f, &rates);
    total += device;
    largest_device = std::max(largest_device, device);
  }
  const double pcie = pcie_bandwidth_gbps(link.speed, *link.width);
  if (pcie <= 0 || total <= pcie) return;
  std::string run_at;
  if (std::all_of(rates.begin(), rates.end(), [&](double r) { return r == rates.front(); })) {
    run_at = (rates.size() > 1 ? std::to_string(rates.size()) + " x " : "") + format_gbps(rates.front()) + " Gb/s";
  } else {
    std::vector<std::string> parts;
    for (double r : rates) parts.push_back(format_gbps(r));
    run_at = parts.front();
    for (size_t i = 1; i < parts.size(); ++i) run_at += " + " + parts[i];
    run_at += " = " + format_gbps(total) + " Gb/s";
  }
  const std::string gen = pcie_generation(link.speed);
  add("pcie-bandwidth", largest_device > pcie ? "error" : "warning", resource,
      who + " share one PCIe " + (gen.empty() ? link.speed : gen) + " x" + std::to_string(*link.width) +
          " link (" + format_gbps(pcie) + " Gb/s) but their ports run at " + run_at,
      "together the ports need more than the link carries: move the card to a slot with enough bandwidth "
      "(Gen4 x16 carries 252 Gb/s, Gen5 x16 504 Gb/s), or expect about " + format_gbps(pcie) +
          " Gb/s in total when all ports are busy");
}

// Max_Read_Request_Size of each RDMA device's PCI function (observed by reconcilers/pcie: its
// pcieControl). A NIC reads every send buffer from host memory in requests of at most this size, so
// a small one costs throughput; fwts warns at 128 bytes ("MaxReadReq ... is low", its
// src/pci/maxreadreq test, which suggests 256 or 512), and RDMA NICs are tuned to 4096 (NVIDIA's
// nic-configuration-operator writes it with setpci). Below 512 is reported. A VF is left out: its
// field is reserved (the PF's applies).
void Doctor::check_read_request() {
  constexpr int kMinReadRequest = 512;
  for (const DeviceState& d : state_.devices) {
    const PciFunctionState* function = d.pci.empty() ? nullptr : state_.find_pci_function(d.pci);
    if (!function || !function->pcie_control || !function->pcie_control->is_object()) continue;
    const nlohmann::json& control = *function->pcie_control;
    if (control.contains("physfn") || !control.contains("maxReadRequest") ||
        !control["maxReadRequest"].is_number_integer()) {
      continue;
    }
    const int mrrs = control["maxReadRequest"].get<int>();
    if (mrrs >= kMinReadRequest) continue;
    add("pcie-read-request", "warning", "pci/" + d.pci,
        "PCIe Max_Read_Request_Size of " + d.name + " (" + d.pci + ") is " + std::to_string(mrrs) +
            " bytes: its DMA reads from host memory go in small requests, which costs throughput",
        "set `pcie: {maxReadRequest: 4096}` on this interface in the spec (rdmactl apply writes it to the PCIe "
        "Device Control register; it is lost at a reset or reboot and the agent sets it again)");
  }
}

}  // namespace doctor_detail
}  // namespace rdmactl
