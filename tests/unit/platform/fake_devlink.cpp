// SPDX-License-Identifier: Apache-2.0
// FakeDevlinkKernel: genetlink's ctrl_getfamily, devlink's pre_doit, get, info_get and reload,
// and the mlx5 and netdevsim callbacks behind them (see fake_devlink.h). Requests are parsed with
// plain libmnl, not with devlink.cpp, so a bug there cannot hide itself here.
#include "tests/unit/platform/fake_devlink.h"

#include "tests/unit/platform/fake_genl.h"

#include <linux/genetlink.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

namespace rdmactl::test {
namespace {

// Line up with the kernel: what a doit ends in is an NLMSG_ERROR, or its reply then the ack.
struct DevlinkOutcome {
  int error = 0;        // positive errno; 0 when `reply` (if any) and an ack are sent
  std::string ext_ack;  // NLMSGERR_ATTR_MSG
  std::optional<MnlMessage> reply;
};

DevlinkOutcome refuse_devlink(int error, std::string ext_ack = {}) { return DevlinkOutcome{error, std::move(ext_ack), {}}; }

// NL_SET_ERR_MSG_MOD prefixes KBUILD_MODNAME: "leftover" for net/devlink/leftover.o in 6.1 (the
// Debian 6.1.192 vmlinuz has "leftover: Requested reload action is not supported by the driver"),
// "mlx5_core" for the driver (its mlx5_core.ko has "mlx5_core: FW activate requires reboot").
std::string devlink_msg(const char* text) { return std::string("leftover: ") + text; }
std::string mlx5_msg(const char* text) { return std::string("mlx5_core: ") + text; }

MnlMessage devlink_reply(const nlmsghdr* request, uint16_t family, uint8_t cmd, uint8_t version) {
  return genl_reply(request, family, cmd, version, FakeDevlinkKernel::kPortId);
}

Bytes devlink_ack(const nlmsghdr* request, int error, const std::string& ext_ack) {
  return netlink_ack(request, error, ext_ack, FakeDevlinkKernel::kPortId);
}

constexpr size_t kAttrs = __DEVLINK_ATTR_MAX;

// "%d.%d.%04d" of mlx5_devlink_info_get.
std::string mlx5_version_string(uint32_t version) {
  char text[32];
  std::snprintf(text, sizeof text, "%d.%d.%04d", static_cast<int>((version >> 24) & 0xff),
                static_cast<int>((version >> 16) & 0xff), static_cast<int>(version & 0xffff));
  return text;
}

// mlx5_fw_version_query (mlx5 core/fw.c, 6.1): 0/0 without the query capabilities; pending 0 when
// no image waits (MCQS IDLE), U32_MAX "to indicate failure" when the pending query fails.
void mlx5_fw_version_query(const FakeMlx5Devlink& hw, uint32_t& running, uint32_t& pending) {
  running = 0;
  pending = 0;
  if (!hw.version_query_supported) return;
  running = hw.running;
  if (hw.pending_query_fails) {
    pending = UINT32_MAX;
    return;
  }
  pending = hw.pending;
}

// DEVLINK_INFO_VERSION_GENERIC_FW of include/net/devlink.h (kernel-internal, not in the uapi).
constexpr const char* kGenericFw = "fw";

struct Version {
  uint16_t kind;  // DEVLINK_ATTR_INFO_VERSION_FIXED, _RUNNING or _STORED
  std::string name;
  std::string value;
};

// The driver's info_get, as the list of versions it puts, in order.
std::vector<Version> driver_versions(const FakeDevlinkDevice& device) {
  if (device.mlx5) {
    // mlx5_devlink_info_get: fixed fw.psid, running fw.version + fw, stored fw.version + fw
    // ("no pending version, return running (stored) version").
    uint32_t running = 0;
    uint32_t stored = 0;
    mlx5_fw_version_query(*device.mlx5, running, stored);
    if (stored == 0) stored = running;
    const std::string run = mlx5_version_string(running);
    const std::string sto = mlx5_version_string(stored);
    return {{DEVLINK_ATTR_INFO_VERSION_FIXED, "fw.psid", device.mlx5->board_id},
            {DEVLINK_ATTR_INFO_VERSION_RUNNING, "fw.version", run},
            {DEVLINK_ATTR_INFO_VERSION_RUNNING, kGenericFw, run},
            {DEVLINK_ATTR_INFO_VERSION_STORED, "fw.version", sto},
            {DEVLINK_ATTR_INFO_VERSION_STORED, kGenericFw, sto}};
  }
  // nsim_dev_info_get (6.1): stored then running fw.mgmt "10.20.30" (the _ext variants: the
  // COMPONENT type goes to the flash-update callback, not into the message).
  return {{DEVLINK_ATTR_INFO_VERSION_STORED, "fw.mgmt", "10.20.30"},
          {DEVLINK_ATTR_INFO_VERSION_RUNNING, "fw.mgmt", "10.20.30"}};
}

// An attribute type past DEVLINK_ATTR_MAX of these headers: what a newer kernel might add.
constexpr uint16_t kNewerAttribute = __DEVLINK_ATTR_MAX + 7;

// devlink_nl_info_fill: the handle, then the driver's info_get.
MnlMessage info_fill(const nlmsghdr* request, uint16_t family, const FakeDevlinkDevice& device) {
  MnlMessage reply = devlink_reply(request, family, DEVLINK_CMD_INFO_GET, DEVLINK_GENL_VERSION);
  reply.put_str(DEVLINK_ATTR_BUS_NAME, device.bus);
  reply.put_str(DEVLINK_ATTR_DEV_NAME, device.dev);
  // devlink_info_driver_name_put: both drivers put it first (KBUILD_MODNAME, DRV_NAME).
  reply.put_str(DEVLINK_ATTR_INFO_DRIVER_NAME, device.mlx5 ? "mlx5_core" : "netdevsim");
  if (!device.serial.empty()) reply.put_str(DEVLINK_ATTR_INFO_SERIAL_NUMBER, device.serial);
  if (!device.board_serial.empty()) {
    reply.put_str(DEVLINK_ATTR_INFO_BOARD_SERIAL_NUMBER, device.board_serial);
  }
  if (device.newer_kernel_attributes) reply.put_u32(kNewerAttribute, 1);
  for (const Version& version : driver_versions(device)) {
    // devlink_info_version_put: a nest of name then value (nla_put_string).
    const MnlMessage::Nest nest = reply.nest_start(version.kind);
    reply.put_str(DEVLINK_ATTR_INFO_VERSION_NAME, version.name);
    reply.put_str(DEVLINK_ATTR_INFO_VERSION_VALUE, version.value);
    if (device.newer_kernel_attributes) reply.put_u8(kNewerAttribute, 2);
    reply.nest_end(nest);
  }
  return reply;
}

// The driver's devlink_ops reload fields.
uint32_t reload_actions(const FakeDevlinkDevice& device) {
  // mlx5_devlink_ops: DRIVER_REINIT | FW_ACTIVATE; nsim_dev_devlink_ops: DRIVER_REINIT.
  if (device.mlx5) {
    return 1u << DEVLINK_RELOAD_ACTION_DRIVER_REINIT | 1u << DEVLINK_RELOAD_ACTION_FW_ACTIVATE;
  }
  if (device.netdevsim) return 1u << DEVLINK_RELOAD_ACTION_DRIVER_REINIT;
  return 0;
}
uint32_t reload_limits(const FakeDevlinkDevice& device) {
  // mlx5_devlink_ops: NO_RESET; netdevsim sets none.
  return device.mlx5 ? 1u << DEVLINK_RELOAD_LIMIT_NO_RESET : 0;
}
// DEVLINK_F_RELOAD: mlx5_devlink_register unless mp slave; nsim_drv_probe always.
bool reload_feature(const FakeDevlinkDevice& device) {
  if (device.mlx5) return !device.mlx5->mp_slave;
  return device.netdevsim.has_value();
}

// devlink_reload_invalid_combinations: driver_reinit with no_reset.
bool invalid_combination(int action, int limit) {
  return action == DEVLINK_RELOAD_ACTION_DRIVER_REINIT && limit == DEVLINK_RELOAD_LIMIT_NO_RESET;
}

// devlink_reload_stats_put.
void reload_stats_put(MnlMessage& reply, const FakeDevlinkDevice& device, bool is_remote) {
  const MnlMessage::Nest stats =
      reply.nest_start(is_remote ? DEVLINK_ATTR_REMOTE_RELOAD_STATS : DEVLINK_ATTR_RELOAD_STATS);
  for (int action = 0; action <= DEVLINK_RELOAD_ACTION_MAX; ++action) {
    if ((!is_remote && !(reload_actions(device) & (1u << action))) ||
        action == DEVLINK_RELOAD_ACTION_UNSPEC) {
      continue;
    }
    const MnlMessage::Nest info = reply.nest_start(DEVLINK_ATTR_RELOAD_ACTION_INFO);
    reply.put_u8(DEVLINK_ATTR_RELOAD_ACTION, static_cast<uint8_t>(action));
    const MnlMessage::Nest action_stats = reply.nest_start(DEVLINK_ATTR_RELOAD_ACTION_STATS);
    for (int limit = 0; limit <= DEVLINK_RELOAD_LIMIT_MAX; ++limit) {
      // "Stats of actions with unspecified limit are shown though drivers don't need to
      // register unspecified limit."
      if ((!is_remote && limit != DEVLINK_RELOAD_LIMIT_UNSPEC &&
           !(reload_limits(device) & (1u << limit))) ||
          invalid_combination(action, limit)) {
        continue;
      }
      const MnlMessage::Nest entry = reply.nest_start(DEVLINK_ATTR_RELOAD_STATS_ENTRY);
      reply.put_u8(DEVLINK_ATTR_RELOAD_STATS_LIMIT, static_cast<uint8_t>(limit));
      // The fake keeps no remote statistics (devlink_remote_reload_actions_performed).
      reply.put_u32(DEVLINK_ATTR_RELOAD_STATS_VALUE,
                    is_remote ? 0 : device.reload_stats[limit * __DEVLINK_RELOAD_ACTION_MAX + action]);
      reply.nest_end(entry);
    }
    reply.nest_end(action_stats);
    reply.nest_end(info);
  }
  reply.nest_end(stats);
}

// devlink_nl_fill with DEVLINK_CMD_NEW (devlink_nl_cmd_get_doit).
MnlMessage dev_fill(const nlmsghdr* request, uint16_t family, const FakeDevlinkDevice& device,
                    bool before_reload_actions) {
  MnlMessage reply = devlink_reply(request, family, DEVLINK_CMD_NEW, DEVLINK_GENL_VERSION);
  reply.put_str(DEVLINK_ATTR_BUS_NAME, device.bus);
  reply.put_str(DEVLINK_ATTR_DEV_NAME, device.dev);
  if (before_reload_actions) return reply;
  reply.put_u8(DEVLINK_ATTR_RELOAD_FAILED, device.reload_failed ? 1 : 0);
  const MnlMessage::Nest dev_stats = reply.nest_start(DEVLINK_ATTR_DEV_STATS);
  reload_stats_put(reply, device, false);
  reload_stats_put(reply, device, true);
  reply.nest_end(dev_stats);
  if (device.newer_kernel_attributes) reply.put_u32(kNewerAttribute, 3);
  return reply;
}

// mlx5_devlink_reload_down + mlx5_devlink_reload_up (6.1), over the firmware state. 0 or an
// errno with `ext_ack` set; `performed` as reload_up sets it.
int mlx5_reload(FakeMlx5Devlink& hw, int action, int limit, uint32_t& performed,
                std::string& ext_ack) {
  // Debian 6.1 has CONFIG_MLX5_SF unset: mlx5_sf_dev_allocated is always false there, so the
  // "reload is unsupported when SFs are allocated" refusal is not modelled.
  if (hw.lag_active) {
    ext_ack = mlx5_msg("reload is unsupported in Lag mode");
    return EOPNOTSUPP;
  }
  if (action == DEVLINK_RELOAD_ACTION_FW_ACTIVATE && limit == DEVLINK_RELOAD_LIMIT_NO_RESET) {
    // mlx5_devlink_trigger_fw_live_patch: MFRL must offer level 0.
    if (!(hw.reset_level & FakeMlx5Devlink::kResetLevel0)) {
      ext_ack = mlx5_msg("FW upgrade to the stored FW can't be done by FW live patching");
      return EINVAL;
    }
    ++hw.live_patches;
  } else if (action == DEVLINK_RELOAD_ACTION_FW_ACTIVATE) {
    // mlx5_devlink_reload_fw_activate: MFRL must offer level 3 (PCI reset), then the sync reset.
    if (!(hw.reset_level & FakeMlx5Devlink::kResetLevel3)) {
      ext_ack = mlx5_msg("FW activate requires reboot");
      return EINVAL;
    }
    switch (hw.sync_reset) {
      case FakeMlx5Devlink::SyncReset::kAccepted: break;
      case FakeMlx5Devlink::SyncReset::kAlreadyTriggered:
        ext_ack = mlx5_msg("Sync reset was already triggered");
        return EBUSY;
      case FakeMlx5Devlink::SyncReset::kTimeout:
        ext_ack = mlx5_msg("Sync reset got timeout");
        return ETIMEDOUT;
      case FakeMlx5Devlink::SyncReset::kNack:
        ext_ack = mlx5_msg("One of the hosts disabled reset");
        return EPERM;
    }
    ++hw.firmware_resets;
  }
  // Both limits of fw_activate activate the stored image (devlink-dev(8): "Activates new
  // firmware if such image is stored and pending activation"); afterwards none waits.
  if (action == DEVLINK_RELOAD_ACTION_FW_ACTIVATE && hw.pending != 0) {
    hw.running = hw.pending;
    hw.pending = 0;
  }
  // reload_up: BIT(action), plus DRIVER_REINIT for fw_activate without limit ("On fw_activate
  // action, also driver is reloaded and reinit performed"); live patch reloads nothing.
  performed = 1u << action;
  if (action == DEVLINK_RELOAD_ACTION_DRIVER_REINIT) ++hw.driver_reloads;
  if (action == DEVLINK_RELOAD_ACTION_FW_ACTIVATE && limit != DEVLINK_RELOAD_LIMIT_NO_RESET) {
    performed |= 1u << DEVLINK_RELOAD_ACTION_DRIVER_REINIT;
    ++hw.driver_reloads;
  }
  return 0;
}

// nsim_dev_reload_down + nsim_dev_reload_up (6.1).
int netdevsim_reload(FakeNetdevsimDevlink& nsim, uint32_t& performed, std::string& ext_ack) {
  if (nsim.dont_allow_reload) {
    ext_ack = "netdevsim: User forbid the reload for testing purposes";
    return EOPNOTSUPP;
  }
  if (nsim.fail_reload) {
    ext_ack = "netdevsim: User setup the reload to fail for testing purposes";
    return EINVAL;
  }
  performed = 1u << DEVLINK_RELOAD_ACTION_DRIVER_REINIT;
  ++nsim.reloads;
  return 0;
}

}  // namespace

FakeDevlinkDevice& FakeDevlinkKernel::add_mlx5(const std::string& pci_address,
                                               const FakeMlx5Devlink& mlx5) {
  FakeDevlinkDevice& device = devices_["pci/" + pci_address];
  device = FakeDevlinkDevice{};
  device.bus = "pci";
  device.dev = pci_address;
  device.mlx5 = mlx5;
  return device;
}

FakeDevlinkDevice& FakeDevlinkKernel::add_netdevsim(unsigned id) {
  const std::string name = "netdevsim" + std::to_string(id);
  FakeDevlinkDevice& device = devices_["netdevsim/" + name];
  device = FakeDevlinkDevice{};
  device.bus = "netdevsim";
  device.dev = name;
  device.netdevsim = FakeNetdevsimDevlink{};
  return device;
}

FakeDevlinkDevice& FakeDevlinkKernel::add_bare(const std::string& bus, const std::string& dev) {
  FakeDevlinkDevice& device = devices_[bus + "/" + dev];
  device = FakeDevlinkDevice{};
  device.bus = bus;
  device.dev = dev;
  return device;
}

FakeDevlinkDevice& FakeDevlinkKernel::device(const std::string& bus, const std::string& dev) {
  auto found = devices_.find(bus + "/" + dev);
  if (found == devices_.end()) {
    std::fprintf(stderr, "FakeDevlinkKernel: no device %s/%s\n", bus.c_str(), dev.c_str());
    std::abort();
  }
  return found->second;
}

MnlSocket FakeDevlinkKernel::connect() {
  return MnlSocket::over(std::make_unique<ScriptedKernel>(
      [this](const nlmsghdr* request) { return answer(request); }, kPortId));
}

size_t FakeDevlinkKernel::count(uint16_t type, uint8_t cmd) const {
  return static_cast<size_t>(
      std::count_if(requests_.begin(), requests_.end(), [type, cmd](const FakeDevlinkRequest& r) {
        return r.type == type && r.cmd == cmd;
      }));
}

std::vector<Bytes> FakeDevlinkKernel::answer(const nlmsghdr* request) {
  FakeDevlinkRequest& record = requests_.emplace_back();
  record.type = request->nlmsg_type;
  const auto* begin = reinterpret_cast<const uint8_t*>(request);
  record.bytes.assign(begin, begin + request->nlmsg_len);

  const DevlinkOutcome outcome = [&]() -> DevlinkOutcome {
    // genl_rcv_msg: a message too short for its genlmsghdr is EINVAL.
    if (request->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN) return refuse_devlink(EINVAL);
    const auto* genl = static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(request));
    record.cmd = genl->cmd;
    if (request->nlmsg_flags & NLM_F_DUMP) {
      return refuse_devlink(EOPNOTSUPP, "fake devlink: dumps are not modelled");
    }
    const nlattr* tb[kAttrs] = {};
    parse_genl_request(request, tb, kAttrs);

    if (request->nlmsg_type == GENL_ID_CTRL) {
      // The control family also answers GETPOLICY and dumps; only GETFAMILY is modelled.
      if (genl->cmd != CTRL_CMD_GETFAMILY) {
        return refuse_devlink(EOPNOTSUPP, "fake genetlink: only CTRL_CMD_GETFAMILY is modelled");
      }
      FamilyAnswer family = ctrl_getfamily(request, DEVLINK_GENL_NAME, family_id, DEVLINK_GENL_VERSION,
                                           DEVLINK_ATTR_MAX, has_family, kPortId);
      if (family.error != 0) return refuse_devlink(family.error);
      return DevlinkOutcome{0, {}, std::move(family.reply)};
    }

    // genl_rcv_msg: no family with this id.
    if (!has_family || request->nlmsg_type != family_id) return refuse_devlink(ENOENT);

    // genl_family_rcv_msg: an unknown command is EOPNOTSUPP; GENL_ADMIN_PERM (only RELOAD of the
    // three) is checked before the policy and pre_doit.
    if (genl->cmd != DEVLINK_CMD_GET && genl->cmd != DEVLINK_CMD_INFO_GET &&
        genl->cmd != DEVLINK_CMD_RELOAD) {
      return refuse_devlink(EOPNOTSUPP, "fake devlink: command not modelled");
    }
    if (genl->cmd == DEVLINK_CMD_RELOAD && !caller_is_admin) return refuse_devlink(EPERM);

    // devlink_nl_policy (liberal validation: GENL_DONT_VALIDATE_STRICT).
    for (const uint16_t type : {DEVLINK_ATTR_BUS_NAME, DEVLINK_ATTR_DEV_NAME}) {
      if (tb[type] != nullptr && mnl_attr_validate(tb[type], MNL_TYPE_NUL_STRING) < 0) {
        return refuse_devlink(EINVAL);
      }
    }
    const nlattr* action_attr = before_reload_actions ? nullptr : tb[DEVLINK_ATTR_RELOAD_ACTION];
    const nlattr* limits_attr = before_reload_actions ? nullptr : tb[DEVLINK_ATTR_RELOAD_LIMITS];
    if (action_attr != nullptr) {
      // NLA_POLICY_RANGE(NLA_U8, DRIVER_REINIT, DEVLINK_RELOAD_ACTION_MAX).
      if (mnl_attr_validate(action_attr, MNL_TYPE_U8) < 0) return refuse_devlink(ERANGE);
      const uint8_t action = mnl_attr_get_u8(action_attr);
      if (action < DEVLINK_RELOAD_ACTION_DRIVER_REINIT || action > DEVLINK_RELOAD_ACTION_MAX) {
        return refuse_devlink(ERANGE);
      }
    }
    nla_bitfield32 limits{};
    if (limits_attr != nullptr) {
      // NLA_POLICY_BITFIELD32(DEVLINK_RELOAD_LIMITS_VALID_MASK): validate_nla_bitfield32.
      if (mnl_attr_get_payload_len(limits_attr) != sizeof limits) return refuse_devlink(ERANGE);
      std::memcpy(&limits, mnl_attr_get_payload(limits_attr), sizeof limits);
      if ((limits.selector & ~DEVLINK_RELOAD_LIMITS_VALID_MASK) ||
          (limits.value & ~DEVLINK_RELOAD_LIMITS_VALID_MASK) || (limits.value & ~limits.selector)) {
        return refuse_devlink(EINVAL);
      }
    }

    // devlink_nl_pre_doit -> devlink_get_from_attrs.
    if (tb[DEVLINK_ATTR_BUS_NAME] == nullptr || tb[DEVLINK_ATTR_DEV_NAME] == nullptr) {
      return refuse_devlink(EINVAL);
    }
    auto found = devices_.find(std::string(mnl_attr_get_str(tb[DEVLINK_ATTR_BUS_NAME])) + "/" +
                               mnl_attr_get_str(tb[DEVLINK_ATTR_DEV_NAME]));
    if (found == devices_.end()) return refuse_devlink(ENODEV);
    FakeDevlinkDevice& device = found->second;

    switch (genl->cmd) {
      case DEVLINK_CMD_GET:
        return DevlinkOutcome{0, {}, dev_fill(request, family_id, device, before_reload_actions)};
      case DEVLINK_CMD_INFO_GET:
        // devlink_nl_cmd_info_get_doit: no info_get is EOPNOTSUPP, without a text.
        if (!device.mlx5 && !device.netdevsim) return refuse_devlink(EOPNOTSUPP);
        return DevlinkOutcome{0, {}, info_fill(request, family_id, device)};
      default: break;
    }

    // devlink_nl_cmd_reload.
    if (!reload_feature(device)) return refuse_devlink(EOPNOTSUPP);
    const int action =
        action_attr != nullptr ? int{mnl_attr_get_u8(action_attr)} : int{DEVLINK_RELOAD_ACTION_DRIVER_REINIT};
    if (!(reload_actions(device) & (1u << action))) {
      return refuse_devlink(EOPNOTSUPP, devlink_msg("Requested reload action is not supported by the driver"));
    }
    int limit = DEVLINK_RELOAD_LIMIT_UNSPEC;
    if (limits_attr != nullptr) {
      const uint32_t selected = limits.value & limits.selector;
      if (selected == 0) return refuse_devlink(EINVAL, devlink_msg("Invalid limit selected"));
      for (limit = 0; limit <= DEVLINK_RELOAD_LIMIT_MAX; ++limit) {
        if (selected & (1u << limit)) break;
      }
      if (selected != (1u << limit)) {
        return refuse_devlink(EOPNOTSUPP, devlink_msg("Multiselection of limit is not supported"));
      }
      if (!(reload_limits(device) & (1u << limit))) {
        return refuse_devlink(EOPNOTSUPP, devlink_msg("Requested limit is not supported by the driver"));
      }
      if (invalid_combination(action, limit)) {
        return refuse_devlink(EINVAL, devlink_msg("Requested limit is invalid for this action"));
      }
    }
    // devlink_reload: the driver's reload_down, then reload_up.
    uint32_t performed = 0;
    std::string ext_ack;
    const int err = device.mlx5 ? mlx5_reload(*device.mlx5, action, limit, performed, ext_ack)
                                : netdevsim_reload(*device.netdevsim, performed, ext_ack);
    if (err != 0) return refuse_devlink(err, ext_ack);
    // devlink_reload_stats_update: one count per action performed, at this limit.
    for (int a = 0; a <= DEVLINK_RELOAD_ACTION_MAX; ++a) {
      if (performed & (1u << a)) ++device.reload_stats[limit * __DEVLINK_RELOAD_ACTION_MAX + a];
    }
    // "For backward compatibility generate reply only if attributes used by user".
    if (action_attr == nullptr && limits_attr == nullptr) return DevlinkOutcome{};
    // devlink_nl_reload_actions_performed_snd.
    MnlMessage reply = devlink_reply(request, family_id, DEVLINK_CMD_RELOAD, DEVLINK_GENL_VERSION);
    reply.put_str(DEVLINK_ATTR_BUS_NAME, device.bus);
    reply.put_str(DEVLINK_ATTR_DEV_NAME, device.dev);
    const nla_bitfield32 bits{performed, performed};
    reply.put(DEVLINK_ATTR_RELOAD_ACTIONS_PERFORMED, &bits, sizeof bits);
    return DevlinkOutcome{0, {}, std::move(reply)};
  }();

  std::vector<Bytes> out;
  if (outcome.error != 0) {
    out.push_back(devlink_ack(request, outcome.error, outcome.ext_ack));
    return out;
  }
  if (outcome.reply) {
    out.emplace_back(outcome.reply->bytes().begin(), outcome.reply->bytes().end());
  }
  out.push_back(devlink_ack(request, 0, {}));
  return out;
}

}  // namespace rdmactl::test
