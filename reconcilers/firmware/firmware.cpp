// SPDX-License-Identifier: Apache-2.0
// The firmware reconciler (see firmware.h for the observed shape, the diff's cases and the order
// of apply).
#include "reconcilers/firmware/firmware.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "agent/core/fd.h"
#include "agent/core/json_text.h"
#include "agent/platform/command.h"
#include "agent/platform/firmware_image.h"
#include "agent/platform/firmware_lock.h"
#include "agent/platform/devlink.h"
#include "agent/platform/mstflint.h"
#include "agent/state/firmware.h"
#include "reconcilers/common/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kFirmwareName = "firmware";
constexpr const char* kField = "firmware.version";
// A burn writes a whole flash (tens of MB over the device's flash interface): minutes, and a
// slow one is not a hung one. Killed after this, as the tool's own documents never promise less.
constexpr std::chrono::minutes kBurnDeadline{30};
// mstfwreset stops and starts the driver of every function of the adapter.
constexpr std::chrono::minutes kResetDeadline{10};
// After an activation the driver probes the device again: its firmware answers once it is up.
constexpr std::chrono::seconds kActivationReadBack{180};
constexpr std::chrono::seconds kReadBackInterval{2};

// The spec's firmware for each adapter it names, with the interface that said it first.
struct Wanted {
  const InterfaceSpec* iface = nullptr;
  std::string adapter;
  std::vector<const DeviceState*> devices;  // the adapter's functions on this host, lowest first
};

std::string policy_of(const FirmwareSpec& f) { return f.policy.value_or("validate"); }
std::string activation_of(const FirmwareSpec& f) { return f.activation.value_or("reboot"); }

bool same_version(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  const auto order = compare_fw_versions(a, b);
  return order ? *order == 0 : a == b;
}

// "mlx5_0 (ens1f0np0), mlx5_1 (ens1f1np1)": what an adapter reset takes down.
std::string describe_functions(const std::vector<const DeviceState*>& devices) {
  std::string out;
  for (const DeviceState* d : devices) {
    if (!out.empty()) out += ", ";
    out += d->name;
    std::vector<std::string> netdevs;
    for (const PortState& p : d->ports) {
      if (!p.netdev.empty()) netdevs.push_back(p.netdev);
    }
    if (!netdevs.empty()) {
      out += " (";
      for (size_t i = 0; i < netdevs.size(); ++i) out += (i ? ", " : "") + netdevs[i];
      out += ")";
    }
  }
  return out;
}

// The PCI devices ("0000:3b:00") an adapter's functions are on, lowest first: more than one for a
// Socket Direct adapter (or a ConnectX-8 whose functions sit behind its own PCIe switch).
std::vector<std::string> pci_devices_of(const std::vector<const DeviceState*>& devices) {
  std::set<std::string> out;
  for (const DeviceState* d : devices) out.insert(adapter_of_pci(d->pci));
  return {out.begin(), out.end()};
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return out;
}

// Why `mstfwreset reset` at level 3 (with the tool owning the reset sync: resetFlow) would reset only
// the PCI device it is given of an adapter on several: it finds the others itself
// (mstfwreset.py main: get_socket_direct_pci_devices, function 0 of every other device with the
// same MGIR manufacturing base MAC; resetFlow stops their driver and resetPciAddr toggles their
// links too), but lists devices with `mdevices_info -vv` (mstflint 4.21 to 4.30,
// mlxfwresetlib/mlnx_peripheral_components.py discover_pci_devices), a tool mstflint ships from
// 4.31 only (as mstdevices_info, which 4.31's mstfwreset runs); without it the exception is caught
// ("Failed to check if device is Socket Direct!", logged at a level mstfwreset does not print
// without --log) and the peers are left to their drivers during the reset. nullopt when fine.
std::optional<std::string> socket_direct_reset_gap(const std::vector<const DeviceState*>& devices) {
  const std::vector<std::string> pci_devices = pci_devices_of(devices);
  if (pci_devices.size() < 2) return std::nullopt;
  if (!find_program("mstdevices_info").empty() || !find_program("mdevices_info").empty()) return std::nullopt;
  return "the adapter's functions are on the PCI devices " + join_words(pci_devices) +
         " (one adapter: Socket Direct), and mstfwreset resets the others with the one it is given only when "
         "it finds them, which it does with mstdevices_info (mstflint 4.31 and later) or mdevices_info "
         "(mstflint 4.21 to 4.30, which do not ship it): neither is in " + tool_search_path_text() +
         ", so it would reset " + pci_devices.front() + " alone. Activate with the next reboot (activation: "
         "reboot), or install mstflint 4.31 or later";
}

// ---- observe ---------------------------------------------------------------------------------

// The identity mstflint's query gives (see firmware.h): the manufacturing UIDs.
void add_flint_identity(nlohmann::json& fw, const FlintQuery& query) {
  nlohmann::json& id = fw["identity"];
  if (!query.manufacturing_mac().empty()) id["baseMac"] = query.manufacturing_mac();
  if (!query.manufacturing_guid().empty()) id["baseGuid"] = query.manufacturing_guid();
  if (id.empty()) fw.erase("identity");
}

// Identities read by mstflint for identity alone, for the process's life: serve plans every few
// minutes, and the manufacturing UIDs of the card at a PCI address change only with the card (its
// node GUID, which sysfs gives at no cost, changes with it).
std::mutex g_identity_mutex;
std::map<std::pair<std::string, std::string>, nlohmann::json> g_identity_cache;

// devlink first, then mstflint (when asked for versions, or for the adapter's identity where
// devlink gave none), then what sysfs already gave.
nlohmann::json observe_device(Platform& platform, const DeviceState& device, bool ask_mstflint, bool ask_identity) {
  nlohmann::json fw = nlohmann::json::object();
  nlohmann::json notes = nlohmann::json::array();
  // An SR-IOV virtual function (its sysfs node links to its physfn) has no firmware of its own:
  // devlink info and mstflint answer only on physical functions.
  if (platform.fs().exists("/sys/bus/pci/devices/" + device.pci + "/physfn")) fw["virtualFunction"] = true;
  if (auto devlink = platform.devlink(); devlink) {
    auto info = (*devlink)->info(DevlinkHandle{"pci", device.pci});
    if (info) {
      const auto get = [](const std::map<std::string, std::string>& m, const char* key) {
        const auto it = m.find(key);
        return it == m.end() ? std::string() : it->second;
      };
      fw["running"] = get(info->running, "fw.version");
      fw["stored"] = get(info->stored, "fw.version");
      // mlx5's marks of a failed (255.255.65535) or unsupported (0.0.0000) version query are no
      // versions: nothing is known, and the running one is asked of mstflint or sysfs instead.
      for (const char* which : {"running", "stored"}) {
        const std::string seen = fw[which].get<std::string>();
        if (!mlx5_version_unknown(seen)) continue;
        fw[which] = "";
        notes.push_back(std::string("devlink: the ") + which + " version could not be read (it reports " + seen + ")");
      }
      fw["psid"] = get(info->fixed, "fw.psid");
      fw["source"] = "devlink";
      // The card's VPD (mlx5_devlink_serial_numbers_put, mainline since 2025: V3 and SN), the same on
      // every function of one card (the two of a ConnectX-7 in that patch's `devlink dev info`).
      if (!info->serial.empty()) fw["identity"]["serialNumber"] = info->serial;
      if (!info->board_serial.empty()) fw["identity"]["boardSerialNumber"] = info->board_serial;
      if (!info->driver.empty()) fw["driver"] = info->driver;
    } else {
      notes.push_back("devlink: " + info.error().message);
    }
  } else {
    notes.push_back("devlink: " + devlink.error().message);
  }
  const bool have_running = fw.contains("running") && !fw["running"].get<std::string>().empty();
  const bool is_vf = fw.value("virtualFunction", false);
  // What adapter_of groups by: a base MAC, else devlink's serial_number.
  const auto identified = [&] {
    return fw.contains("identity") && (fw["identity"].contains("baseMac") || fw["identity"].contains("serialNumber"));
  };
  const bool versions_from_mstflint = !have_running && ask_mstflint;
  const std::pair<std::string, std::string> identity_key{device.pci, device.node_guid};
  if (!versions_from_mstflint && ask_identity && !identified() && !is_vf && !device.node_guid.empty()) {
    std::lock_guard lock(g_identity_mutex);
    if (auto it = g_identity_cache.find(identity_key); it != g_identity_cache.end()) fw["identity"].update(it->second);
  }
  if (versions_from_mstflint || (ask_identity && !identified() && !is_vf)) {
    auto query = mstflint_query_device(device.pci);
    if (query) {
      if (!have_running) {
        // FW Version is the flash's; FW Version(Running) appears only while they differ.
        fw["stored"] = query->fw_version;
        fw["running"] = query->running_version.empty() ? query->fw_version : query->running_version;
        fw["psid"] = query->psid;
        fw["source"] = "mstflint";
      }
      add_flint_identity(fw, *query);
      if (identified() && !device.node_guid.empty()) {
        std::lock_guard lock(g_identity_mutex);
        g_identity_cache[identity_key] = fw["identity"];
      }
    } else {
      notes.push_back("mstflint: " + query.error().message);
    }
  }
  if (!fw.contains("running") || fw["running"].get<std::string>().empty()) {
    fw["running"] = device.fw_version;
    fw["source"] = "sysfs";
    fw.erase("stored");
    // mlx5's sysfs board_id is the PSID (mlx5_query_board_id: query_adapter's vsd_contd_psid).
    if (!device.board_id.empty()) fw["psid"] = device.board_id;
  }
  // The vendor driver's version (MODULE_VERSION of MLNX_OFED's and DOCA-OFED's mlx5_core; the
  // upstream module has none): doctor's note on which firmware it is released with.
  if (fw.value("driver", "") == "mlx5_core" || device.name.rfind("mlx5_", 0) == 0) {
    if (auto version = platform.fs().read("/sys/module/mlx5_core/version"); version) {
      std::string text = *version;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      if (!text.empty()) fw["vendorDriverVersion"] = text;
    }
  }
  // A burn or reset under way (this host, any namespace, perhaps orphaned): what was read may be
  // the state before it; apply waits for it and plans again from what it leaves.
  if (auto running = FirmwareLock::in_progress(adapter_of_pci(device.pci))) {
    fw["operationInProgress"] = *running;
    notes.push_back("a firmware operation is in progress on this adapter (" + *running +
                    "): what was read may change when it ends; apply waits for it");
  }
  if (!notes.empty()) fw["notes"] = std::move(notes);
  return fw;
}

