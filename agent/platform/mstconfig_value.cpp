// SPDX-License-Identifier: Apache-2.0
// mstconfig's value rules (mstflint mlxconfig/mlxcfg_param.cpp); see mstconfig_value.h.
#include "agent/platform/mstconfig_value.h"

#include <strings.h>

#include <cerrno>
#include <cstdlib>

namespace rdmactl {
namespace {

// "NAME(N)" -> {NAME, N}; a bare number -> {"", N}; anything else -> nullopt.
struct MstconfigPrinted {
  std::string name;
  uint32_t number = 0;
};

std::optional<MstconfigPrinted> mstconfig_printed(std::string_view raw) {
  if (raw == "N/A" || mstconfig_is_array(raw)) return std::nullopt;
  const size_t open = raw.rfind('(');
  if (open != std::string_view::npos && open > 0 && raw.back() == ')') {
    // MlxCfg::printValue prints "(%u)" of the value: always decimal.
    if (auto n = mstconfig_number(raw.substr(open + 1, raw.size() - open - 2))) {
      return MstconfigPrinted{std::string(raw.substr(0, open)), *n};
    }
    return std::nullopt;
  }
  if (auto n = mstconfig_number(raw)) return MstconfigPrinted{"", *n};
  return std::nullopt;
}

}  // namespace

std::optional<uint32_t> mstconfig_number(std::string_view text) {
  // mlxcfg_utils.cpp strToNum: strtoul(str, &endp, 0), refused when *endp is not NUL or the value
  // exceeds 0xFFFFFFFF ("-1" wraps to ULONG_MAX and is refused so).
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(copy.c_str(), &end, 0);
  if (*end != '\0' || errno == ERANGE || value > 0xFFFFFFFFul) return std::nullopt;
  return static_cast<uint32_t>(value);
}

bool mstconfig_is_array(std::string_view raw) { return raw.starts_with("Array["); }

bool mstconfig_value_matches(std::string_view spec, std::string_view raw) {
  const std::optional<MstconfigPrinted> observed = mstconfig_printed(raw);
  if (!observed || spec.empty()) return false;
  // EnumParamValue::parseValue: a number is taken as the value; only then a name, without case.
  if (auto number = mstconfig_number(spec)) return *number == observed->number;
  if (observed->name.empty()) return false;
  return ::strcasecmp(std::string(spec).c_str(), observed->name.c_str()) == 0;
}

std::optional<std::string> mstconfig_settable(std::string_view value) {
  if (value == "N/A" || mstconfig_is_array(value)) return std::nullopt;
  if (auto p = mstconfig_printed(value)) return std::to_string(p->number);
  return std::string(value);
}

std::optional<std::string> mstconfig_unsupported_param(std::string_view output) {
  struct Form {
    std::string_view before;
    std::string_view after;
  };
  // mlxcfg_generic_commander.cpp and mlxcfg_db_manager.cpp, mstconfig_printed by MlxCfg::printErr as "-E- %s".
  static constexpr Form kForms[] = {{"-E- The Device doesn't support ", " parameter"},
                                    {"-E- Unknown Parameter ", ""},
                                    {"-E- Failed to find Param / TLV with name '", "'"}};
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string_view::npos) end = output.size();
    std::string_view line = output.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    for (const Form& f : kForms) {
      if (!line.starts_with(f.before)) continue;
      std::string_view rest = line.substr(f.before.size());
      const size_t stop = f.after.empty() ? rest.size() : rest.find(f.after);
      if (stop == std::string_view::npos || stop == 0) continue;
      return std::string(rest.substr(0, stop));
    }
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace rdmactl
