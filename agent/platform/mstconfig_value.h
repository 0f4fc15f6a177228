// SPDX-License-Identifier: Apache-2.0
// How mstconfig (Debian package mstflint) reads a value given to `set` and prints one in `q`, so that
// a spec's value can be compared with the table's without running the tool. From mstflint's
// mlxconfig/mlxcfg_param.cpp and mlxcfg_ui.cpp:
//   - a BOOL is an ENUM of False=0, True=1 (BoolParamValue::initBoolTextualValues);
//   - an ENUM (and BOOL) takes a number, which must be one of its values, or a name compared without
//     case (EnumParamValue::parseValue: strToNum first, then strcasecmp); `q` prints "NAME(N)"
//     (MlxCfg::printValue appends "(N)" to a name), or the bare number for a value without a name;
//   - an UNSIGNED takes a number that fits its bits (UnsignedParamValue::parseValueAux) and prints
//     the number;
//   - a number is C's strtoul with base 0 (mlxcfg_utils.cpp strToNum): "16", "0x10" and "020" are
//     the same; above 0xFFFFFFFF is "value is out of range";
//   - an array prints "Array[0..N]" under its bare name; its elements are PARAM[i] (queryParamViews);
//   - "N/A" is a value the firmware did not report (MlxCfg::printParam, MLXCFG_UNKNOWN).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmactl {

// mstflint's strToNum: the whole text as a number (strtoul, base 0); nullopt when it is not one or
// is out of range.
std::optional<uint32_t> mstconfig_number(std::string_view text);

// Whether `spec` (a value as `set` takes it: "True", "ETH", "8") is what mstconfig printed (`raw`:
// "True(1)", "ETH(2)", "8"): a number against the number, a name against the name without case.
// "N/A" and an array summary match nothing.
bool mstconfig_value_matches(std::string_view spec, std::string_view raw);

// "Array[0..7]": the summary of an array parameter queried by its bare name.
bool mstconfig_is_array(std::string_view raw);

// A value printed by `q` in a form `set` takes back: "False(0)" -> "0", "8" -> "8"; a value that
// is already a name ("True") is itself. nullopt for "N/A" and an array summary.
std::optional<std::string> mstconfig_settable(std::string_view value);

// The parameter an mstconfig failure names as absent: "-E- The Device doesn't support FOO parameter"
// (GenericCommander::queryParamViews: the firmware does not list it, or its dependency hides it),
// "-E- Unknown Parameter FOO" (GenericCommander::updateParamViewValue: the firmware lacks its TLV) or
// "-E- Failed to find Param / TLV with name 'FOO' ..." (MlxcfgDBManager::getTLVByParamMlxconfigName:
// not in the tool's database). nullopt for any other output.
std::optional<std::string> mstconfig_unsupported_param(std::string_view output);

}  // namespace rdmactl
