// SPDX-License-Identifier: Apache-2.0
#include "agent/core/suggest.h"

#include <algorithm>
#include <cctype>

namespace rdmactl {
namespace {

bool same(char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); }

}  // namespace

int edit_distance(const std::string& a, const std::string& b) {
  // Three rows of the dynamic programme: the one before the previous holds transpositions.
  std::vector<int> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
}

std::vector<std::string> closest_words(const std::string& typed, const std::vector<std::string>& candidates) {
  if (typed.empty() || std::find(candidates.begin(), candidates.end(), typed) != candidates.end()) return {};
  const int most = typed.size() <= 3 ? 1 : 2;
  int best = most + 1;
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    const int d = edit_distance(typed, c);
    if (d > most || d > best) continue;
    if (d < best) out.clear();
    best = d;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  if (!out.empty() || typed.size() < 2) return out;
  for (const std::string& c : candidates) {
    if (c.rfind(typed, 0) == 0 && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& words) {
  if (words.empty()) return {};
  std::string out = words.size() == 1 ? " (did you mean " : " (did you mean one of ";
  for (size_t i = 0; i < words.size(); ++i) out += (i > 0 ? ", \"" : "\"") + words[i] + "\"";
  return out + "?)";
}

}  // namespace rdmactl
