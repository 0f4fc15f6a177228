// SPDX-License-Identifier: Apache-2.0
// The kernel's cpulist text ("0-3,8-11"): what /sys/devices/system/node/node<N>/cpulist and
// /proc/irq/<n>/smp_affinity_list print and take (lib/bitmap.c: bitmap_parselist reads it,
// bitmap_print_to_pagebuf's "%*pbl" prints it, ranges in ascending order).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace rdmactl {

// "0-3,8-11" -> {0..3, 8..11}; "" is the empty set (a node without CPUs). nullopt when it is not
// a cpulist. The kernel's stride form ("0-15:2/4") is not taken: no file rdmactl reads prints it.
std::optional<std::set<int>> parse_cpulist(std::string_view text);
// {0, 1, 2, 3, 8} -> "0-3,8", as the kernel prints it.
std::string format_cpulist(const std::set<int>& cpus);

}  // namespace rdmactl