// Every image of a directory, queried once per file version for the process's life: the agent
// plans every few minutes, and `mstflint -i` reads the whole image.
struct ImageKey {
  std::string path;
  off_t size;
  long mtime_sec;
  long mtime_nsec;
  auto operator<=>(const ImageKey&) const = default;
};
std::mutex g_images_mutex;
std::map<ImageKey, nlohmann::json> g_image_cache;

nlohmann::json scan_images(const std::string& dir) {
  nlohmann::json out = {{"dir", dir}};
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    out["error"] = "cannot read the directory: " + std::string(std::strerror(errno));
    return out;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(handle)) {
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  ::closedir(handle);
  std::sort(names.begin(), names.end());
  nlohmann::json found = nlohmann::json::array();
  nlohmann::json unreadable = nlohmann::json::array();
  for (const std::string& name : names) {
    const std::string path = dir + (dir.ends_with('/') ? "" : "/") + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const ImageKey key{path, st.st_size, static_cast<long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec};
    nlohmann::json image;
    {
      std::lock_guard lock(g_images_mutex);
      if (auto it = g_image_cache.find(key); it != g_image_cache.end()) image = it->second;
    }
    if (image.is_null()) {
      auto query = mstflint_query_image(path);
      if (query) {
        image = {{"file", path}, {"psid", query->psid}, {"version", query->fw_version}};
      } else {
        image = {{"file", path}, {"error", query.error().message}};
      }
      // A missing mstflint is not a property of the file: asked again next time.
      if (!query && query.error().kind == ErrorKind::kNotFound) {
        out["error"] = query.error().message;
        return out;
      }
      std::lock_guard lock(g_images_mutex);
      g_image_cache[key] = image;
    }
    (image.contains("error") ? unreadable : found).push_back(image);
  }
  out["found"] = std::move(found);
  if (!unreadable.empty()) out["unreadable"] = std::move(unreadable);
  return out;
}


// What mstfwreset 4.21 checks on the host before a reset, read as it reads them (mstfwreset.py
// v4.21.0-1 main() 1677-1686, mlxfwreset_mlnxdriver.py MlnxDriverLinux.__init__ 150-199), and the
// adapter's PCI functions: their drivers and VFs. Facts, not verdicts: plan_activation judges them.
nlohmann::json observe_reset_host(Platform& platform, const std::string& pci) {
  const HostFs& fs = platform.fs();
  nlohmann::json host = nlohmann::json::object();
  // is_uefi_secureboot: `mokutil --sb-state` says "SecureBoot enabled", i.e. the EFI variable
  // SecureBoot (4 attribute bytes, then the value) is 1.
  if (auto sb = fs.read_file("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"); sb) {
    host["secureBoot"] = sb->size() >= 5 && (*sb)[4] == 1;
  } else {
    host["secureBoot"] = false;
  }
  // `lscpu` prints "Hypervisor vendor" when CPUID says a hypervisor runs, which the kernel shows
  // as the cpuinfo flag "hypervisor" (x86; other machines: not known here).
  bool vm = false;
  if (auto cpuinfo = fs.read_file("/proc/cpuinfo"); cpuinfo) {
    for (size_t at = 0; (at = cpuinfo->find(" hypervisor", at)) != std::string::npos; ++at) {
      const char next = at + 11 < cpuinfo->size() ? (*cpuinfo)[at + 11] : '\n';
      if (next == ' ' || next == '\n') vm = true;
    }
  }
  host["virtualMachine"] = vm;
  // `pgrep opensm`: a process whose name contains "opensm".
  bool opensm = false;
  if (auto procs = fs.list("/proc"); procs) {
    for (const std::string& pid : *procs) {
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (auto comm = fs.read("/proc/" + pid + "/comm"); comm && comm->find("opensm") != std::string::npos) opensm = true;
    }
  }
  host["opensmRunning"] = opensm;
  // Every function of the adapter's domain:bus:device ("find /sys/bus/pci/drivers | grep dbd"), its
  // driver and, on a PF, its VFs.
  nlohmann::json functions = nlohmann::json::array();
  const std::string dbd = pci.substr(0, pci.rfind('.'));
  if (auto devices = fs.list("/sys/bus/pci/devices"); devices) {
    std::vector<std::string> names = *devices;
    std::sort(names.begin(), names.end());
    for (const std::string& bdf : names) {
      if (bdf.rfind(dbd + ".", 0) != 0) continue;
      nlohmann::json f = {{"pci", bdf}};
      if (fs.exists("/sys/bus/pci/devices/" + bdf + "/physfn")) f["vf"] = true;
      if (auto driver = fs.read_link("/sys/bus/pci/devices/" + bdf + "/driver"); driver) {
        f["driver"] = driver->substr(driver->rfind('/') + 1);
      }
      if (auto vfs = fs.read("/sys/bus/pci/devices/" + bdf + "/sriov_numvfs"); vfs) {
        try {
          f["sriovNumvfs"] = std::stoi(*vfs);
        } catch (const std::exception&) {
        }
      }
      // The VFs' netdevs (virtfnN links to each VF's device): what goes down with them.
      nlohmann::json vf_netdevs = nlohmann::json::array();
      if (auto entries = fs.list("/sys/bus/pci/devices/" + bdf); entries) {
        std::vector<std::string> virtfns;
        for (const std::string& e : *entries) {
          if (e.rfind("virtfn", 0) == 0) virtfns.push_back(e);
        }
        std::sort(virtfns.begin(), virtfns.end());
        for (const std::string& v : virtfns) {
          if (auto nets = fs.list("/sys/bus/pci/devices/" + bdf + "/" + v + "/net"); nets) {
            for (const std::string& n : *nets) vf_netdevs.push_back(n);
          }
        }
      }
      if (!vf_netdevs.empty()) f["vfNetdevs"] = std::move(vf_netdevs);
      functions.push_back(std::move(f));
    }
  }
  host["functions"] = std::move(functions);
  return host;
}

// How an activation by reset can be done: mstfwreset's levels and sync owners with what it checks
// on the host, else devlink's reload actions.
nlohmann::json observe_activation_tool(Platform& platform, const std::string& pci) {
  auto levels = mstfwreset_query(pci);
  if (levels) {
    nlohmann::json list = nlohmann::json::array();
    for (const FwResetLevel& l : levels->levels) {
      list.push_back({{"level", l.level}, {"description", l.description}, {"supported", l.supported},
                      {"default", l.is_default}});
    }
    nlohmann::json out = {{"tool", "mstfwreset"}, {"levels", std::move(list)}, {"host", observe_reset_host(platform, pci)}};
    if (levels->driver_sync) out["driverSync"] = *levels->driver_sync;
    return out;
  }
  std::string why = "mstfwreset: " + levels.error().message;
  // mstfwreset is absent or cannot read this adapter: the kernel's fw_activate.
  if (auto devlink = platform.devlink(); devlink) {
    auto support = (*devlink)->reload_support(DevlinkHandle{"pci", pci});
    if (support) {
      return {{"tool", "devlink"}, {"fwActivate", support->fw_activate}, {"noReset", support->fw_activate_no_reset}};
    }
    why += "; devlink: " + support.error().message;
  } else {
    why += "; devlink: " + devlink.error().message;
  }
  return {{"error", why}};
}

