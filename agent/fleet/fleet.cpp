// SPDX-License-Identifier: Apache-2.0
// The fleet plan (see fleet.h): each recorded state planned against its merged spec, in parallel, and
// the cross-node checks folded in. The report's writers are fleet_format.cpp's.
#include "agent/fleet/fleet.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "agent/core/ordered_pool.h"
#include "agent/fleet/fleet_internal.h"

namespace rdmactl {
namespace {

namespace fs = std::filesystem;

// Results that may wait to be taken while the pool plans ahead (each holds one node's plan).
constexpr size_t kPlanAhead = 64;

// The finding for each nodes: entry that matched no node of the report (`used`: those that did).
void unmatched_entries(const FabricSpec& spec, const std::vector<bool>& used, size_t recorded,
                       std::vector<FleetFinding>& out) {
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    if (used[i]) continue;
    FleetFinding f;
    f.severity = FleetFinding::Severity::kWarning;
    f.check = "unmatched-entry";
    std::string globs;
    for (const std::string& g : spec.nodes[i].match) globs += (globs.empty() ? "" : ", ") + g;
    f.message = "nodes[" + std::to_string(i) + "] (match " + globs + ") matches none of the " +
                std::to_string(recorded) + " recorded nodes";
    f.where = spec.nodes[i].origin;
    out.push_back(std::move(f));
  }
}

std::vector<size_t> matching_entries(const FabricSpec& spec, const std::string& node) {
  std::vector<size_t> out;
  for (size_t e = 0; e < spec.nodes.size(); ++e) {
    if (entry_matches_node(spec.nodes[e], node)) out.push_back(e);
  }
  return out;
}

// The merged spec of each set of matching entries, made once: a fleet has few roles and many nodes.
class MergedSpecs {
 public:
  explicit MergedSpecs(const FabricSpec& spec) : spec_(spec) {}
  std::shared_ptr<const NodeSpec> get(const std::vector<size_t>& entries, const std::string& node) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = merged_.find(entries);
    if (it == merged_.end()) it = merged_.emplace(entries, std::make_shared<NodeSpec>(merge_for_node(spec_, node))).first;
    return it->second;
  }

 private:
  const FabricSpec& spec_;
  std::mutex mutex_;
  std::map<std::vector<size_t>, std::shared_ptr<const NodeSpec>> merged_;
};

}  // namespace

void FleetNode::take_plan(Report report) {
  summarize(report);
  plan = std::make_shared<const Report>(std::move(report));
}

void FleetNode::summarize(const Report& report) {
  changes = static_cast<uint32_t>(report.changes.size());
  errors = static_cast<uint32_t>(report.errors.size());
  bool planned = false;
  bool pending = false;
  for (const Change& c : report.changes) {
    planned = planned || c.status == ChangeStatus::kPlanned;
    pending = pending || c.status == ChangeStatus::kPendingReboot;
  }
  outcome = !report.errors.empty() ? "error" : planned ? "drift" : pending ? "pendingReboot" : "converged";
}

size_t FleetReport::count(const std::string& result) const {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const FleetNode& n) { return n.result() == result; }));
}

size_t FleetReport::recorded() const {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [](const FleetNode& n) { return n.recorded; }));
}

bool FleetReport::has_errors() const {
  const bool error_finding = std::any_of(findings.begin(), findings.end(), [](const FleetFinding& f) {
    return f.severity == FleetFinding::Severity::kError;
  });
  return error_finding || !state_errors.empty() || count("error") > 0;
}

bool FleetReport::has_drift() const {
  return std::any_of(nodes.begin(), nodes.end(), [](const FleetNode& n) { return n.changes > 0; });
}

int FleetReport::exit_code() const { return has_errors() ? 1 : has_drift() ? 2 : 0; }

void finish_fleet(const FabricSpec& spec, FleetReport& report, FleetChecker& checker, bool spec_nodes) {
  report.spec_file = spec.file;
  report.spec_sha256 = spec.sha256;
  report.unmatched_nodes.clear();
  if (spec_nodes) {
    std::set<std::string> have;
    for (const FleetNode& n : report.nodes) have.insert(n.node);
    for (const std::string& name : literal_node_names(spec)) {
      if (have.count(name) > 0) continue;
      FleetNode n;
      n.node = name;
      n.recorded = false;
      const NodeSpec merged = merge_for_node(spec, name);
      checker.add({name, &merged, nullptr});
      report.nodes.push_back(std::move(n));
    }
  }
  std::vector<bool> used(spec.nodes.size(), false);
  for (const FleetNode& n : report.nodes) {
    const std::vector<size_t> entries = matching_entries(spec, n.node);
    for (const size_t e : entries) used[e] = true;
    if (entries.empty() && !spec.nodes.empty()) report.unmatched_nodes.push_back(n.node);
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(), [](const FleetNode& a, const FleetNode& b) { return a.node < b.node; });
  std::sort(report.unmatched_nodes.begin(), report.unmatched_nodes.end());
  report.findings = checker.finish();
  // With one node (the agent's own), an entry for other nodes matching none says nothing.
  if (report.nodes.size() > 1) unmatched_entries(spec, used, report.recorded(), report.findings);
  for (FleetFinding& f : spec_warning_findings(spec)) report.findings.push_back(std::move(f));
}

namespace {

// The recorded states of --states DIR: its *.json files, in name order.
Result<std::vector<std::string>> state_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return make_errno_error("--states: not a directory of recorded states", ec ? ec.value() : ENOTDIR, dir);
  }
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json" && e.is_regular_file(ec)) files.push_back(e.path().string());
  }
  if (ec) return make_errno_error("--states: cannot list", ec.value(), dir);
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return make_error(ErrorKind::kNotFound,
                      "--states: no *.json recorded states (rdmactl show --format json > DIR/<node>.json on each node)", dir);
  }
  return files;
}

