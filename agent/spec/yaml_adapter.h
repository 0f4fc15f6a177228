// SPDX-License-Identifier: Apache-2.0
// A valijson adapter over yaml-cpp nodes that reports YAML 1.2 core-schema types.
//
// valijson's own YamlCppAdapter (valijson/adapters/yaml_cpp_adapter.hpp) calls every node a
// string, even mappings, lists and empty values, so it only works with weak typing, where
// `mtu: "9000"` passes as an integer. Worse, a `pattern` or `enum` meeting a mapping or an empty
// value makes it call valijson's throwRuntimeError, which abort()s unless exceptions are enabled:
// `name:` with nothing after it would kill the process. This adapter has the same shape (it is
// the stock adapter with honest types from yaml_node.h), so the validator runs with strong types
// and the schema means what an editor's YAML language server takes it to mean.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <valijson/internal/adapter.hpp>
#include <valijson/internal/basic_adapter.hpp>
#include <valijson/internal/frozen_value.hpp>

#include "agent/spec/yaml_node.h"

namespace rdmactl {

class SpecYamlAdapter;
class SpecYamlArrayIterator;
class SpecYamlObjectIterator;

using SpecYamlObjectMember = std::pair<std::string, SpecYamlAdapter>;

class SpecYamlArray {
 public:
  using const_iterator = SpecYamlArrayIterator;
  using iterator = SpecYamlArrayIterator;

  SpecYamlArray() : node_(YAML::NodeType::Sequence) {}
  explicit SpecYamlArray(const YAML::Node& node) : node_(node) {}

  SpecYamlArrayIterator begin() const;
  SpecYamlArrayIterator end() const;
  std::size_t size() const { return node_.size(); }

 private:
  const YAML::Node node_;
};

class SpecYamlObject {
 public:
  using const_iterator = SpecYamlObjectIterator;
  using iterator = SpecYamlObjectIterator;

  SpecYamlObject() : node_(YAML::NodeType::Map) {}
  explicit SpecYamlObject(const YAML::Node& node) : node_(node) {}

  SpecYamlObjectIterator begin() const;
  SpecYamlObjectIterator end() const;
  // The first member with that key, as yaml-cpp's own lookup does; duplicate keys are reported by
  // the semantic pass.
  SpecYamlObjectIterator find(const std::string& property_name) const;
  std::size_t size() const { return node_.size(); }

 private:
  const YAML::Node node_;
};

class SpecYamlFrozenValue : public valijson::adapters::FrozenValue {
 public:
  explicit SpecYamlFrozenValue(const YAML::Node& source) : node_(YAML::Clone(source)) {}
  FrozenValue* clone() const override { return new SpecYamlFrozenValue(node_); }
  bool equalTo(const valijson::adapters::Adapter& other, bool strict) const override;

 private:
  const YAML::Node node_;
};

// The ValueType of valijson's BasicAdapter: reads one node. Method names are valijson's.
class SpecYamlValue {
 public:
  SpecYamlValue() : node_(YAML::NodeType::Map), type_(YamlType::kMap) {}
  explicit SpecYamlValue(const YAML::Node& node) : node_(node), type_(yaml_type(node)) {}

  valijson::adapters::FrozenValue* freeze() const { return new SpecYamlFrozenValue(node_); }

  opt::optional<SpecYamlArray> getArrayOptional() const {
    if (type_ == YamlType::kSequence) return SpecYamlArray(node_);
    return {};
  }
  bool getArraySize(std::size_t& result) const {
    if (type_ != YamlType::kSequence) return false;
    result = node_.size();
    return true;
  }
  bool getBool(bool& result) const {
    auto value = yaml_bool(node_);
    if (value) result = *value;
    return value.has_value();
  }
  bool getDouble(double& result) const {
    if (type_ != YamlType::kFloat) return false;
    auto value = yaml_number(node_);
    if (value) result = *value;
    return value.has_value();
  }
  bool getInteger(std::int64_t& result) const {
    auto value = yaml_int(node_);
    if (value) result = *value;
    return value.has_value();
  }
  opt::optional<SpecYamlObject> getObjectOptional() const {
    if (type_ == YamlType::kMap) return SpecYamlObject(node_);
    return {};
  }
  bool getObjectSize(std::size_t& result) const {
    if (type_ != YamlType::kMap) return false;
    result = node_.size();
    return true;
  }
  bool getString(std::string& result) const {
    if (type_ != YamlType::kString) return false;
    result = node_.Scalar();
    return true;
  }

  static bool hasStrictTypes() { return true; }
  bool isArray() const { return type_ == YamlType::kSequence; }
  bool isBool() const { return type_ == YamlType::kBool; }
  bool isDouble() const { return type_ == YamlType::kFloat; }
  bool isInteger() const { return type_ == YamlType::kInt; }
  bool isNull() const { return type_ == YamlType::kNull; }
  bool isNumber() const { return type_ == YamlType::kInt || type_ == YamlType::kFloat; }
  bool isObject() const { return type_ == YamlType::kMap; }
  bool isString() const { return type_ == YamlType::kString; }