// The netdevs that carry a default route (IPv4 /proc/net/route: Destination and Mask 00000000;
// IPv6 /proc/net/ipv6_route: destination ::/0), in this network namespace: the host's management
// path, which an activation by reset must not take down unasked.
nlohmann::json observe_default_routes(Platform& platform) {
  std::set<std::string> names;
  if (auto v4 = platform.fs().read_file("/proc/net/route"); v4) {
    std::istringstream in(*v4);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
      if (f >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask && dest == "00000000" &&
          mask == "00000000") {
        names.insert(iface);
      }
    }
  }
  if (auto v6 = platform.fs().read_file("/proc/net/ipv6_route"); v6) {
    std::istringstream in(*v6);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string dest, prefix, src, src_prefix, next_hop, metric, refcnt, use, flags, iface;
      if (f >> dest >> prefix >> src >> src_prefix >> next_hop >> metric >> refcnt >> use >> flags >> iface &&
          dest == std::string(32, '0') && prefix == "00" && iface != "lo") {
        names.insert(iface);
      }
    }
  }
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& n : names) out.push_back(n);
  return out;
}

// The reset's tool and the host's default routes.
// The netdevs stacked on the adapter's that go down with it: a bond, team, bridge, VLAN or macvlan
// (the kernel's /sys/class/net/<n>/upper_<u> and lower_<l> links, netdev_upper_dev_link) all of
// whose lower netdevs are the adapter's, its VFs' or such uppers themselves; a bond with a port on
// another adapter stays up. {"bond0": "ens1f0np0, ens1f1np1"}: each, with its lowers.
nlohmann::json observe_stacked(Platform& platform, const std::string& pci) {
  const HostFs& fs = platform.fs();
  std::set<std::string> down;
  const std::string dbd = pci.substr(0, pci.rfind('.'));
  if (auto devices = fs.list("/sys/bus/pci/devices"); devices) {
    for (const std::string& bdf : *devices) {
      if (bdf.rfind(dbd + ".", 0) != 0) continue;
      const std::string dir = "/sys/bus/pci/devices/" + bdf;
      std::vector<std::string> net_dirs = {dir + "/net"};
      if (auto entries = fs.list(dir); entries) {
        for (const std::string& e : *entries) {
          if (e.rfind("virtfn", 0) == 0) net_dirs.push_back(dir + "/" + e + "/net");
        }
      }
      for (const std::string& net : net_dirs) {
        if (auto names = fs.list(net); names) down.insert(names->begin(), names->end());
      }
    }
  }
  const auto links = [&](const std::string& netdev, const std::string& prefix) {
    std::vector<std::string> out;
    if (auto entries = fs.list("/sys/class/net/" + netdev); entries) {
      for (const std::string& e : *entries) {
        if (e.rfind(prefix, 0) == 0 && e.size() > prefix.size()) out.push_back(e.substr(prefix.size()));
      }
    }
    return out;
  };
  nlohmann::json out = nlohmann::json::object();
  // Upward, to a fixpoint: each pass may take down an upper whose last lower went down in it.
  for (bool grew = true; grew;) {
    grew = false;
    for (const std::string& n : std::set<std::string>(down)) {
      for (const std::string& upper : links(n, "upper_")) {
        if (down.contains(upper)) continue;
        const std::vector<std::string> lowers = links(upper, "lower_");
        if (lowers.empty() || !std::all_of(lowers.begin(), lowers.end(), [&](const std::string& l) { return down.contains(l); })) {
          continue;
        }
        std::string text;
        for (const std::string& l : lowers) text += (text.empty() ? "" : ", ") + l;
        out[upper] = text;
        down.insert(upper);
        grew = true;
      }
    }
  }
  return out;
}

nlohmann::json observe_activation(Platform& platform, const std::string& pci) {
  nlohmann::json how = observe_activation_tool(platform, pci);
  how["defaultRoute"] = observe_default_routes(platform);
  if (auto stacked = observe_stacked(platform, pci); !stacked.empty()) how["stacked"] = std::move(stacked);
  // serve's: no person reads its plans, and its API listens on these addresses (Platform).
  if (platform.unattended()) how["unattended"] = true;
  if (!platform.served_addresses().empty()) how["servedAddresses"] = platform.served_addresses();
  return how;
}

// ---- diff --------------------------------------------------------------------------------------

// How the image will be activated: the Change's detail["activation"], and what it disrupts.
struct Activation {
  nlohmann::json detail;     // {"tool": "reboot"} | {"tool": "mstfwreset", "level": N} | {"tool": "devlink"}
  std::string says;          // for the change's note
  bool disruptive = false;
  bool needs_reboot = true;
};

// Activation by the next reboot (nothing disrupted now), and why.
Activation reboot_activation(std::string says) {
  Activation a;
  a.detail = {{"tool", "reboot"}};
  a.says = std::move(says);
  return a;
}

// The VFs of the adapter's functions ("0000:3b:00.0: 4 VFs"), from observe_reset_host.
std::string describe_vfs(const nlohmann::json& host) {
  std::string out;
  for (const auto& f : host.value("functions", nlohmann::json::array())) {
    const int n = f.value("sriovNumvfs", 0);
    if (n <= 0) continue;
    out += (out.empty() ? "" : ", ") + f.value("pci", "") + ": " + std::to_string(n) + " VF" + (n == 1 ? "" : "s");
    std::string names;
    for (const auto& v : f.value("vfNetdevs", nlohmann::json::array())) {
      names += (names.empty() ? "" : ", ") + v.get<std::string>();
    }
    if (!names.empty()) out += " (" + names + ")";
  }
  return out;
}

