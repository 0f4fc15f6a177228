// SPDX-License-Identifier: Apache-2.0
// The text of schemas/fabric-spec.schema.json, compiled in (see cmake/schema_data.cpp.in).
#pragma once

namespace rdmactl {
extern const char* const kFabricSpecSchema;
}  // namespace rdmactl
