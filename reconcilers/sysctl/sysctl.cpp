// The sysctl reconciler: reads and writes /proc/sys under --root. Values compare with runs of
// whitespace folded, since the kernel prints vectors with tabs (tcp_rmem "4096\t131072\t6291456").
#include "reconcilers/sysctl/sysctl.h"

#include <sstream>

#include "reconcilers/resource.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kName = "sysctl";

std::string normalize(const std::string& value) {
  std::istringstream in(value);
  std::string word;
  std::string out;
  while (in >> word) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

class SysctlReconciler final : public Reconciler {
 public:
  const char* name() const override { return kName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    state.sysctl.clear();
    std::vector<std::string> keys = default_sysctl_keys();
    if (spec) {
      for (const auto& [key, value] : spec->sysctl) keys.push_back(key);
    }
    for (const std::string& key : keys) {
      // A key this kernel lacks is left out; diff reports it if the spec asks for it.
      if (auto value = platform.fs().read(sysctl_path(key))) state.sysctl[key] = normalize(*value);
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const auto& [key, value] : spec.sysctl) {
      const auto found = state.sysctl.find(key);
      if (found == state.sysctl.end()) {
        const std::string why =
            state.recorded_from.empty()
                ? "sysctl " + key + " does not exist on this host (no " + sysctl_path(key) + ")"
                : "sysctl " + key + " is not in the recorded state " + state.recorded_from +
                      " (record it with `rdmactl show -f SPEC --format json`)";
        out.errors.push_back(make_error(ErrorKind::kNotFound, why, "sysctl." + key));
        continue;
      }
      if (normalize(found->second) != normalize(value)) {
        out.changes.push_back(make_change("sysctl/" + key, "value", found->second, value, kName, false));
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    const std::string key = change.resource.substr(std::string("sysctl/").size());
    return platform.fs().write(sysctl_path(key), change.desired.get<std::string>());
  }
};

}  // namespace

std::unique_ptr<Reconciler> make_sysctl_reconciler() { return std::make_unique<SysctlReconciler>(); }

const std::vector<std::string>& default_sysctl_keys() {
  static const std::vector<std::string> kKeys = {
      "net.ipv4.tcp_ecn",
      "net.core.rmem_max",
      "net.core.wmem_max",
      "net.ipv4.conf.all.arp_ignore",
      "net.ipv4.conf.all.arp_announce",
      "net.ipv4.conf.all.rp_filter",
  };
  return kKeys;
}

std::string sysctl_path(const std::string& key) {
  std::string path = key;
  if (path.find('/') == std::string::npos) {
    for (char& c : path) {
      if (c == '.') c = '/';
    }
  }
  return "/proc/sys/" + path;
}

}  // namespace rdmactl::reconcilers