// mstfwreset's activation (v4.21.0-1). Level 0 (live patch) sends MFRL and nothing stops; level 3
// restarts the driver and resets the PCI link of every function; 4 reboots the host and is left to
// the operator. The sync owner of level 3 (`--sync`, default 0: the tool): where `mstfwreset q` lists
// "1: Driver is the owner" as Supported, --sync 1 (execResLvl sends MFRL and mlx5's fw_reset.c stops,
// resets and reloads every function, the VFs kept: sriov.c mlx5_sriov_attach enables the PCI-level
// VFs again); else the tool, whose driver stop refuses while opensm runs and a function has another
// driver (vfio-pci), and writes 0 to sriov_numvfs (rdmactl writes the count back after the reset).
// Refused by the tool before anything: a virtual machine (every reset), UEFI Secure Boot with sync 0
// below level 4 (so level 0 too).
// With `burn_first` the level is decided after the burn, when MFRL tells what the firmware can do
// with the image then on flash: the plan allows level 0 and, where level 3 can run, level 3, and
// says what each takes down; apply never goes above the plan's maxLevel.
Result<Activation> plan_mstfwreset(const nlohmann::json& how, const std::vector<const DeviceState*>& devices,
                                   bool burn_first) {
  const nlohmann::json host = how.value("host", nlohmann::json::object());
  const auto supported = [&](int level) {
    for (const auto& l : how.value("levels", nlohmann::json::array())) {
      if (l.value("level", -1) == level) return l.value("supported", false);
    }
    return false;
  };
  bool driver_sync = how.value("driverSync", false);
  std::vector<std::string> blocked;  // why a level cannot run, for the note
  // mlx5 acknowledges the firmware's sync reset only when every function on the adapter's bus has
  // the PF's device ID (fw_reset.c mlx5_is_reset_now_capable -> mlx5_check_dev_ids, mainline
  // 92501fa6e421): a VF has another, so with VFs the driver refuses (NACK) and nothing is reset,
  // while mstfwreset --sync 1, which only sends MFRL (mstfwreset.py execResLvl), exits 0. Then the
  // tool's own sync is the one that works (it removes the VFs; rdmactl creates them again).
  std::string vfs_block_driver_sync;
  for (const auto& f : host.value("functions", nlohmann::json::array())) {
    if (f.value("sriovNumvfs", 0) > 0) {
      vfs_block_driver_sync += (vfs_block_driver_sync.empty() ? "" : ", ") + f.value("pci", "");
    }
  }
  if (driver_sync && !vfs_block_driver_sync.empty()) {
    driver_sync = false;
    blocked.push_back("the driver-owned reset sync is not used: " + vfs_block_driver_sync +
                      " has VFs, and mlx5 refuses the firmware's sync reset while a function of another device ID "
                      "is on the bus (fw_reset.c mlx5_check_dev_ids)");
  }
  if (host.value("virtualMachine", false)) {
    return reboot_activation("mstfwreset refuses every reset inside a virtual machine (lscpu reports a hypervisor: "
                             "mstfwreset.py main, \"The tool is not supported on virtual machines\"): the new image "
                             "runs after the next reboot");
  }
  // Level 0 as MFRL reports it now (for a burn: before it; apply asks again after it).
  bool level0 = supported(0);
  const bool level0_possible = !host.value("secureBoot", false);
  if (level0 && !level0_possible) {
    level0 = false;
    blocked.push_back("level 0 is refused under UEFI Secure Boot (\"The tool supports only reset-level 4 on UEFI "
                      "Secure Boot\")");
  }
  bool level3 = supported(3);
  if (level3 && !driver_sync) {
    if (host.value("secureBoot", false)) {
      level3 = false;
      blocked.push_back("level 3 with the tool as the reset-sync owner is refused under UEFI Secure Boot and the "
                        "adapter lists no driver-owned sync");
    }
    if (host.value("opensmRunning", false)) {
      level3 = false;
      blocked.push_back("opensm runs on this host, and mstfwreset, the reset-sync owner (the adapter lists no "
                        "driver-owned sync), refuses (\"Please stop opensm manually and resume operation\"): stop it or let "
                        "the reboot activate the image");
    }
    for (const auto& f : host.value("functions", nlohmann::json::array())) {
      const std::string driver = f.value("driver", "");
      // VFs never reach that check: the tool has emptied sriov_numvfs before it looks
      // (mlxfwreset_mlnxdriver.py MlnxDriverLinux.__init__); they are removed, as the plan says.
      if (f.value("vf", false)) continue;
      if (driver.empty() || driver == "mlx5_core" || driver == "rshim_pcie" || driver == "nvme") continue;
      level3 = false;
      blocked.push_back(f.value("pci", "") + " is bound to " + driver + ", which mstfwreset does not stop "
                        "(\"mlxfwreset doesn't support 3rd party driver\")");
    }
  }
  // A Socket Direct adapter's other PCI devices are reset with the one given only where mstfwreset
  // finds them (socket_direct_reset_gap); with the driver as the sync owner, mlx5's fw_reset.c
  // resets every PF of the firmware, peers included, and execResLvl runs no resetFlow of its own.
  std::optional<std::string> sd_gap;
  if (level3 && !driver_sync) sd_gap = socket_direct_reset_gap(devices);
  if (sd_gap) {
    level3 = false;
    if (!level0) return make_error(ErrorKind::kNotSupported, *sd_gap);
    blocked.push_back(*sd_gap);
  }
  const std::string functions = describe_functions(devices);
  const std::string vfs = describe_vfs(host);
  const std::string level3_takes =
      "level 3 (driver restart and PCI reset) takes every port of the adapter down and up: " + functions +
      (vfs.empty() ? std::string()
                   : driver_sync ? "; its VFs go down and come back (" + vfs + ")"
                                 : "; its VFs are removed (" + vfs + ": mstfwreset writes 0 to sriov_numvfs) and "
                                   "rdmactl creates them again after the reset");
  const std::string sync_text =
      driver_sync ? std::string(" with the driver as the reset-sync owner (--sync 1: mlx5 resets and reloads every "
                                "function of the firmware; on a multi-host adapter the other hosts' mlx5 acknowledge "
                                "the firmware's request too, by default, and their links reset as well") +
                        (host.value("opensmRunning", false)
                             ? "; the opensm running on this host loses its port until the driver is back"
                             : "") +
                        ")"
                  : "";
  std::string not_possible;
  for (const std::string& b : blocked) not_possible += "; " + b;
  Activation a;
  a.needs_reboot = false;
  if (burn_first && (level0 || level3)) {
    const int max_level = level3 ? 3 : 0;
    a.detail = {{"tool", "mstfwreset"}, {"decidedAfterBurn", true}, {"maxLevel", max_level},
                {"level0", level0_possible}, {"sync", driver_sync ? 1 : 0}};
    a.disruptive = level3;
    if (level0_possible && level3) {
      a.says = "the reset level is decided after the burn, by what the firmware supports with the new image on "
               "flash: level 0 (live patch: the links and RDMA devices stay up) where it can patch the image in, "
               "else " + level3_takes + sync_text + not_possible;
    } else if (level0) {
      a.says = "the reset level is decided after the burn: level 0 (live patch) where the firmware can patch the new "
               "image in; else nothing is reset and the image waits on flash (plan again)" + not_possible;
    } else {
      a.says = "mstfwreset " + level3_takes + sync_text + not_possible;
    }
    return a;
  }
  if (!burn_first) {
    for (const int level : {0, 3}) {
      if (!(level == 0 ? level0 && supported(0) : level3)) continue;
      a.detail = {{"tool", "mstfwreset"}, {"level", level}, {"maxLevel", level}, {"level0", level0_possible},
                  {"sync", level == 3 && driver_sync ? 1 : 0}};
      if (level == 0) {
        a.says = "mstfwreset level 0 (live patch): the links and RDMA devices stay up";
      } else {
        a.disruptive = true;
        a.says = "mstfwreset " + level3_takes + sync_text;
      }
      return a;
    }
  }
  return reboot_activation("mstfwreset can run neither level 0 nor level 3 on this adapter" +
                           (not_possible.empty() ? std::string() : " (" + not_possible.substr(2) + ")") +
                           ": the new image runs after the next reboot");
}

Result<Activation> plan_activation(const FirmwareSpec& spec, const nlohmann::json& observed,
                                   const std::vector<const DeviceState*>& devices, bool burn_first) {
  if (activation_of(spec) == "reboot") return reboot_activation("the new image runs after the next reboot");
  Activation a;
  const std::string functions = describe_functions(devices);
  const nlohmann::json how = observed.value("activation", nlohmann::json());
  if (!how.is_object()) {
    return make_error(ErrorKind::kNotFound, "how to activate the image was not observed (a recorded state): plan on "
                                            "the host itself");
  }
  if (how.contains("error")) return make_error(ErrorKind::kNotSupported, "cannot activate by reset: " + json_plain_text(how["error"]));
  if (how.value("tool", "") == "mstfwreset") return plan_mstfwreset(how, devices, burn_first);
  if (how.value("tool", "") == "devlink" && how.value("fwActivate", false)) {
    // mlx5 (devlink.c mlx5_devlink_reload_down): fw_activate with the no_reset limit is a live
    // patch, refused (EINVAL, "FW upgrade to the stored FW can't be done by FW live patching")
    // when the image cannot be patched in; without a limit it is a firmware sync reset and a
    // driver reload of every function (mlx5_devlink_reload_up performs driver_reinit too).
    const bool no_reset = how.value("noReset", false);
    a.detail = {{"tool", "devlink"}, {"noReset", no_reset}};
    a.needs_reboot = false;
    a.disruptive = true;
    a.says = std::string(no_reset ? "devlink dev reload action fw_activate limit no_reset (a live patch) where the "
                                    "firmware can patch this image in, else " : "") +
             "devlink dev reload action fw_activate (a firmware reset and driver reload): the links and RDMA "
             "devices of every port of the adapter go down and come back: " + functions;
    return a;
  }
  return reboot_activation("the driver offers no fw_activate reload and mstfwreset is not installed: the new image "
                           "runs after the next reboot");
}

// The one image of the wanted version for this PSID.
Result<std::string> choose_image(const nlohmann::json& images, const std::string& psid, const std::string& version) {
  const std::string dir = images.value("dir", "");
  if (images.contains("error")) return make_error(ErrorKind::kNotFound, "images " + dir + ": " + json_plain_text(images["error"]));
  std::vector<std::string> matches;
  std::string seen;
  for (const auto& image : images.value("found", nlohmann::json::array())) {
    const std::string file = image.value("file", "");
    const std::string v = image.value("version", "");
    const std::string p = image.value("psid", "");
    seen += (seen.empty() ? "" : ", ") + file + " (" + p + " " + v + ")";
    if (p == psid && same_version(v, version)) matches.push_back(file);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    return make_error(ErrorKind::kNotFound, "no image in " + dir + " has PSID " + psid + " and version " + version +
                                                (seen.empty() ? ": the directory holds no image mstflint can read"
                                                              : "; found: " + seen));
  }
  std::string list;
  for (const std::string& m : matches) list += (list.empty() ? "" : ", ") + m;
  return make_error(ErrorKind::kInvalidSpec, "several images in " + dir + " have PSID " + psid + " and version " +
                                                 version + ": " + list + "; keep one");
}

// What the steps of diff_adapter share about one adapter: the spec's firmware, what was observed
// of its primary function, and where its errors and changes go.
struct AdapterDiff {
  AdapterDiff(const Wanted& wanted, const HostState& host, DiffResult& result)
      : w(wanted), state(host), out(result), spec(w.iface->firmware), version(*spec.version),
        primary(*w.devices.front()) {}

  void fail(ErrorKind kind, const std::string& message) const {
    out.errors.push_back(selector_error(*w.iface, make_error(kind, message)));
  }

  const Wanted& w;
  const HostState& state;
  DiffResult& out;
  const FirmwareSpec& spec;
  const std::string& version;
  const DeviceState& primary;
  nlohmann::json observed;  // the primary function's firmware, as observe recorded it
  FirmwareView view;
  std::string where;    // "adapter <name> (PSID <psid>)": how its errors name it
  bool update = false;  // policy update: rdmactl may burn and activate
};

