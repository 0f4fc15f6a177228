// SPDX-License-Identifier: Apache-2.0
// The sysctl reconciler: reads and writes /proc/sys under --root, inside the host's scope
// (scope.h). Values compare with runs of whitespace folded, since the kernel prints vectors with
// tabs (tcp_rmem "4096\t131072\t6291456").
//
// The scope is decided in observe, where the host is: a key outside it is not read, and diff
// reports it with the reason. A diff over a state this reconciler did not observe (a recorded
// state, or one observed by another Engine) knows only what the state holds: a key the
// observation left out is an error worded for every reason it may have been left out. apply
// checks the scope again before every write, whatever the plan says.
#include "reconcilers/sysctl/sysctl.h"

#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <sstream>

#include "agent/core/text.h"
#include "reconcilers/common/resource.h"
#include "reconcilers/sysctl/scope.h"

namespace rdmactl::reconcilers {
namespace {

constexpr const char* kSysctlName = "sysctl";
constexpr const char* kResourcePrefix = "sysctl/";

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
  explicit SysctlReconciler(SysctlOptions options) : options_(options) {}

  const char* name() const override { return kSysctlName; }

  Result<void> observe(Platform& platform, const NodeSpec* spec, HostState& state) override {
    state.sysctl.clear();
    refused_.clear();
    scope_.emplace(load_sysctl_scope(platform.fs(), options_.in_other_netns));
    observed_ = true;
    for (const std::string& line : scope_->allow_list().ignored) {
      spdlog::warn("{}: {}: the line is ignored", kSysctlAllowListPath, line);
    }
    std::vector<std::string> keys;
    for (const std::string& key : default_sysctl_keys()) {
      if (!scope_->refusal(key)) keys.push_back(key);
    }
    if (spec) {
      for (const auto& [key, value] : spec->sysctl) {
        if (auto why = scope_->refusal(key)) {
          // Once a run: apply observes again to verify, and the diff's error says it anyway.
          if (warned_.insert(key).second) spdlog::warn("sysctl {} {}", escape_for_display(key), *why);
          refused_[key] = *why;
          continue;
        }
        keys.push_back(key);
      }
    }
    for (const std::string& key : keys) {
      const std::string path = sysctl_path(key);
      if (path.empty()) continue;
      // A key this kernel lacks is left out; diff reports it if the spec asks for it. The value
      // goes into JSON reports: whatever the file holds, it is shown as valid UTF-8.
      if (auto value = platform.fs().read(path)) state.sysctl[key] = escape_for_display(normalize(*value));
    }
    return ok();
  }

  void diff(const NodeSpec& spec, const HostState& state, DiffResult& out) const override {
    for (const auto& [key, value] : spec.sysctl) {
      const auto origin = spec.sysctl_origins.find(key);
      const std::string where =
          origin != spec.sysctl_origins.end() ? describe_origin(origin->second) : "sysctl." + key;
      if (const auto refused = refused_.find(key); refused != refused_.end()) {
        out.errors.push_back(make_error(ErrorKind::kNotSupported, "sysctl " + key + " " + refused->second, where));
        continue;
      }
      const auto found = state.sysctl.find(key);
      if (found == state.sysctl.end()) {
        out.errors.push_back(absent_key_error(key, state, where));
        continue;
      }
      out.compared(kResourcePrefix + key, "value", kSysctlName);
      if (normalize(found->second) != normalize(value)) {
        out.changes.push_back(make_change(kResourcePrefix + key, "value", found->second, value, kSysctlName, false));
      }
    }
  }

  Result<void> apply(Platform& platform, const HostState&, const Change& change) override {
    const std::string key = change.resource.substr(std::string(kResourcePrefix).size());
    // Whatever planned this change, nothing outside the host's scope is written.
    const SysctlScope scope = scope_ ? *scope_ : load_sysctl_scope(platform.fs(), options_.in_other_netns);
    if (auto why = scope.refusal(key)) {
      return make_error(ErrorKind::kNotSupported, "sysctl " + key + " " + *why, change.resource);
    }
    const std::string path = sysctl_path(key);
    if (path.empty() || !change.desired.is_string()) return unknown_field(change);
    return platform.fs().write(path, change.desired.get<std::string>());
  }

 private:
  // The key is not in the state. Only an observation by this reconciler knows whether the scope
  // or the kernel left it out; otherwise the message names each reason that can apply.
  Error absent_key_error(const std::string& key, const HostState& state, const std::string& where) const {
    const auto names = sysctl_key_names(key);
    const bool net = names && names->front() == "net";
    const auto global = names ? global_net_key_reason(*names) : std::nullopt;
    const std::string path = sysctl_path(key);
    if (!state.recorded_from.empty()) {
      std::string why = "sysctl " + key + " is not in the recorded state " + state.recorded_from +
                        " (record it with `rdmactl show -f SPEC --format json`)";
      if (!net) {
        why += "; outside net.* a key is read, and so recorded, only where the host's " +
               std::string(kSysctlAllowListPath) + " lists it";
      } else if (global) {
        why += "; it is not per network namespace (" + *global + "), so a state recorded under --netns lacks it or holds a value rdmactl cannot set there";
      }
      return make_error(ErrorKind::kNotFound, why, where);
    }
    if (!observed_ && !net) {
      const SysctlScope without_list(SysctlAllowList{}, false);
      return make_error(ErrorKind::kNotSupported,
                        "sysctl " + key + " " + without_list.refusal(key).value_or("") +
                            "; if the file lists it already, the kernel has no such key (no " + path + ")",
                        where);
    }
    if (!observed_ && global) {
      return make_error(ErrorKind::kNotSupported,
                        "sysctl " + key + " was not read: it is not per network namespace (" + *global +
                            "), so under --netns rdmactl neither reads nor sets it; outside a namespace, " +
                            "this host has no " + path,
                        where);
    }
    return make_error(ErrorKind::kNotFound, "sysctl " + key + " does not exist on this host (no " + path + ")", where);
  }

  SysctlOptions options_;
  // From the last observe: the host's scope, and the spec keys it refused (key -> why).
  std::optional<SysctlScope> scope_;
  std::map<std::string, std::string> refused_;
  std::set<std::string> warned_;  // refused keys already warned about
  bool observed_ = false;
};

}  // namespace

std::unique_ptr<Reconciler> make_sysctl_reconciler() { return make_sysctl_reconciler(SysctlOptions{}); }

std::unique_ptr<Reconciler> make_sysctl_reconciler(SysctlOptions options) {
  return std::make_unique<SysctlReconciler>(options);
}

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
  const auto names = sysctl_key_names(key);
  if (!names) return {};
  std::string path = "/proc/sys";
  for (const std::string& name : *names) path += "/" + name;
  return path;
}

}  // namespace rdmactl::reconcilers