// One state as the pool hands it back.
struct Planned {
  size_t index = 0;
  std::optional<Error> error;   // the state did not load
  std::optional<Error> failed;  // the temporary file could not be written
  FleetChecker::FactsPtr facts;
  FleetNode node;
};

// On the pool: read the state, merge the spec for it, plan, render (when streaming) into the
// temporary file, take what the cross-node checks need; the state is freed on the thread that
// read it (freeing it on another contends for the allocator's lock).
class NodePlanner {
 public:
  NodePlanner(const Engine& engine, const FabricSpec& spec, const std::vector<std::string>& files,
              const FleetOptions& options, FleetReport& report)
      : engine_(engine), spec_(spec), files_(files), options_(options), report_(report), merged_(spec) {}

  // A state that makes the planning throw (nlohmann's type errors on a value of the wrong kind)
  // is that state's error; nothing may leave a worker thread.
  Planned work(size_t i) {
    try {
      return plan_one(i);
    } catch (const std::exception& e) {
      Planned out;
      out.index = i;
      out.error = make_error(ErrorKind::kInvalidSpec, std::string("cannot be planned: ") + e.what(), files_[i]);
      return out;
    }
  }

 private:
  Planned plan_one(size_t i) {
    Planned out;
    out.index = i;
    const auto node_started = std::chrono::steady_clock::now();
    auto state = load_host_state(files_[i]);
    if (!state) {
      out.error = state.error();
      out.error->where = files_[i];
      return out;
    }
    out.node.file = files_[i];
    out.node.node = state->node.empty() ? fs::path(files_[i]).stem().string() : state->node;
    state->node = out.node.node;
    const std::shared_ptr<const NodeSpec> node_spec = merged_.get(matching_entries(spec_, out.node.node), out.node.node);
    Report plan = engine_.plan(*node_spec, *state);
    plan.spec_file = spec_.file;
    plan.spec_sha256 = spec_.sha256;
    // Each node's own time: reading its state, merging and planning.
    plan.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - node_started).count();
    out.facts = FleetChecker::facts_of({out.node.node, node_spec.get(), &*state});
    if (options_.stream) {
      out.node.summarize(plan);
      fleet_detail::Rendered rendered = fleet_detail::render_node(out.node, plan, report_, *options_.stream);
      std::lock_guard<std::mutex> lock(spill_mutex_);
      auto piece = report_.spill->append(rendered.text);
      if (!piece) {
        out.failed = piece.error();
        return out;
      }
      rendered.fragment.piece = *piece;
      out.node.fragment = std::move(rendered.fragment);
    } else {
      out.node.take_plan(std::move(plan));
    }
    return out;
  }

  const Engine& engine_;
  const FabricSpec& spec_;
  const std::vector<std::string>& files_;
  const FleetOptions& options_;
  FleetReport& report_;
  MergedSpecs merged_;
  std::mutex spill_mutex_;
};

// On this thread, in file order: the duplicate check and the cross-node checks.
struct PlanCollector {
  PlanCollector(std::vector<std::string>& files, FleetReport& report) : files(files), report(report) {}

  void take(Planned&& p) {
    std::string().swap(files[p.index]);  // the node keeps its own copy (no worker reads it again)
    if (p.error) {  // a state that did not load is reported, and planning goes on
      report.state_errors.push_back(std::move(*p.error));
      return;
    }
    if (p.failed) {  // the temporary file could not be written: the report cannot be
      if (!failed) failed = std::move(*p.failed);
      return;
    }
    const auto [it, inserted] = seen.emplace(p.node.node, report.nodes.size());
    if (!inserted) {
      duplicates.push_back(make_error(ErrorKind::kInvalidSpec,
                                      "a second recorded state of node " + p.node.node + " (the first is " +
                                          report.nodes[it->second].file + "); it is left out",
                                      p.node.file));
      return;
    }
    checker.add(std::move(p.facts));
    report.nodes.push_back(std::move(p.node));
  }

  std::vector<std::string>& files;
  FleetReport& report;
  FleetChecker checker;
  std::unordered_map<std::string, size_t> seen;  // node -> the index of its file
  std::vector<Error> duplicates;
  std::optional<Error> failed;
};

}  // namespace

Result<FleetReport> plan_fleet(const Engine& engine, const FabricSpec& spec, const std::string& dir,
                               const FleetOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto files = state_files(dir);
  if (!files) return files.error();
  FleetReport report;
  report.spec_file = spec.file;
  report.spec_sha256 = spec.sha256;
  report.states_dir = dir;
  if (options.stream) {
    auto spill = Spill::open();
    if (!spill) return spill.error();
    report.spill = std::make_shared<Spill>(std::move(*spill));
    report.streamed = options.stream;
  }

  NodePlanner planner(engine, spec, *files, options, report);
  PlanCollector collector(*files, report);
  const std::function<Planned(size_t)> work = [&](size_t i) { return planner.work(i); };
  const std::function<void(Planned&&)> take = [&](Planned&& p) { collector.take(std::move(p)); };
  ordered_parallel<Planned>(files->size(), pool_threads(files->size(), options.threads), kPlanAhead, work, take);
  if (collector.failed) return *collector.failed;
  report.state_errors.insert(report.state_errors.end(), collector.duplicates.begin(), collector.duplicates.end());
  finish_fleet(spec, report, collector.checker, /*spec_nodes=*/true);
  report.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace rdmactl
