// SPDX-License-Identifier: Apache-2.0
// devlink requests, reply parsers and the Devlink client (see devlink.h).
//
// The policy tables list what is read here with the types net/devlink puts: strings with
// nla_put_string (NUL-terminated), u8/u32 with nla_put_u8/_u32, the reload result with
// nla_put_bitfield32. Everything else (DEVLINK_ATTR_REMOTE_RELOAD_STATS, stats values, newer
// attributes) is ignored.
#include "agent/platform/devlink.h"

#include <linux/devlink.h>
#include <linux/genetlink.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "agent/core/text.h"
#include "agent/platform/genl.h"

namespace rdmactl {
namespace {

// Indexed by attribute type: one past the largest devlink attribute of the uapi headers.
constexpr size_t kDevlinkTableSize = __DEVLINK_ATTR_MAX;
using DevlinkAttributes = const nlattr* [kDevlinkTableSize];

// devlink_get_from_attrs reads the instance from these two (NLA_NUL_STRING in devlink_nl_policy).
void put_devlink_request(MnlMessage& message, uint16_t family, uint8_t cmd,
                         const DevlinkHandle& handle) {
  put_genl_header(message, family, cmd, DEVLINK_GENL_VERSION);
  message.put_str(DEVLINK_ATTR_BUS_NAME, handle.bus);
  message.put_str(DEVLINK_ATTR_DEV_NAME, handle.dev);
}

// Every top-level attribute of `type`, in order: the version nests repeat (one
// devlink_info_version_put per version), which a table indexed by type cannot hold.
std::vector<const nlattr*> attributes_of_type(const nlmsghdr* message, uint16_t type) {
  struct Collect {
    uint16_t type;
    std::vector<const nlattr*> found;
  } collect{type, {}};
  mnl_attr_parse(
      message, GENL_HDRLEN,
      [](const nlattr* attr, void* data) {
        auto* c = static_cast<Collect*>(data);
        if (mnl_attr_get_type(attr) == c->type) c->found.push_back(attr);
        return MNL_CB_OK;
      },
      &collect);
  return collect.found;
}

// --- DEVLINK_CMD_INFO_GET (devlink_nl_info_fill + the driver's info_get) ---------------------

constexpr AttributePolicy kInfoPolicy[] = {
    {DEVLINK_ATTR_BUS_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_BUS_NAME", true},
    {DEVLINK_ATTR_DEV_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_DEV_NAME", true},
    {DEVLINK_ATTR_INFO_DRIVER_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_INFO_DRIVER_NAME"},
    {DEVLINK_ATTR_INFO_SERIAL_NUMBER, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_INFO_SERIAL_NUMBER"},
    {DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER, MNL_TYPE_NUL_STRING,
     "DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER"},
    // Validated here (every occurrence), read with attributes_of_type.
    {DEVLINK_ATTR_INFO_VERSION_FIXED, MNL_TYPE_NESTED, "DEVLINK_ATTR_INFO_VERSION_FIXED"},
    {DEVLINK_ATTR_INFO_VERSION_RUNNING, MNL_TYPE_NESTED, "DEVLINK_ATTR_INFO_VERSION_RUNNING"},
    {DEVLINK_ATTR_INFO_VERSION_STORED, MNL_TYPE_NESTED, "DEVLINK_ATTR_INFO_VERSION_STORED"},
};

// devlink_info_version_put: a nest holding the name, then the value.
constexpr AttributePolicy kVersionPolicy[] = {
    {DEVLINK_ATTR_INFO_VERSION_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_INFO_VERSION_NAME", true},
    {DEVLINK_ATTR_INFO_VERSION_VALUE, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_INFO_VERSION_VALUE",
     true},
};

Result<void> read_versions(const nlmsghdr* message, uint16_t type,
                           std::map<std::string, std::string>& out) {
  for (const nlattr* nest : attributes_of_type(message, type)) {
    DevlinkAttributes tb = {};
    if (Result<void> parsed = parse_nested(nest, kVersionPolicy, tb); !parsed) return parsed;
    out[attribute_text(tb[DEVLINK_ATTR_INFO_VERSION_NAME])] =
        attribute_text(tb[DEVLINK_ATTR_INFO_VERSION_VALUE]);
  }
  return ok();
}

// --- DEVLINK_CMD_GET (devlink_nl_fill, devlink_reload_stats_put) ------------------------------

constexpr AttributePolicy kDevlinkDevPolicy[] = {
    {DEVLINK_ATTR_BUS_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_BUS_NAME", true},
    {DEVLINK_ATTR_DEV_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_DEV_NAME", true},
    {DEVLINK_ATTR_RELOAD_FAILED, MNL_TYPE_U8, "DEVLINK_ATTR_RELOAD_FAILED"},
    {DEVLINK_ATTR_DEV_STATS, MNL_TYPE_NESTED, "DEVLINK_ATTR_DEV_STATS"},
};
constexpr AttributePolicy kDevStatsPolicy[] = {
    {DEVLINK_ATTR_RELOAD_STATS, MNL_TYPE_NESTED, "DEVLINK_ATTR_RELOAD_STATS"},
};
constexpr AttributePolicy kActionInfoPolicy[] = {
    {DEVLINK_ATTR_RELOAD_ACTION, MNL_TYPE_U8, "DEVLINK_ATTR_RELOAD_ACTION", true},
    {DEVLINK_ATTR_RELOAD_ACTION_STATS, MNL_TYPE_NESTED, "DEVLINK_ATTR_RELOAD_ACTION_STATS"},
};
constexpr AttributePolicy kStatsEntryPolicy[] = {
    {DEVLINK_ATTR_RELOAD_STATS_LIMIT, MNL_TYPE_U8, "DEVLINK_ATTR_RELOAD_STATS_LIMIT", true},
    {DEVLINK_ATTR_RELOAD_STATS_VALUE, MNL_TYPE_U32, "DEVLINK_ATTR_RELOAD_STATS_VALUE"},
};

// --- DEVLINK_CMD_RELOAD (devlink_nl_reload_actions_performed_snd) -----------------------------

constexpr AttributePolicy kReloadPolicy[] = {
    {DEVLINK_ATTR_BUS_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_BUS_NAME", true},
    {DEVLINK_ATTR_DEV_NAME, MNL_TYPE_NUL_STRING, "DEVLINK_ATTR_DEV_NAME", true},
    {DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED, MNL_TYPE_BINARY,
     "DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED", true, sizeof(nla_bitfield32)},
};

// The error kinds devlink.h promises: ENODEV (devlink_get_from_attrs: no such instance) and
// EOPNOTSUPP are kNotSupported, the caller's cue to use mstflint; the rest keep talk()'s kind.
Error device_error(Error error, const DevlinkHandle& handle) {
  error.where = to_string(handle);
  if (error.err_no == ENODEV) {
    error.kind = ErrorKind::kNotSupported;
    error.message += ": devlink has no instance of that name";
  } else if (error.err_no == EOPNOTSUPP) {
    error.kind = ErrorKind::kNotSupported;
  }
  return error;
}

}  // namespace

std::string to_string(const DevlinkHandle& handle) { return handle.bus + "/" + handle.dev; }

Result<DevlinkHandle> parse_devlink_handle(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size() ||
      text.find('/', slash + 1) != std::string_view::npos) {
    return make_error(ErrorKind::kUsage,
                      "a devlink device is BUS/DEVICE (pci/0000:08:00.0), not \"" +
                          std::string(text) + "\"");
  }
  return DevlinkHandle{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
}

std::optional<std::string> pending_fw_version(const DevlinkInfo& info) {
  const auto running = info.running.find("fw.version");
  const auto stored = info.stored.find("fw.version");
  if (running == info.running.end() || stored == info.stored.end()) return std::nullopt;
  if (mlx5_version_unknown(running->second) || mlx5_version_unknown(stored->second)) return std::nullopt;
  if (stored->second == running->second) return std::nullopt;
  return stored->second;
}

void build_info_get(MnlMessage& message, uint16_t family, const DevlinkHandle& handle) {
  put_devlink_request(message, family, DEVLINK_CMD_INFO_GET, handle);
}

void build_dev_get(MnlMessage& message, uint16_t family, const DevlinkHandle& handle) {
  put_devlink_request(message, family, DEVLINK_CMD_GET, handle);
}

void build_reload_fw_activate(MnlMessage& message, uint16_t family, const DevlinkHandle& handle,
                              bool no_reset) {
  put_devlink_request(message, family, DEVLINK_CMD_RELOAD, handle);
  message.put_u8(DEVLINK_ATTR_RELOAD_ACTION, DEVLINK_RELOAD_ACTION_FW_ACTIVATE);
  if (no_reset) {
    // devlink_nl_cmd_reload takes value & selector and wants exactly one limit bit;
    // validate_nla_bitfield32 refuses bits outside DEVLINK_RELOAD_LIMITS_VALID_MASK.
    nla_bitfield32 limits{};
    limits.value = 1u << DEVLINK_RELOAD_LIMIT_NO_RESET;
    limits.selector = 1u << DEVLINK_RELOAD_LIMIT_NO_RESET;
    message.put(DEVLINK_ATTR_RELOAD_LIMITS, &limits, sizeof limits);
  }
}

Result<DevlinkInfo> parse_info_reply(const nlmsghdr* message, uint16_t family) {
  if (Result<void> type = expect_genl(message, family, DEVLINK_CMD_INFO_GET,
                                      "DEVLINK_CMD_INFO_GET");
      !type) {
    return type.error();
  }
  DevlinkAttributes tb = {};
  if (Result<void> parsed = parse_attributes(message, GENL_HDRLEN, kInfoPolicy, tb); !parsed) {
    return parsed.error();
  }
  DevlinkInfo info;
  info.driver = attribute_text(tb[DEVLINK_ATTR_INFO_DRIVER_NAME]);
  info.serial = attribute_text(tb[DEVLINK_ATTR_INFO_SERIAL_NUMBER]);
  info.board_serial = attribute_text(tb[DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER]);
  for (auto [type, versions] : {std::pair{DEVLINK_ATTR_INFO_VERSION_FIXED, &info.fixed},
                                std::pair{DEVLINK_ATTR_INFO_VERSION_RUNNING, &info.running},
                                std::pair{DEVLINK_ATTR_INFO_VERSION_STORED, &info.stored}}) {
    if (Result<void> read = read_versions(message, type, *versions); !read) return read.error();
  }
  return info;
}

Result<DevlinkReloadSupport> parse_dev_reply(const nlmsghdr* message, uint16_t family,
                                             bool* has_stats) {
  if (has_stats != nullptr) *has_stats = false;
  if (Result<void> type = expect_genl(message, family, DEVLINK_CMD_NEW, "DEVLINK_CMD_GET");
      !type) {
    return type.error();
  }
  DevlinkAttributes tb = {};
  if (Result<void> parsed = parse_attributes(message, GENL_HDRLEN, kDevlinkDevPolicy, tb); !parsed) {
    return parsed.error();
  }
  DevlinkReloadSupport support;
  if (tb[DEVLINK_ATTR_RELOAD_FAILED] != nullptr) {
    support.reload_failed = mnl_attr_get_u8(tb[DEVLINK_ATTR_RELOAD_FAILED]) != 0;
  }
  if (tb[DEVLINK_ATTR_DEV_STATS] == nullptr) return support;  // before 5.10
  if (has_stats != nullptr) *has_stats = true;

  DevlinkAttributes stats = {};
  if (Result<void> parsed = parse_nested(tb[DEVLINK_ATTR_DEV_STATS], kDevStatsPolicy, stats);
      !parsed) {
    return parsed.error();
  }
  if (stats[DEVLINK_ATTR_RELOAD_STATS] == nullptr) return support;
  // The local statistics only: DEVLINK_ATTR_REMOTE_RELOAD_STATS lists every action whatever the
  // driver supports ("Remote stats are shown even if not locally supported").
  for (const nlattr* entry : nested_entries(stats[DEVLINK_ATTR_RELOAD_STATS])) {
    if (mnl_attr_get_type(entry) != DEVLINK_ATTR_RELOAD_ACTION_INFO) continue;
    DevlinkAttributes action_info = {};
    if (Result<void> parsed = parse_nested(entry, kActionInfoPolicy, action_info); !parsed) {
      return parsed.error();
    }
    const uint8_t action = mnl_attr_get_u8(action_info[DEVLINK_ATTR_RELOAD_ACTION]);
    bool no_reset = false;
    if (const nlattr* action_stats = action_info[DEVLINK_ATTR_RELOAD_ACTION_STATS]) {
      for (const nlattr* stat : nested_entries(action_stats)) {
        if (mnl_attr_get_type(stat) != DEVLINK_ATTR_RELOAD_STATS_ENTRY) continue;
        DevlinkAttributes limit = {};
        if (Result<void> parsed = parse_nested(stat, kStatsEntryPolicy, limit); !parsed) {
          return parsed.error();
        }
        if (mnl_attr_get_u8(limit[DEVLINK_ATTR_RELOAD_STATS_LIMIT]) ==
            DEVLINK_RELOAD_LIMIT_NO_RESET) {
          no_reset = true;
        }
      }
    }
    if (action == DEVLINK_RELOAD_ACTION_DRIVER_REINIT) support.driver_reinit = true;
    if (action == DEVLINK_RELOAD_ACTION_FW_ACTIVATE) {
      support.fw_activate = true;
      support.fw_activate_no_reset = no_reset;
    }
  }
  return support;
}

Result<DevlinkReloadResult> parse_reload_reply(const nlmsghdr* message, uint16_t family) {
  if (Result<void> type = expect_genl(message, family, DEVLINK_CMD_RELOAD, "DEVLINK_CMD_RELOAD");
      !type) {
    return type.error();
  }
  DevlinkAttributes tb = {};
  if (Result<void> parsed = parse_attributes(message, GENL_HDRLEN, kReloadPolicy, tb); !parsed) {
    return parsed.error();
  }
  nla_bitfield32 performed{};
  std::memcpy(&performed, mnl_attr_get_payload(tb[DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED]),
              sizeof performed);
  // nla_put_bitfield32(msg, ..., actions_performed, actions_performed): value == selector.
  const uint32_t actions = performed.value & performed.selector;
  DevlinkReloadResult result;
  result.driver_reinit = (actions & (1u << DEVLINK_RELOAD_ACTION_DRIVER_REINIT)) != 0;
  result.fw_activate = (actions & (1u << DEVLINK_RELOAD_ACTION_FW_ACTIVATE)) != 0;
  return result;
}

// Devlink ----------------------------------------------------------------------------------------

Result<Devlink> Devlink::open() {
  Result<MnlSocket> socket = MnlSocket::open(NETLINK_GENERIC);
  if (!socket) return socket.error();
  Devlink devlink(std::move(*socket));
  if (Result<uint16_t> id = devlink.family(); !id) return id.error();
  return devlink;
}

Devlink Devlink::over(MnlSocket socket) { return Devlink(std::move(socket)); }

Result<uint16_t> Devlink::family() {
  if (family_ != 0) return family_;
  Result<uint16_t> id = resolve_genl_family(socket_, DEVLINK_GENL_NAME, "devlink");
  if (!id) return id.error();
  family_ = *id;
  return family_;
}

Result<DevlinkInfo> Devlink::info(const DevlinkHandle& handle) {
  Result<uint16_t> id = family();
  if (!id) return id.error();
  MnlMessage request;
  build_info_get(request, *id, handle);
  std::optional<DevlinkInfo> info;
  Result<void> done = socket_.talk(
      request,
      [&info, id = *id](const nlmsghdr* reply) -> Result<void> {
        Result<DevlinkInfo> parsed = parse_info_reply(reply, id);
        if (!parsed) return parsed.error();
        info = std::move(*parsed);
        return ok();
      },
      "devlink dev info");
  if (!done) return device_error(done.error(), handle);
  if (!info) {
    return make_error(ErrorKind::kPlatform, "devlink dev info: the kernel sent no reply",
                      to_string(handle), EBADMSG);
  }
  return std::move(*info);
}

Result<DevlinkReloadSupport> Devlink::reload_support(const DevlinkHandle& handle) {
  Result<uint16_t> id = family();
  if (!id) return id.error();
  MnlMessage request;
  build_dev_get(request, *id, handle);
  std::optional<DevlinkReloadSupport> support;
  Result<void> done = socket_.talk(
      request,
      [&support, id = *id](const nlmsghdr* reply) -> Result<void> {
        Result<DevlinkReloadSupport> parsed = parse_dev_reply(reply, id);
        if (!parsed) return parsed.error();
        support = *parsed;
        return ok();
      },
      "devlink dev show");
  if (!done) return device_error(done.error(), handle);
  if (!support) {
    return make_error(ErrorKind::kPlatform, "devlink dev show: the kernel sent no reply",
                      to_string(handle), EBADMSG);
  }
  return *support;
}

Result<DevlinkReloadResult> Devlink::reload_fw_activate(const DevlinkHandle& handle,
                                                        bool no_reset) {
  Result<uint16_t> id = family();
  if (!id) return id.error();

  // A kernel without reload statistics predates reload actions (5.10) and would take this
  // request for a plain driver reload: ask first.
  {
    MnlMessage get;
    build_dev_get(get, *id, handle);
    bool has_stats = false;
    Result<void> done = socket_.talk(
        get,
        [&has_stats, id = *id](const nlmsghdr* reply) -> Result<void> {
          Result<DevlinkReloadSupport> parsed = parse_dev_reply(reply, id, &has_stats);
          if (!parsed) return parsed.error();
          return ok();
        },
        "devlink dev show");
    if (!done) return device_error(done.error(), handle);
    if (!has_stats) {
      return make_error(ErrorKind::kNotSupported,
                        "devlink dev reload action fw_activate: this kernel's devlink has no "
                        "reload actions (Linux 5.10 added them)",
                        to_string(handle), EOPNOTSUPP);
    }
  }

  MnlMessage request;
  build_reload_fw_activate(request, *id, handle, no_reset);
  std::optional<DevlinkReloadResult> result;
  const char* what = no_reset ? "devlink dev reload action fw_activate limit no_reset"
                              : "devlink dev reload action fw_activate";
  Result<void> done = socket_.talk(
      request,
      [&result, id = *id](const nlmsghdr* reply) -> Result<void> {
        Result<DevlinkReloadResult> parsed = parse_reload_reply(reply, id);
        if (!parsed) return parsed.error();
        result = *parsed;
        return ok();
      },
      what);
  if (!done) {
    Error error = device_error(done.error(), handle);
    // MnlSocket waits 10 s for an answer; mlx5's reset waits up to its PCI_SYNC_UPDATE timeout
    // (5 s by default, firmware may say more) and then reloads the driver.
    if (error.kind == ErrorKind::kTimeout) {
      error.message += " (the reload may still be running in the kernel: observe again)";
    }
    return error;
  }
  if (!result) {
    // devlink_nl_cmd_reload answers with only an ack when neither RELOAD_ACTION nor
    // RELOAD_LIMITS was sent; this request always has the action.
    return make_error(ErrorKind::kPlatform,
                      std::string(what) + ": no DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED reply",
                      to_string(handle), EBADMSG);
  }
  return *result;
}

}  // namespace rdmactl
