// SPDX-License-Identifier: Apache-2.0
// fabric_levels: the rank of every node in `fabric --format dot`, told from the topology (the
// rules are in dot.h, beside the declaration).
#include <algorithm>
#include <cstddef>
#include <deque>
#include <set>
#include <utility>
#include <vector>

#include "agent/fabric/dot.h"

namespace rdmactl::fabric {

std::vector<int> fabric_levels(const FabricScan& scan) {
  const std::size_t n = scan.nodes.size();
  auto is_switch = [&](std::size_t i) { return scan.nodes[i].type == NodeType::kSwitch; };
  // Per switch: its links to endpoints (CAs, routers), its links to other switches, and those
  // switches (a switch's port linked to another of its own ports counts for nothing).
  std::vector<std::size_t> host_links(n, 0), switch_links(n, 0);
  std::vector<std::set<std::size_t>> switches_linked(n);
  for (const Link& l : links_of(scan)) {
    for (const auto& [x, y] : {std::pair{l.a.node, l.b.node}, std::pair{l.b.node, l.a.node}}) {
      if (!is_switch(x) || x == y) continue;
      if (!is_switch(y)) {
        ++host_links[x];
      } else {
        ++switch_links[x];
        switches_linked[x].insert(y);
      }
    }
  }
  // a's links go to endpoints in a larger share than b's (host/total compared crosswise).
  auto larger_share = [&](std::size_t a, std::size_t b) {
    return host_links[a] * (host_links[b] + switch_links[b]) > host_links[b] * (host_links[a] + switch_links[a]);
  };
  // Rule 1: a switch linked to an endpoint is a leaf (kLeaf), a spine with a few hosts on it
  // (kSpine), or one that may be either (kUnsure: more links to switches than to endpoints, at most
  // one switch with endpoints among those it links, each of those with a larger share of its links
  // to endpoints, and another switch with endpoints within two switch hops).
  enum Kind { kOther, kLeaf, kUnsure, kSpine };
  std::vector<Kind> kind(n, kOther);
  auto hosted_near = [&](std::size_t i) {
    for (std::size_t j : switches_linked[i]) {
      if (host_links[j] > 0) return true;
      for (std::size_t k : switches_linked[j]) {
        if (k != i && host_links[k] > 0) return true;
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_switch(i) || host_links[i] == 0) continue;
    std::size_t hosting = 0;
    bool below_all = true;
    for (std::size_t j : switches_linked[i]) {
      if (host_links[j] == 0) continue;
      ++hosting;
      below_all = below_all && larger_share(j, i);
    }
    if (switch_links[i] <= host_links[i] || !below_all) {
      kind[i] = kLeaf;
    } else if (hosting >= 2) {
      kind[i] = kSpine;
    } else {
      kind[i] = hosted_near(i) ? kUnsure : kLeaf;
    }
  }
  // Rule 2, the subset test: the switches i links are some or all of those one witness (not i)
  // links. A witness links them all, so only the switches linked to i's first one are tried.
  auto witnessed = [&](std::size_t i, const std::vector<bool>& witness) {
    if (switches_linked[i].empty()) return false;
    for (std::size_t j : switches_linked[*switches_linked[i].begin()]) {
      if (j != i && witness[j] &&
          std::includes(switches_linked[j].begin(), switches_linked[j].end(), switches_linked[i].begin(),
                        switches_linked[i].end())) {
        return true;
      }
    }
    return false;
  };
  // The switches that link none of `leaves` and are some of `of`.
  auto linking_none = [&](const std::vector<bool>& of, const std::vector<bool>& leaves) {
    std::vector<bool> out(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = of[i] && std::none_of(switches_linked[i].begin(), switches_linked[i].end(),
                                     [&](std::size_t j) { return leaves[j]; });
    }
    return out;
  };
  std::vector<bool> leaf(n, false), candidate(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    leaf[i] = kind[i] == kLeaf;
    candidate[i] = kind[i] == kLeaf || kind[i] == kUnsure;
  }
  // An unsure switch is a leaf when it passes the subset test, its witnesses the leaves and unsure
  // switches that link no leaf.
  const std::vector<bool> unsure_witness = linking_none(candidate, leaf);
  for (std::size_t i = 0; i < n; ++i) {
    if (kind[i] == kUnsure && witnessed(i, unsure_witness)) leaf[i] = true;
  }
  // Then a switch linked to no endpoint is a leaf when it passes the subset test, its witnesses
  // the leaves that link no other leaf (a spine read as a leaf links leaves: it witnesses nothing):
  // a leaf whose rack is empty or not cabled.
  const std::vector<bool> witness = linking_none(leaf, leaf);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_switch(i) && host_links[i] == 0 && witnessed(i, witness)) leaf[i] = true;
  }
  // The rest: breadth first from the leaves over switch links.
  std::vector<int> level(n, -1);
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_switch(i)) {
      level[i] = 0;
    } else if (leaf[i]) {
      level[i] = 1;
      queue.push_back(i);
    }
  }
  int top = 0;
  while (!queue.empty()) {
    const std::size_t at = queue.front();
    queue.pop_front();
    top = std::max(top, level[at]);
    for (std::size_t next : switches_linked[at]) {
      if (level[next] >= 0) continue;
      level[next] = level[at] + 1;
      queue.push_back(next);
    }
  }
  for (int& l : level) {
    if (l < 0) l = top + 1;
  }
  return level;
}

}  // namespace rdmactl::fabric
