// SPDX-License-Identifier: Apache-2.0
// load_spec(): read a spec file (or standard input) within bounds, check that it is UTF-8 text,
// parse the YAML, check it against the schema, run the semantic checks, and report every problem
// at once, in file order.
#include <sys/stat.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "agent/core/digest.h"
#include "agent/core/text.h"
#include "agent/spec/input.h"
#include "agent/spec/semantic.h"
#include "agent/spec/spec.h"
#include "agent/spec/structure.h"
#include "agent/spec/yaml_node.h"

namespace rdmactl {
namespace {

constexpr const char* kStdinPath = "-";
constexpr const char* kStdinName = "<stdin>";
// A spec is a few levels deep and a few thousand nodes; these only stop documents whose aliases
// loop or multiply (`a: &x [*x]`, "billion laughs") from exhausting the stack or the CPU.
constexpr std::size_t kMaxDepth = 64;
constexpr std::size_t kMaxNodes = 200000;
// yaml-cpp holds every token of a flow collection that could be a mapping key ([...] or {...}, and
// a whole JSON document) until it has read the collection's end: about 250 bytes a token, before
// any value is counted (4 MiB of "[[a,a,..." took 550 MB, of "[[[[..." 945 MB). So the characters
// that open flow collections and separate their entries are counted in the text first, wherever
// they are (quoted and commented ones too): a spec with more is refused before yaml-cpp sees it.
// 300,000 of them hold the tokens to about 100 MB, and leave room for a JSON spec of 150,000 values.
constexpr std::size_t kMaxFlowIndicators = 300000;
// A file full of bad bytes would give one problem per line; the first ones say what is wrong.
constexpr std::size_t kMaxTextProblems = 20;

Result<std::string> read_stdin() { return read_bounded_stream(std::cin, kMaxSpecBytes, "the spec on standard input"); }

Result<std::string> read_spec_file(const std::string& path, const std::string& name) {
  return read_regular_file(path, kMaxSpecBytes, "spec " + name);
}

Diagnostic diagnostic_at(const std::string& file, Position at, std::string message) {
  return Diagnostic{file, at.line, at.column, "", std::move(message)};
}

Error invalid_spec(const std::string& file, std::vector<Diagnostic> diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  const std::size_t n = diagnostics.size();
  Error error = make_error(ErrorKind::kInvalidSpec, file + ": " + std::to_string(n) +
                                                        (n == 1 ? " problem" : " problems") + " in the spec");
  error.diagnostics = std::move(diagnostics);
  return error;
}

// YAML is Unicode text, and every string of a spec reaches JSON and terminals: bytes that are not
// UTF-8, and control characters other than tab, CR, LF and NEL (YAML's c-printable set excludes
// the rest, C1 included), are refused before the parser sees them, each line once. Columns count bytes, as
// yaml-cpp's marks do.
std::vector<Diagnostic> text_problems(const std::string& text, const std::string& file) {
  std::vector<Diagnostic> out;
  int line = 1;
  std::size_t line_start = 0;
  bool line_reported = false;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      line_reported = false;
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(text, i);
    std::string problem;
    if (n == 0) {
      problem = "byte " + byte_text(c) + " is not UTF-8: a spec is UTF-8 text";
    } else if (n == 1 && c != '\r' && is_control_byte(c, /*allow_tab=*/true)) {
      problem = "control character " + byte_text(c) +
                " in the text: YAML allows only tab, line feed and carriage return";
    } else if (n == 2 && is_c1_control(text, i) && static_cast<unsigned char>(text[i + 1]) != 0x85) {
      problem = "control character " + escape_for_display(text.substr(i, 2)) +
                " in the text: YAML allows only tab, line feed, carriage return and U+0085";
    }
    if (!problem.empty() && !line_reported) {
      line_reported = true;
      if (out.size() == kMaxTextProblems) {
        out.push_back(Diagnostic{file, line, static_cast<int>(i - line_start + 1), "",
                                 "more lines have bytes like these; only the first " +
                                     std::to_string(kMaxTextProblems) + " are listed"});
        return out;
      }
      out.push_back(Diagnostic{file, line, static_cast<int>(i - line_start + 1), "", std::move(problem)});
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

// yaml-cpp resolves aliases to shared nodes, so a document is a graph that every later pass walks
// as a tree. This walk, bounded in depth and size, runs first.
class ShapeCheck {
 public:
  explicit ShapeCheck(std::string file) : file_(std::move(file)) {}

  std::optional<Diagnostic> run(const YAML::Node& root) {
    walk(root);
    return std::move(problem_);
  }

 private:
  void walk(const YAML::Node& node) {
    if (problem_) return;
    const Position parent_at = ancestors_.empty() ? Position{1, 1} : position_of(ancestors_.back());
    if (++visited_ > kMaxNodes) {
      problem_ = diagnostic_at(
          file_, parent_at,
          "the spec has more than " + std::to_string(kMaxNodes) + " values once its aliases are expanded");
      return;
    }
    if (ancestors_.size() >= kMaxDepth) {
      problem_ = diagnostic_at(file_, parent_at,
                               "the spec nests deeper than " + std::to_string(kMaxDepth) + " levels");
      return;
    }
    for (const YAML::Node& ancestor : ancestors_) {
      if (ancestor.is(node)) {
        problem_ = diagnostic_at(file_, parent_at, "an alias here refers to a node that contains it");
        return;
      }
    }
    if (!node.IsMap() && !node.IsSequence()) return;
    ancestors_.push_back(node);
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (node.IsMap()) {
        check_key(it->first);
        walk(it->first);
        walk(it->second);
      } else {
        walk(*it);
      }
    }
    ancestors_.pop_back();
  }

  // No key of the spec can hold a control character, and keys become field paths in messages.
  void check_key(const YAML::Node& key) {
    if (problem_ || !key.IsScalar() || !first_control_byte(key.Scalar())) return;
    problem_ = diagnostic_at(file_, position_of(key),
                             "the key \"" + escape_for_display(key.Scalar()) + "\" has a control character");
  }

  std::string file_;
  std::vector<YAML::Node> ancestors_;  // only pushed and popped: assigning a YAML::Node writes through
  std::size_t visited_ = 0;
  std::optional<Diagnostic> problem_;
};

// Counts values and nesting while yaml-cpp parses, before it builds a node: the document yaml-cpp
// would build costs about 500 bytes a value (4 MiB of "[a,a,...]" took 940 MB and 5 s), so a
// document past kMaxNodes values or kMaxDepth levels is refused by this pass, which stops the
// parse where it passes the bound and holds nothing. Aliases count once here; ShapeCheck counts
// them as expanded once the document is built.
class ValueCounter : public YAML::EventHandler {
 public:
  struct Exceeded {
    YAML::Mark mark;
    std::string message;
  };

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { value(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { value(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    value(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    open(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void value(const YAML::Mark& mark) {
    if (++values_ > kMaxNodes) throw Exceeded{mark, "the spec has more than " + std::to_string(kMaxNodes) + " values"};
  }
  void open(const YAML::Mark& mark) {
    value(mark);
    if (++depth_ > kMaxDepth) {
      throw Exceeded{mark, "the spec nests deeper than " + std::to_string(kMaxDepth) + " levels"};
    }
  }

  std::size_t values_ = 0;
  std::size_t depth_ = 0;
};

// nullopt when the text is within the bounds (or is not YAML: the parse that follows says so).
std::optional<Diagnostic> count_values(const std::string& text, const std::string& file) {
  std::size_t indicators = 0;
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if ((c == '[' || c == '{' || c == ',') && ++indicators > kMaxFlowIndicators) {
      return diagnostic_at(file, Position{line, static_cast<int>(i - line_start + 1)},
                           "the spec has more than " + std::to_string(kMaxFlowIndicators) +
                               " of the characters [ { , (flow collections and their entries): the YAML parser holds "
                               "a flow collection whole before it reads it; write a spec this large in block style");
    }
  }
  std::istringstream in(text);
  ValueCounter counter;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(counter)) {
    }
  } catch (const ValueCounter::Exceeded& e) {
    return diagnostic_at(file, Position{e.mark.line + 1, e.mark.column + 1}, e.message);
  } catch (const YAML::Exception&) {
    // A syntax error: LoadAll reports it with its position.
  }
  return std::nullopt;
}

// The one YAML document of the spec, or the reason there is none.
std::variant<YAML::Node, Diagnostic> parse_document(const std::string& text, const std::string& file) {
  if (auto problem = count_values(text, file)) return *problem;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp marks are 0-based.
    const Position at = e.mark.is_null() ? Position{} : Position{e.mark.line + 1, e.mark.column + 1};
    return diagnostic_at(file, at, "YAML syntax error: " + e.msg);
  }
  if (documents.empty() || yaml_type(documents.front()) == YamlType::kNull) {
    return diagnostic_at(file, Position{1, 1},
                         "the spec is empty: expected apiVersion, kind, metadata, defaults and nodes");
  }
  if (documents.size() > 1) {
    return diagnostic_at(file, position_of(documents[1]),
                         "a spec is one YAML document; this file has " + std::to_string(documents.size()));
  }
  if (auto problem = ShapeCheck(file).run(documents.front())) return *problem;
  return documents.front();
}

// Structural problems first: where both passes report the same field, the structural one stands,
// unless it is only a format problem that the semantic pass explains better.
std::vector<Diagnostic> combine(std::vector<StructuralProblem> structural, std::vector<Diagnostic> semantic) {
  std::set<std::string> semantic_paths;
  for (const auto& d : semantic) semantic_paths.insert(d.path);
  std::set<std::string> structural_paths;
  std::vector<Diagnostic> out;
  for (auto& problem : structural) {
    if (problem.deferrable && semantic_paths.count(problem.diagnostic.path) > 0) continue;
    structural_paths.insert(problem.diagnostic.path);
    out.push_back(std::move(problem.diagnostic));
  }
  for (auto& d : semantic) {
    if (structural_paths.count(d.path) == 0) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

Result<FabricSpec> load_spec_text(const std::string& text, const std::string& name) {
  // The name goes into every message and into JSON reports.
  const std::string file = escape_for_display(name);
  if (text.size() > kMaxSpecBytes) {
    return make_error(ErrorKind::kInvalidSpec, "spec " + file + " is larger than " + size_text(kMaxSpecBytes) +
                                                   " (" + std::to_string(text.size()) + " bytes): it is not read");
  }
  if (auto problems = text_problems(text, file); !problems.empty()) return invalid_spec(file, std::move(problems));
  try {
    auto parsed = parse_document(text, file);
    if (auto* problem = std::get_if<Diagnostic>(&parsed)) return invalid_spec(file, {*problem});
    const YAML::Node& root = std::get<YAML::Node>(parsed);

    auto structural = check_structure(root, file);
    if (!structural) return structural.error();
    const bool schema_valid = structural->valid;
    SemanticResult semantic = read_spec_document(root, file);
    std::vector<Diagnostic> diagnostics =
        combine(std::move(structural->problems), std::move(semantic.diagnostics));
    // Never accept what the schema rejects, even if no message could be made of valijson's errors.
    if (diagnostics.empty() && !schema_valid) {
      diagnostics.push_back(
          diagnostic_at(file, Position{}, "the spec does not match the fabric spec schema"));
    }
    if (!diagnostics.empty()) return invalid_spec(file, std::move(diagnostics));

    FabricSpec spec = std::move(semantic.spec);
    spec.file = file;
    spec.sha256 = sha256_hex(text);
    spec.text = text;
    return spec;
  } catch (const std::exception& e) {
    // yaml-cpp throws on misuse of odd nodes; whatever slipped through is still the spec's problem,
    // never a crash.
    return invalid_spec(file,
                        {diagnostic_at(file, Position{}, std::string("cannot read the spec: ") + e.what())});
  }
}

std::string spec_input_name(const std::string& path) {
  return path == kStdinPath ? kStdinName : escape_for_display(path);
}

Result<std::string> read_spec_input(const std::string& path, SpecInput input) {
  if (path == kStdinPath) return read_stdin();
  const std::string name = "spec " + spec_input_name(path);
  struct stat st {};
  if (input == SpecInput::kFileOrPipe && ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
    return read_fifo(path, kMaxSpecBytes, name);
  }
  return read_spec_file(path, spec_input_name(path));
}

Result<FabricSpec> load_spec(const std::string& path, SpecInput input) {
  auto text = read_spec_input(path, input);
  if (!text) return text.error();
  return load_spec_text(*text, spec_input_name(path));
}

}  // namespace rdmactl
