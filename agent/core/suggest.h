// SPDX-License-Identifier: Apache-2.0
// "Did you mean ...?": the words a mistyped one most likely meant, as git and kubectl suggest a
// command or a flag.
#pragma once

#include <string>
#include <vector>

namespace rdmactl {

// The optimal-string-alignment distance: insertions, deletions, substitutions and transpositions
// of two neighbours each cost 1 ("fromat" is 1 from "format", "pln" 1 from "plan"); case is ignored.
int edit_distance(const std::string& a, const std::string& b);

// The candidates `typed` most likely meant, in the candidates' order: those at the smallest
// distance if it is at most 2 (at most 1 for a word of 3 characters or fewer, where 2 changes
// make another word), else those it is a prefix of (at least 2 characters). Empty when none is
// close, or `typed` is one of them.
std::vector<std::string> closest_words(const std::string& typed, const std::vector<std::string>& candidates);

// " (did you mean \"plan\"?)" / " (did you mean one of \"a\", \"b\"?)"; empty for no words.
std::string did_you_mean(const std::vector<std::string>& words);

}  // namespace rdmactl