class FirmwareReconciler final : public Reconciler {
 public:
  const char* name() const override { return kFirmwareName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    std::map<std::string, const FirmwareSpec*> asked;  // adapter -> spec
    if (spec) {
      for (const InterfaceSpec& iface : spec->interfaces) {
        if (!iface.firmware.version) continue;
        auto ref = state.resolve_port(iface.selector);
        if (!ref || ref->device->pci.empty()) continue;  // diff reports it
        asked.emplace(adapter_of_pci(ref->device->pci), &iface.firmware);
      }
    }
    // Where a spec names firmware, every PCI device is identified (its lowest function, as mstfwreset
    // reads function 0 only): an adapter may have functions on other buses (Socket Direct), which
    // the spec's interface does not name. show (no spec) asks mstflint of every device anyway.
    std::set<std::string> identified;
    for (DeviceState& device : state.devices) {
      if (device.pci.empty()) continue;  // Soft-RoCE, siw: no adapter
      const std::string pci_device = adapter_of_pci(device.pci);
      const bool ask_identity = !asked.empty() && !identified.contains(pci_device);
      device.firmware = observe_device(platform, device, spec == nullptr || asked.contains(pci_device), ask_identity);
      const nlohmann::json id = device.firmware->value("identity", nlohmann::json::object());
      if (id.contains("baseMac") || id.contains("serialNumber")) identified.insert(pci_device);
    }
    // The spec's adapters, now that their functions are known by identity.
    std::map<std::string, const FirmwareSpec*> adapters;
    for (const auto& [pci_device, firmware] : asked) {
      for (const DeviceState& d : state.devices) {
        if (!d.pci.empty() && adapter_of_pci(d.pci) == pci_device) adapters.emplace(adapter_of(state, d), firmware);
      }
    }
    // A burn or reset under way through another function of the adapter (its lock is the adapter's).
    for (DeviceState& device : state.devices) {
      if (device.pci.empty() || !device.firmware) continue;
      const std::string adapter = adapter_of(state, device);
      if (adapter == adapter_of_pci(device.pci) || device.firmware->contains("operationInProgress")) continue;
      if (auto running = FirmwareLock::in_progress(adapter)) {
        (*device.firmware)["operationInProgress"] = *running;
        (*device.firmware)["notes"].push_back("a firmware operation is in progress on this adapter (" + *running +
                                              "): what was read may change when it ends; apply waits for it");
      }
    }
    // Where a burn or an activation is being planned: the images and the reset levels.
    for (const auto& [adapter, firmware] : adapters) {
      const std::vector<const DeviceState*> devices = adapter_devices(state, adapter);
      if (devices.empty()) continue;
      const auto found = std::find_if(state.devices.begin(), state.devices.end(),
                                      [&](const DeviceState& d) { return &d == devices.front(); });
      DeviceState& primary = *found;
      const FirmwareView view = firmware_view(primary);
      // Running the wanted version: nothing to burn (with another image waiting the plan is an error).
      if (same_version(view.running, *firmware->version)) continue;
      const bool stored_is_wanted = same_version(view.stored, *firmware->version);
      if (policy_of(*firmware) == "update" && !stored_is_wanted && firmware->images) {
        (*primary.firmware)["images"] = scan_images(*firmware->images);
      }
      if (policy_of(*firmware) == "update" && activation_of(*firmware) == "reset") {
        (*primary.firmware)["activation"] = observe_activation(platform, primary.pci);
      }
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    std::map<std::string, Wanted> wanted;
    for (const InterfaceSpec& iface : spec.interfaces) {
      if (!iface.firmware.any()) continue;
      if (!iface.firmware.version) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kInvalidSpec, "firmware gives no version (" + iface.firmware.origin.path + ")")));
        continue;
      }
      auto ref = state.resolve_port(iface.selector);
      if (!ref) {
        out.errors.push_back(selector_error(iface, ref.error()));
        continue;
      }
      if (ref->device->pci.empty()) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kNotSupported, ref->device->name + " has no PCI address, so no adapter "
                                                                            "firmware (a software RDMA device)")));
        continue;
      }
      const std::string adapter = adapter_of(state, *ref->device);
      auto [it, inserted] = wanted.emplace(adapter, Wanted{&iface, adapter, adapter_devices(state, adapter)});
      if (inserted) continue;
      const FirmwareSpec& first = it->second.iface->firmware;
      const FirmwareSpec& again = iface.firmware;
      if (!same_version(*first.version, *again.version) || policy_of(first) != policy_of(again) ||
          activation_of(first) != activation_of(again) || first.images != again.images) {
        out.errors.push_back(selector_error(
            iface, make_error(ErrorKind::kInvalidSpec,
                              "the firmware of adapter " + adapter + " is given twice, differently: " +
                                  describe_origin(first.origin) + " (" + it->second.iface->selector.describe() +
                                  ") asks for " + *first.version + " with policy " + policy_of(first) +
                                  ", this entry for " + *again.version + " with policy " + policy_of(again) +
                                  ": the ports of one adapter share its firmware")));
      }
    }
    for (const auto& [adapter, w] : wanted) diff_adapter(w, state, out);
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    if (change.field != kField) return unknown_field(change);
    const nlohmann::json& d = change.detail;
    const std::string pci = d.value("pci", "");
    const std::string wanted = change.desired.is_string() ? change.desired.get<std::string>() : "";
    if (pci.empty() || wanted.empty()) {
      return make_error(ErrorKind::kPlatform, "a firmware change without its plan (pci, version)", change.resource);
    }
    // One burn or reset per adapter on this host, whatever the namespace, for as long as the tool
    // runs (it inherits the lock): an orphaned burn is waited for, never joined by a second one.
    // How long: Platform::firmware_wait (apply: as long as a burn may take; serve: 30 s).
    // The adapter as the plan identified it: a Socket Direct adapter's functions on two buses are one
    // flash, so one lock.
    auto lock = FirmwareLock::acquire(
        d.value("adapter", adapter_of_pci(pci)), platform.firmware_wait(), "rdmactl " + change.resource + " " + wanted,
        [&](const std::string& holder) { platform.progress(change, "waiting: " + holder); },
        [&] { return platform.interrupt_signal(); });
    if (!lock) return located(lock.error(), change, "");
    FirmwareToolGuard guard;
    guard.lock_fd = lock->fd();
    guard.before_start = [&](const std::vector<std::string>& argv) { lock->record(argv, 0); };
    guard.on_started = [&](int pid) { lock->started(pid); };
    const nlohmann::json activation = d.value("activation", nlohmann::json::object());
    const std::string tool = activation.value("tool", "reboot");
    bool burn_needed = !d.value("image", "").empty();
    if (burn_needed || lock->waited()) {
      // The adapter as it is now that nothing else writes it: what another run's operation left
      // (one this run waited for, or one that ended between the plan and the lock) is adopted,
      // not redone. A burn takes minutes; this query takes a second.
      auto now = query_now(platform, pci);
      if (now && same_version(now->running, wanted) && same_version(now->stored, wanted)) {
        platform.progress(change, "the adapter runs " + wanted + " already (another operation did it): nothing to do");
        return ok();
      }
      if (now && burn_needed && same_version(now->stored, wanted)) {
        platform.progress(change, "the flash holds " + wanted + " already (another operation burnt it): not burnt again");
        burn_needed = false;
      }
    }
    if (burn_needed) {
      if (auto burnt = burn(platform, change, pci, d.value("image", ""), wanted, guard); !burnt) {
        // Ctrl-C (or a signal to the whole process group, as a unit with the default KillMode would
        // send; rdmactl's units use KillMode=mixed) reaches mstflint too, which aborts its burn
        // cleanly (flint.cpp TerminationHandler): say so, not only its exit code.
        if (const int signal = platform.interrupt_signal(); signal != 0) {
          Error e = burnt.error();
          const std::string flash = flash_now(platform, pci);
          e.message = signal_name(signal) + " stopped the burn: " + e.message + "; " + flash +
                      ", nothing was activated (no reset was run)";
          return e;
        }
        return burnt;
      }
    }
    if (tool == "reboot") return ok();
    // A signal to rdmactl alone during the burn (`kill PID`: the tool burnt on): the image stays on
    // flash (a burn is never undone), and no reset follows it (every port of the adapter would go
    // down).
    if (const int signal = platform.interrupt_signal(); signal != 0) {
      return make_error(ErrorKind::kInterrupted,
                        signal_name(signal) + " arrived during the burn: the image of " + wanted +
                            " is on flash but was not activated (no reset was run); it loads at the next reboot, or "
                            "with a reset in a maintenance window (activation: reset, then rdmactl apply: it picks the "
                            "level and the reset-sync owner)",
                        change.resource);
    }
    platform.progress(change, "activating " + wanted + " (" + change.note + ")");
    std::vector<std::pair<std::string, std::string>> vfs_to_restore;  // sriov_numvfs path, count
    if (tool == "mstfwreset") {
      if (auto reset = activate_mstfwreset(platform, change, pci, wanted, activation, guard, vfs_to_restore); !reset) {
        // The tool emptied sriov_numvfs before it failed (or was ended at its deadline): the VFs
        // are created again all the same, and the error says so.
        Error e = reset.error();
        if (const std::string not_restored = restore_vfs(platform, change, vfs_to_restore); !not_restored.empty()) {
          e.message += "; and the VFs it removed could not be created again (write the count back): " + not_restored;
        } else if (!vfs_to_restore.empty()) {
          e.message += "; the VFs it removed were created again";
        }
        return e;
      }
    } else if (tool == "devlink") {
      if (auto activated = devlink_activate(platform, change, pci, activation.value("noReset", false)); !activated) {
        return located(activated.error(), change,
                       "the image of " + wanted + " is on flash, but devlink reload action fw_activate failed: ");
      }
    } else {
      return make_error(ErrorKind::kPlatform, "unknown activation " + tool, change.resource);
    }
    auto running = read_back(platform, change, pci, wanted, /*running=*/true, kActivationReadBack);
    if (!running && tool == "mstfwreset" && activation.value("sync", 0) == 1) {
      // --sync 1 only asks the firmware (execResLvl sends MFRL and exits 0); mlx5 may refuse the sync
      // reset (fw_reset.c mlx5_sync_reset_request_event: "PCI Sync FW Update Reset Nack"), e.g. with
      // SFs, a bridge with hotplug enabled, no fast teardown, or a host with enable_remote_dev_reset off.
      Error e = running.error();
      e.message += "; with the driver as the reset-sync owner mstfwreset returns once the firmware "
                                 "has the request, and mlx5 may have refused it (the kernel log says \"PCI Sync FW "
                                 "Update Reset Nack\": subfunctions, a PCIe bridge with hotplug, or another host of "
                                 "the adapter with enable_remote_dev_reset off): the image waits for the next reboot";
      running = e;
    }
    // mstfwreset (the tool as the reset-sync owner) wrote 0 to sriov_numvfs and leaves it so
    // (mlxfwreset_mlnxdriver.py MlnxDriverLinux.__init__): the VFs are created again.
    if (const std::string not_restored = restore_vfs(platform, change, vfs_to_restore); !not_restored.empty()) {
      return make_error(ErrorKind::kPlatform,
                        "the adapter was reset, but its VFs could not be created again (write the count back): " +
                            not_restored,
                        change.resource);
    }
    return running;
  }

 private:
  // mstfwreset's level chosen now, with the image on flash (MFRL as `mstfwreset q` reads it): the
  // lowest supported level up to the plan's maxLevel; a reset the plan did not announce is refused.
  // Returns the sriov_numvfs files (and counts) the tool's own sync empties, to be written back.
  // The VFs written back (sriov_numvfs files the tool emptied): "" when all are, else what failed.
  static std::string restore_vfs(Platform& platform, const Change& change,
                                 const std::vector<std::pair<std::string, std::string>>& vfs) {
    std::string not_restored;
    for (const auto& [path, count] : vfs) {
      if (auto now = platform.fs().read(path); now && *now == count) continue;
      if (auto written = platform.fs().write(path, count); !written) {
        not_restored += (not_restored.empty() ? "" : "; ") + path + " (" + count + "): " + written.error().message;
      } else {
        platform.progress(change, "VFs created again: " + path + " = " + count);
      }
    }
    return not_restored;
  }

  // `restore` gets the sriov_numvfs files (and counts) the tool's own sync empties, before it runs.
  static Result<void> activate_mstfwreset(Platform& platform, const Change& change, const std::string& pci,
                                          const std::string& wanted, const nlohmann::json& activation,
                                          const FirmwareToolGuard& guard,
                                          std::vector<std::pair<std::string, std::string>>& restore) {
    const std::string on_flash = "the image of " + wanted + " is on flash, but ";
    auto now = mstfwreset_query(pci);
    if (!now) return located(now.error(), change, on_flash + "the reset levels could not be read: ");
    const int max_level = activation.value("maxLevel", activation.value("level", 3));
    const auto supported = [&](int level) {
      const FwResetLevel* l = now->find(level);
      return l != nullptr && l->supported;
    };
    int level = -1;
    for (const int candidate : {0, 3}) {
      if (candidate == 0 && !activation.value("level0", true)) continue;  // refused on this host (Secure Boot)
      if (candidate <= max_level && supported(candidate)) {
        level = candidate;
        break;
      }
    }
    if (level < 0) {
      const bool more = supported(3) && max_level < 3;
      return make_error(ErrorKind::kVerification,
                        on_flash + "mstfwreset supports no reset up to level " + std::to_string(max_level) +
                            " now (the plan's)" +
                            (more ? ": level 3, which takes every port of the adapter down, needs a new plan (plan "
                                    "again, read what it takes down, and apply that plan)"
                                  : "") +
                            "; nothing was reset, the image loads at the next reboot",
                        change.resource);
    }
    ResetSync sync = ResetSync::kTool;
    if (level == 3 && activation.value("sync", 0) == 1) {
      if (now->driver_sync != true) {
        return make_error(ErrorKind::kVerification,
                          on_flash + "the adapter no longer lists the driver as a reset-sync owner (mstfwreset q), "
                          "and the plan did not announce the tool's sync (which removes the VFs): plan again",
                          change.resource);
      }
      sync = ResetSync::kDriver;
    }
    if (level == 3 && sync == ResetSync::kTool) {
      // MlnxDriverLinux.__init__: "/sys/bus/pci/devices/{dbd}.{0,1}/sriov_numvfs", for pf 0 and 1.
      const std::string dbd = pci.substr(0, pci.rfind('.'));
      for (const char* pf : {".0", ".1"}) {
        const std::string path = "/sys/bus/pci/devices/" + dbd + pf + "/sriov_numvfs";
        auto count = platform.fs().read(path);
        if (!count) continue;
        std::string text = *count;
        while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
        if (!text.empty() && text != "0") restore.emplace_back(path, text);
      }
    }
    platform.progress(change, "mstfwreset q with " + wanted + " on flash: level " + std::to_string(level) +
                                  (sync == ResetSync::kDriver ? " (--sync 1)" : ""));
    if (auto reset = mstfwreset_reset(pci, level, kResetDeadline, guard, sync); !reset) {
      // The reset may have happened although the tool failed after it (master's
      // execute_driver_sync_reset: the MFRL write can fail once the reset has begun): asked once.
      if (auto now = query_now(platform, pci); now && same_version(now->running, wanted)) {
        platform.progress(change, "mstfwreset reported a failure (" + reset.error().message + "), but the adapter runs " +
                                      wanted);
        return ok();
      }
      return located(reset.error(), change, on_flash + "mstfwreset failed: ");
    }
    return ok();
  }

  static std::string signal_name(int signal) {
    const char* name = ::sigabbrev_np(signal);
    return std::string("SIG") + (name != nullptr ? name : std::to_string(signal).c_str());
  }

  // "the flash holds 22.39.1002" as the adapter answers now, for a report after a stopped burn.
  static std::string flash_now(Platform& platform, const std::string& pci) {
    auto now = query_now(platform, pci);
    if (!now) return "what the flash holds could not be read (" + now.error().message + ")";
    return "the flash holds " + (now->stored.empty() ? std::string("no readable version") : now->stored);
  }

  static Error located(Error e, const Change& change, const std::string& prefix) {
    e.message = prefix + e.message;
    e.where = change.resource;
    return e;
  }

  // The live patch first where the driver offers it, then the reset. A reload that outlives the
  // netlink socket's wait (mlx5 waits for the firmware's reset) may still finish: read back.
  static Result<void> devlink_activate(Platform& platform, const Change& change, const std::string& pci,
                                       bool no_reset) {
    auto devlink = platform.devlink();
    if (!devlink) return devlink.error();
    const DevlinkHandle handle{"pci", pci};
    if (no_reset) {
      auto patched = (*devlink)->reload_fw_activate(handle, true);
      if (patched || patched.error().kind == ErrorKind::kTimeout) return ok();
      if (patched.error().err_no != EINVAL) return patched.error();
      platform.progress(change, "no live patch (" + patched.error().message + "): fw_activate with a reset");
    }
    auto reset = (*devlink)->reload_fw_activate(handle, false);
    if (!reset && reset.error().kind != ErrorKind::kTimeout) return reset.error();
    return ok();
  }

  // The adapter's firmware as it is now (devlink, else mstflint), for reading back a write.
  static Result<FirmwareView> query_now(Platform& platform, const std::string& pci) {
    std::string why;
    if (auto devlink = platform.devlink(); devlink) {
      if (auto info = (*devlink)->info(DevlinkHandle{"pci", pci}); info) {
        FirmwareView v;
        v.running = info->running.contains("fw.version") ? info->running.at("fw.version") : "";
        v.stored = info->stored.contains("fw.version") ? info->stored.at("fw.version") : "";
        if (mlx5_version_unknown(v.stored)) v.stored.clear();
        if (mlx5_version_unknown(v.running)) v.running.clear();
        v.psid = info->fixed.contains("fw.psid") ? info->fixed.at("fw.psid") : "";
        v.source = "devlink";
        if (!v.running.empty()) return v;
      } else {
        why = "devlink: " + info.error().message + "; ";
      }
    }
    auto query = mstflint_query_device(pci);
    if (!query) return make_error(query.error().kind, why + "mstflint: " + query.error().message);
    FirmwareView v;
    v.stored = query->fw_version;
    v.running = query->running_version.empty() ? query->fw_version : query->running_version;
    v.psid = query->psid;
    v.source = "mstflint";
    return v;
  }

  static Result<void> burn(Platform& platform, const Change& change, const std::string& pci, const std::string& image,
                           const std::string& wanted, const FirmwareToolGuard& guard) {
    // What is burnt is what is checked: the image is read once into a private copy, the copy is
    // queried (its PSID and version must be the plan's), and the copy is burnt. A file swapped or
    // rewritten at `image` after this point reaches nothing.
    auto copy = firmware_image_copy(image);
    if (!copy) return located(copy.error(), change, "");
    auto named = [&](Error e, const std::string& prefix) {
      for (size_t at; (at = e.message.find(copy->path)) != std::string::npos;) e.message.replace(at, copy->path.size(), image);
      return located(std::move(e), change, prefix);
    };
    auto checked = mstflint_query_image(copy->path, copy->fd.get());
    if (!checked) return named(checked.error(), "checking " + image + " before the burn: ");
    auto adapter = query_now(platform, pci);
    if (!adapter) {
      return located(adapter.error(), change, "cannot read the adapter's PSID to check " + image + " against it: ");
    }
    const std::string& psid = adapter->psid;
    if (!same_version(checked->fw_version, wanted) || (!psid.empty() && checked->psid != psid)) {
      return make_error(ErrorKind::kVerification,
                        image + " is not the image that was planned any more: it holds " + checked->fw_version + " for " +
                            (checked->psid.empty() ? std::string("no PSID") : checked->psid) + ", the plan burns " + wanted +
                            (psid.empty() ? std::string() : " for " + psid) + "; nothing was burnt (plan again)",
                        change.resource);
    }
    platform.progress(change, "burning " + image + " onto " + pci + " (" + json_plain_text(change.current) + " -> " + wanted +
                                  "); this takes minutes");
    int last = -1;
    FirmwareToolGuard with_image = guard;
    with_image.image_fd = copy->fd.get();
    auto burnt = mstflint_burn(pci, copy->path, kBurnDeadline, [&](int percent) {
      // Every tenth: a line a person can follow and the audit log can keep.
      if (percent / 10 == last / 10 && percent != 100) return;
      last = percent;
      platform.progress(change, "burn " + std::to_string(percent) + "%");
    }, with_image);
    if (!burnt) return named(burnt.error(), "burning " + image + ": ");
    platform.progress(change, "burnt; reading the flash back");
    return read_back(platform, change, pci, wanted, /*running=*/false, std::chrono::seconds(0));
  }

  // Until the flash (running = false) or the running firmware (true) is `wanted`, for `patience`.
  static Result<void> read_back(Platform& platform, const Change& change, const std::string& pci,
                                const std::string& wanted, bool running, std::chrono::seconds patience) {
    const auto until = std::chrono::steady_clock::now() + patience;
    std::string last = "nothing readable";
    while (true) {
      auto now = query_now(platform, pci);
      if (now) {
        const std::string& seen = running ? now->running : now->stored;
        if (same_version(seen, wanted)) {
          if (running) platform.progress(change, "running " + seen);
          return ok();
        }
        last = seen.empty() ? "no version" : seen;
      } else {
        last = now.error().message;
      }
      if (std::chrono::steady_clock::now() >= until) break;
      std::this_thread::sleep_for(kReadBackInterval);
    }
    return make_error(ErrorKind::kVerification,
                      std::string(running ? "after the activation the adapter runs " : "after the burn the flash holds ") +
                          last + ", not " + wanted,
                      change.resource);
  }

  void diff_adapter(const Wanted& w, const HostState& state, DiffResult& out) const {
    AdapterDiff a(w, state, out);
    const FirmwareSpec& spec = a.spec;
    const std::string& version = a.version;
    const DeviceState& primary = a.primary;
    const std::string resource = "pci/" + primary.pci;
    if (!primary.firmware && primary.fw_version.empty()) {
      a.fail(ErrorKind::kNotFound, "the firmware of adapter " + w.adapter + " " +
                                       (state.recorded_from.empty() ? std::string("was not observed")
                                                                    : "is not in the recorded state " + state.recorded_from));
      return;
    }
    a.observed = primary.firmware.value_or(nlohmann::json::object());
    if (a.observed.value("virtualFunction", false)) {
      a.fail(ErrorKind::kNotSupported, primary.pci + " is a virtual function: its firmware is its physical function's; "
                                                     "select the physical function's interface");
      return;
    }
    a.view = firmware_view(primary);
    const FirmwareView& view = a.view;
    a.where = "adapter " + w.adapter + (view.psid.empty() ? "" : " (PSID " + view.psid + ")");
    if (view.running.empty()) {
      std::string why;
      for (const auto& n : a.observed.value("notes", nlohmann::json::array())) why += "; " + json_plain_text(n);
      a.fail(ErrorKind::kPlatform, "cannot read the firmware version of " + a.where + why);
      return;
    }
    out.compared(resource, kField, kFirmwareName);
    const bool runs_wanted = same_version(view.running, version);
    const bool stored_known = !view.stored.empty();
    const bool stored_is_wanted = stored_known && same_version(view.stored, version);
    if (runs_wanted && (!stored_known || stored_is_wanted)) return;

    Change change = make_change(resource, kField, view.running, version, kFirmwareName, false);
    change.detail = {{"pci", primary.pci}, {"psid", view.psid}, {"adapter", w.adapter}};
    a.update = policy_of(spec) == "update";
    if (runs_wanted) return diff_burn_back(a, std::move(change));
    if (stored_is_wanted) return diff_stored_wanted(a, std::move(change));
    if (burn_refused(a, stored_known)) return;
    diff_burn(a, std::move(change));
  }

  // The adapter runs the wanted version, but someone burnt another image that waits for the next
  // reset: it would replace the wanted one. Burning the wanted one back cannot be planned: the
  // firmware refuses every burn, of any version, until the waiting image is activated
  // (fw_comps_mgr.cpp: MCC_ERRCODE_BLOCKED_PENDING_RESET -> FWCOMPS_MCC_ERR_BLOCKED_PENDING_RESET,
  // kFlintPendingResetText), so the plan names the ways out instead.
  static void diff_burn_back(const AdapterDiff& a, Change) {
    const std::string& version = a.version;
    const FirmwareView& view = a.view;
    const std::string pci = a.primary.pci;
    a.fail(a.update ? ErrorKind::kPlatform : ErrorKind::kVerification,
           a.where + " runs " + version + ", but " + view.stored + " waits on flash and runs after the next firmware "
               "reset or reboot. It cannot be burnt back now: the firmware takes no image, not even the running "
               "one, until the waiting one is activated (mstflint: \"" + std::string(kFlintPendingResetText) +
               "\"). Either activate it (reboot, or activation: reset and rdmactl apply), then " +
               (a.update ? "apply again: rdmactl burns " + version + " and activates it"
                         : "burn " + version + " (policy: update with images lets rdmactl do it)") +
               "; or let " + view.stored + " run and set the spec's version to it (" + a.spec.origin.path +
               ".version)");
  }

  // Burnt earlier (by rdmactl or by hand) and waiting for activation: never burnt twice.
  static void diff_stored_wanted(const AdapterDiff& a, Change change) {
    const FirmwareSpec& spec = a.spec;
    const std::string& version = a.version;
    if (!a.update || activation_of(spec) == "reboot") {
      change.requires_ = "reboot";
      change.status = ChangeStatus::kPendingReboot;
      change.detail["activation"] = {{"tool", "reboot"}};
      change.via = "already on flash";
      change.note = "the image of " + version + " is on flash and waits for activation: it runs after the next "
                    "reboot" + std::string(a.update ? "" : " (policy validate: rdmactl does not activate it)") +
                    "; it is not burnt again";
      a.out.changes.push_back(std::move(change));
      return;
    }
    auto activation = plan_activation(spec, a.observed, a.w.devices, /*burn_first=*/false);
    if (!activation) return a.fail(activation.error().kind, a.where + ": " + activation.error().message);
    if (management_refused(a, *activation)) return;
    // serve does not take down what no plan it ran announced: a disruptive reset goes with the burn
    // of the plan that said so. An image already waiting (a reset that failed or was refused, a
    // plan that offered only a live patch, a burn by hand) is activated disruptively by a plan a
    // person reads: `rdmactl apply`, or the next reboot.
    if (activation->disruptive &&
        a.observed.value("activation", nlohmann::json::object()).value("unattended", false)) {
      return a.fail(ErrorKind::kNotSupported,
                    a.where + ": the image of " + version + " waits on flash, and activating it now takes down more "
                    "than a live patch (" + activation->says + "); the agent does not run such a reset for an image "
                    "it did not burn in the same pass: run `rdmactl plan` and `rdmactl apply` on this node, or reboot it");
    }
    change.detail["activation"] = activation->detail;
    change.disruptive = activation->disruptive;
    change.via = via_of(activation->detail, a.primary.pci);
    change.note = "the image of " + version + " is already on flash (not burnt again); " + activation->says;
    if (activation->needs_reboot) {
      change.requires_ = "reboot";
      change.status = ChangeStatus::kPendingReboot;
    }
    a.out.changes.push_back(std::move(change));
  }

  // An activation that may take down a netdev carrying a default route (the host's management path):
  // refused (an error of the plan) unless the spec's firmware.allowManagementOutage is true; when it
  // is, the change's note says which. The netdevs are the adapter's ports' and its VFs'.
  static bool management_refused(const AdapterDiff& a, Activation& activation) {
    if (!activation.disruptive) return false;
    const nlohmann::json how = a.observed.value("activation", nlohmann::json::object());
    std::set<std::string> routed;
    for (const auto& n : how.value("defaultRoute", nlohmann::json::array())) routed.insert(n.get<std::string>());
    std::vector<std::string> down;
    for (const DeviceState* d : a.w.devices) {
      for (const PortState& p : d->ports) {
        if (!p.netdev.empty()) down.push_back(p.netdev);
      }
    }
    for (const auto& f : how.value("host", nlohmann::json::object()).value("functions", nlohmann::json::array())) {
      for (const auto& v : f.value("vfNetdevs", nlohmann::json::array())) down.push_back(v.get<std::string>());
    }
    // Bonds, bridges, VLANs and macvlans on them that go down too (observe_stacked).
    std::map<std::string, std::string> stacked_on;
    const nlohmann::json stacked = how.value("stacked", nlohmann::json::object());
    for (const auto& [upper, lowers] : stacked.items()) {
      down.push_back(upper);
      stacked_on[upper] = lowers.get<std::string>();
    }
    // The netdevs that carry an address serve's API listens on (HostState's addresses, CIDR text).
    std::map<std::string, std::string> served;  // netdev -> address
    for (const auto& address : how.value("servedAddresses", nlohmann::json::array())) {
      const std::string wanted = address.get<std::string>();
      for (const NetdevState& n : a.state.netdevs) {
        for (const std::string& cidr : n.addresses) {
          if (cidr.substr(0, cidr.find('/')) == wanted) served[n.name] = wanted;
        }
      }
    }
    std::string hit;  // "ens1f0np0 (a default route)", ...
    std::set<std::string> said;
    for (const std::string& n : down) {
      if (said.contains(n)) continue;
      std::string why;
      if (routed.contains(n)) why = "it carries a default route";
      if (const auto s = served.find(n); s != served.end()) {
        why += (why.empty() ? "it carries " : " and ") + s->second + ", the address the agent's API listens on";
      }
      if (why.empty()) continue;
      said.insert(n);
      if (const auto on = stacked_on.find(n); on != stacked_on.end()) why = "on " + on->second + "; " + why;
      hit += (hit.empty() ? "" : ", ") + n + " (" + why + ")";
    }
    if (hit.empty()) return false;
    if (a.spec.allow_management_outage.value_or(false)) {
      activation.says += "; " + hit + " goes down too: the management path (firmware.allowManagementOutage)";
      return false;
    }
    a.fail(ErrorKind::kNotSupported,
           a.where + ": the activation by reset (" + activation.says + ") takes down " + hit +
               ": the host's management path (and an agent's API reached through it) goes down with it; set "
               "allowManagementOutage: true in " + a.spec.origin.path + " to allow it, or activation: reboot");
    return true;
  }

  // Whether a burn of the wanted version cannot be planned (said in a.out's errors): policy
  // validate, no images, or an image already waiting on flash.
  static bool burn_refused(const AdapterDiff& a, bool stored_known) {
    const FirmwareSpec& spec = a.spec;
    const std::string& version = a.version;
    const FirmwareView& view = a.view;
    if (!a.update) {
      a.fail(ErrorKind::kVerification,
             a.where + " runs " + view.running + (stored_known && view.pending() ? " (" + view.stored + " waits on flash)" : "") +
                 ", the spec wants " + version + " (" + spec.origin.path + ".version); policy validate: rdmactl does "
                 "not burn firmware; set policy: update with images to let it");
      return true;
    }
    if (!spec.images) {
      a.fail(ErrorKind::kInvalidSpec, "policy update needs images: a directory of firmware images (" + spec.origin.path + ")");
      return true;
    }
    if (stored_known && view.pending()) {
      // The firmware blocks a burn while an image waits (fw_comps_mgr.cpp,
      // FWCOMPS_MCC_ERR_BLOCKED_PENDING_RESET): planning one would only fail half-way.
      a.fail(ErrorKind::kPlatform,
             a.where + " runs " + view.running + " and " + view.stored + " waits on flash for activation: the firmware "
                 "takes no other image until a reset or reboot loads it (mstflint: \"" + std::string(kFlintPendingResetText) +
                 "\"); reboot, or activate it (activation: reset), then apply " + version + " again");
      return true;
    }
    return false;
  }

  // The burn of the wanted image and its activation (from a recorded state: described, not chosen).
  static void diff_burn(const AdapterDiff& a, Change change) {
    const FirmwareSpec& spec = a.spec;
    const std::string& version = a.version;
    const FirmwareView& view = a.view;
    const DeviceState& primary = a.primary;
    std::string image_text;
    if (a.state.recorded_from.empty()) {
      auto image = image_for(spec, a.observed, view, version);
      if (!image) return a.fail(image.error().kind, a.where + ": " + image.error().message);
      change.detail["image"] = *image;
      image_text = *image;
    } else {
      image_text = "<the image in " + *spec.images + " with PSID " + (view.psid.empty() ? "<the adapter's>" : view.psid) +
                   " and version " + version + ">";
    }
    Activation activation;
    if (a.state.recorded_from.empty()) {
      auto planned = plan_activation(spec, a.observed, a.w.devices, /*burn_first=*/true);
      if (!planned) return a.fail(planned.error().kind, a.where + ": " + planned.error().message);
      if (management_refused(a, *planned)) return;
      activation = *planned;
    } else {
      // From a recorded state: the host chooses the reset when it plans (its mstfwreset levels).
      activation.detail = {{"tool", activation_of(spec) == "reset" ? "host's reset" : "reboot"}};
      activation.disruptive = activation_of(spec) == "reset";
      activation.needs_reboot = activation_of(spec) == "reboot";
      activation.says = activation.needs_reboot
                            ? "the new image runs after the next reboot"
                            : "activated by the lowest firmware reset the adapter supports (mstfwreset level 0, a live "
                              "patch, else level 3, which takes every port of the adapter down and up: " +
                                  describe_functions(a.w.devices) + "), chosen when the host plans";
    }
    change.detail["activation"] = activation.detail;
    change.disruptive = activation.disruptive;
    if (activation.needs_reboot) change.requires_ = "reboot";
    change.via = "mstflint -d " + primary.pci + " -i " + image_text + " -y burn, then " +
                 via_of(activation.detail, primary.pci);
    // firmware_view left mlx5's unreadable-version marks out: an unknown version is never a downgrade.
    const auto order = compare_fw_versions(view.running, version);
    const std::vector<std::string> pci_devices = pci_devices_of(a.w.devices);
    change.note = std::string(order && *order > 0 ? "a downgrade; " : "") + "burnt once for the adapter's " +
                  std::to_string(a.w.devices.size()) + " function(s)" +
                  (pci_devices.size() > 1 ? " on the PCI devices " + join_words(pci_devices) +
                                                " (one adapter: the firmware gives them one identity)"
                                          : std::string()) +
                  ", before any other change; " + activation.says + "; a burnt image is never rolled back";
    a.out.changes.push_back(std::move(change));
  }

  static Result<std::string> image_for(const FirmwareSpec& spec, const nlohmann::json& observed,
                                       const FirmwareView& view, const std::string& version) {
    if (!spec.images) return make_error(ErrorKind::kInvalidSpec, "policy update needs images (" + spec.origin.path + ")");
    if (view.psid.empty()) {
      return make_error(ErrorKind::kPlatform,
                        "the adapter's PSID is unknown (devlink and mstflint did not answer): rdmactl burns only an "
                        "image whose PSID is the adapter's");
    }
    const nlohmann::json images = observed.value("images", nlohmann::json());
    if (!images.is_object()) return make_error(ErrorKind::kNotFound, "the images in " + *spec.images + " were not read");
    return choose_image(images, view.psid, version);
  }

  static std::string via_of(const nlohmann::json& activation, const std::string& pci) {
    const std::string tool = activation.value("tool", "reboot");
    if (tool == "mstfwreset") {
      const std::string sync = activation.value("sync", 0) == 1 ? " --sync 1" : "";
      if (activation.value("decidedAfterBurn", false)) {
        return "mstfwreset -d " + pci + " q, then mstfwreset -d " + pci + " --level " +
               (activation.value("maxLevel", 0) == 3 ? "0|3" : "0") + (sync.empty() ? "" : " (level 3" + sync + ")") +
               " -y reset";
      }
      return "mstfwreset -d " + pci + " --level " + std::to_string(activation.value("level", 3)) +
             (activation.value("level", 3) == 3 ? sync : "") + " -y reset";
    }
    if (tool == "devlink") return "devlink dev reload pci/" + pci + " action fw_activate";
    if (tool == "host's reset") return "mstfwreset -d " + pci + " or devlink fw_activate";
    return "a reboot";
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_firmware_reconciler() { return std::make_unique<FirmwareReconciler>(); }

}  // namespace rdmactl::reconcilers