 private:
  const YAML::Node node_;
  const YamlType type_;
};

class SpecYamlAdapter
    : public valijson::adapters::BasicAdapter<SpecYamlAdapter, SpecYamlArray, SpecYamlObjectMember,
                                              SpecYamlObject, SpecYamlValue> {
 public:
  SpecYamlAdapter() = default;
  explicit SpecYamlAdapter(const YAML::Node& node) : BasicAdapter(SpecYamlValue(node)) {}
};

// Walks a sequence by index: valijson's uniqueItems steps back from end(), which yaml-cpp's own
// (forward-only) iterators cannot do.
class SpecYamlArrayIterator {
 public:
  using iterator_category = std::bidirectional_iterator_tag;
  using value_type = SpecYamlAdapter;
  using difference_type = std::ptrdiff_t;
  using pointer = SpecYamlAdapter*;
  using reference = SpecYamlAdapter&;

  SpecYamlArrayIterator(const YAML::Node& sequence, std::size_t index) : sequence_(sequence), index_(index) {}
  SpecYamlArrayIterator(const SpecYamlArrayIterator&) = default;
  // YAML::Node::operator= would overwrite the node it refers to; reset() rebinds the handle.
  SpecYamlArrayIterator& operator=(const SpecYamlArrayIterator& other) {
    sequence_.reset(other.sequence_);
    index_ = other.index_;
    return *this;
  }

  SpecYamlAdapter operator*() const { return SpecYamlAdapter(sequence_[index_]); }
  valijson::adapters::DerefProxy<SpecYamlAdapter> operator->() const {
    return valijson::adapters::DerefProxy<SpecYamlAdapter>(**this);
  }
  bool operator==(const SpecYamlArrayIterator& other) const { return index_ == other.index_; }
  bool operator!=(const SpecYamlArrayIterator& other) const { return index_ != other.index_; }
  const SpecYamlArrayIterator& operator++() {
    ++index_;
    return *this;
  }
  SpecYamlArrayIterator operator++(int) {
    SpecYamlArrayIterator before = *this;
    ++index_;
    return before;
  }
  const SpecYamlArrayIterator& operator--() {
    --index_;
    return *this;
  }
  SpecYamlArrayIterator operator--(int) {
    SpecYamlArrayIterator before = *this;
    --index_;
    return before;
  }
  void advance(std::ptrdiff_t n) {
    index_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(index_) + n);
  }

 private:
  YAML::Node sequence_;
  std::size_t index_;
};

class SpecYamlObjectIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = SpecYamlObjectMember;
  using difference_type = std::ptrdiff_t;
  using pointer = SpecYamlObjectMember*;
  using reference = SpecYamlObjectMember&;

  explicit SpecYamlObjectIterator(const YAML::Node::const_iterator& it) : it_(it) {}

  // A non-scalar key has no name; it matches no property and the semantic pass reports it.
  SpecYamlObjectMember operator*() const {
    return SpecYamlObjectMember(key_text(it_->first).value_or(std::string()), SpecYamlAdapter(it_->second));
  }
  valijson::adapters::DerefProxy<SpecYamlObjectMember> operator->() const {
    return valijson::adapters::DerefProxy<SpecYamlObjectMember>(**this);
  }
  bool operator==(const SpecYamlObjectIterator& other) const { return it_ == other.it_; }
  bool operator!=(const SpecYamlObjectIterator& other) const { return !(it_ == other.it_); }
  const SpecYamlObjectIterator& operator++() {
    ++it_;
    return *this;
  }
  SpecYamlObjectIterator operator++(int) {
    SpecYamlObjectIterator before(it_);
    ++it_;
    return before;
  }

 private:
  YAML::Node::const_iterator it_;
};

inline SpecYamlArrayIterator SpecYamlArray::begin() const { return SpecYamlArrayIterator(node_, 0); }
inline SpecYamlArrayIterator SpecYamlArray::end() const { return SpecYamlArrayIterator(node_, node_.size()); }
inline SpecYamlObjectIterator SpecYamlObject::begin() const { return SpecYamlObjectIterator(node_.begin()); }
inline SpecYamlObjectIterator SpecYamlObject::end() const { return SpecYamlObjectIterator(node_.end()); }
inline SpecYamlObjectIterator SpecYamlObject::find(const std::string& property_name) const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    // key_text's rule without its copy: a scalar key by its text, a null key as "".
    const YAML::Node key = it->first;
    if (!key.IsDefined()) continue;
    if (key.IsScalar() ? key.Scalar() == property_name : key.IsNull() && property_name.empty()) {
      return SpecYamlObjectIterator(it);
    }
  }
  return end();
}
inline bool SpecYamlFrozenValue::equalTo(const valijson::adapters::Adapter& other, bool strict) const {
  return SpecYamlAdapter(node_).equalTo(other, strict);
}

}  // namespace rdmactl

template <>
struct valijson::adapters::AdapterTraits<rdmactl::SpecYamlAdapter> {
  using DocumentType = YAML::Node;
  static std::string adapterName() { return "SpecYamlAdapter"; }
};
