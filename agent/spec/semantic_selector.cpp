// SPDX-License-Identifier: Apache-2.0
// An interface's selector: exactly one of name, pci, rdmaDevice (port only with the last two), with
// netdev and RDMA device names as the kernel takes them and PCI addresses in sysfs's form.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <regex>
#include <string>
#include <string_view>

#include "agent/core/text.h"
#include "agent/spec/semantic_internal.h"

namespace rdmactl::semantic_detail {
namespace {

constexpr std::size_t kMaxNetdevName = 15;      // IFNAMSIZ - 1
constexpr std::size_t kMaxRdmaDeviceName = 63;  // IB_DEVICE_NAME_MAX - 1
constexpr int kMaxPort = 255;
constexpr std::string_view kSelectorKeys[] = {"name", "pci", "rdmaDevice"};

// The kernel's isspace() (lib/ctype.c): 9-13, space, and 0xA0, which its Latin-1 table calls a
// space. dev_valid_name tests each byte, so a UTF-8 name with an A0 byte ("à" is C3 A0) fails.
bool kernel_isspace(unsigned char c) { return (c >= 9 && c <= 13) || c == ' ' || c == 0xa0; }

// net/core/dev.c dev_valid_name: not empty, shorter than IFNAMSIZ, not "." or "..", no '/', ':'
// or whitespace. Control characters pass the kernel, but not here: a name is printed in reports
// and logs.
std::optional<std::string> netdev_name_problem(const std::string& name) {
  if (name.empty()) return "a netdev name must not be empty";
  if (name == "." || name == "..") return in_quotes(name) + " is not a valid netdev name";
  if (name.size() > kMaxNetdevName) {
    return in_quotes(name) + " is " + std::to_string(name.size()) + " bytes long; a netdev name has at most " +
           std::to_string(kMaxNetdevName) + " (IFNAMSIZ - 1)";
  }
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/' || c == ':') {
      return in_quotes(name) + " is not a valid netdev name: it contains '" + std::string(1, c) + "'";
    }
    if (byte == 0xa0) {
      return in_quotes(name) +
             " is not a valid netdev name: its byte 0xa0 is whitespace to the kernel (lib/ctype.c)";
    }
    if (kernel_isspace(byte)) {
      return in_quotes(name) + " is not a valid netdev name: it contains whitespace";
    }
    if (is_control_byte(byte)) {
      return in_quotes(name) + " is not a valid netdev name: it contains the control character " +
             byte_text(byte);
    }
  }
  return std::nullopt;
}

std::optional<std::string> rdma_device_problem(const std::string& name) {
  if (name.empty()) return "an RDMA device name must not be empty";
  // A device is a directory of /sys/class/infiniband: "." and ".." are that directory and its
  // parent, never a device (plan refuses them as rdma_sysfs.cpp is_safe_device_name does).
  if (name == "." || name == "..") return in_quotes(name) + " is not a valid RDMA device name";
  if (name.size() > kMaxRdmaDeviceName) {
    return in_quotes(name) + " is longer than " + std::to_string(kMaxRdmaDeviceName) +
           " characters, the limit for RDMA device names";
  }
  for (const char c : name) {
    if (c == '/' || std::isspace(static_cast<unsigned char>(c))) {
      return in_quotes(name) + " is not a valid RDMA device name: it contains '/' or whitespace";
    }
    if (is_control_byte(static_cast<unsigned char>(c))) {
      return in_quotes(name) + " is not a valid RDMA device name: it contains the control character " +
             byte_text(static_cast<unsigned char>(c));
    }
  }
  return std::nullopt;
}

}  // namespace

// Exactly one of name, pci, rdmaDevice; port only with pci and rdmaDevice.
std::optional<Selector> SpecReader::read_selector(const Field& map) {
  // In file order, so a second selector is reported where it is written.
  std::vector<Field> given;
  for (const Field& field : members(map)) {
    const std::string name = key_text(field.key).value_or("");
    if (std::find(std::begin(kSelectorKeys), std::end(kSelectorKeys), name) != std::end(kSelectorKeys)) {
      given.push_back(field);
    }
  }
  if (given.empty()) {
    report(map.position(), map.path, "no selector: give exactly one of name, pci, rdmaDevice");
    return std::nullopt;
  }
  if (given.size() > 1) {
    report(given[1].key_position(), given[1].path,
           "two selectors, " + key_text(given[0].key).value_or("") + " and " +
               key_text(given[1].key).value_or("") + ": give exactly one of name, pci, rdmaDevice");
    return std::nullopt;
  }
  const Field& chosen = given.front();
  const std::string kind = key_text(chosen.key).value_or("");
  const auto port = member(map, "port");
  if (kind == "name" && port) {
    report(port->key_position(), port->path,
           "port applies to pci and rdmaDevice selectors; a netdev name has no port");
  }
  const auto text = yaml_string(chosen.value);
  if (!text) return std::nullopt;
  Selector selector;
  if (kind != "name") selector.port = int_of(port, 1, kMaxPort).value_or(1);
  if (kind == "name") {
    if (auto problem = netdev_name_problem(*text)) {
      report(chosen.position(), chosen.path, *problem);
      return std::nullopt;
    }
    selector.kind = Selector::Kind::kName;
    selector.value = *text;
  } else if (kind == "pci") {
    const auto bdf = canonical_pci_address(*text);
    if (!bdf) {
      report(chosen.position(), chosen.path,
             in_quotes(*text) +
                 " is not a PCI address: expected [domain:]bus:device.function, "
                 "such as 0000:3b:00.0 or 3b:00.0");
      return std::nullopt;
    }
    selector.kind = Selector::Kind::kPci;
    selector.value = *bdf;
  } else {
    if (auto problem = rdma_device_problem(*text)) {
      report(chosen.position(), chosen.path, *problem);
      return std::nullopt;
    }
    selector.kind = Selector::Kind::kRdmaDevice;
    selector.value = *text;
  }
  return selector;
}

}  // namespace rdmactl::semantic_detail

namespace rdmactl {

std::optional<std::string> canonical_pci_address(const std::string& text) {
  static const std::regex kBdf(R"((?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([01][0-9a-fA-F])\.([0-7]))");
  std::smatch m;
  if (!std::regex_match(text, m, kBdf)) return std::nullopt;
  // sysfs writes the domain with at least four digits: "0000", or "10000" behind a VMD bridge.
  const unsigned long domain = m[1].matched ? std::stoul(m[1].str(), nullptr, 16) : 0;
  char domain_text[16];
  std::snprintf(domain_text, sizeof domain_text, "%04lx", domain);
  std::string out = std::string(domain_text) + ":" + m[2].str() + ":" + m[3].str() + "." + m[4].str();
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace rdmactl
