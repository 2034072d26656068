// The layers are checked, not just drawn: every `#include "libsarena/<layer>/..."` in libsarena/,
// tools/, examples/ and bench/ must be allowed by cmake/layers.txt, and the table itself must
// have no cycle (layers point down only). libbpf (`<bpf/libbpf.h>`) and the BPF tree's generated
// and shared headers (`"bpf/<name>.skel.h"`, `"bpf/kernel/drop_trace.h"`) count as the bpf layer:
// what may not include libsarena/bpf/ may not reach below it either. bpf/include's ABI header
// (`"sarena/abi.h"`) is shared with C++ on purpose and is no layer.

#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/lib/test_util.h"

namespace {

namespace fs = std::filesystem;
using Table = std::map<std::string, std::set<std::string>>;

Table ParseTable(const std::string& text) {
  Table t;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 1));
    std::set<std::string>& deps = t[std::string(absl::StripAsciiWhitespace(parts[0]))];
    if (parts.size() > 1) {
      for (absl::string_view d : absl::StrSplit(parts[1], ' ', absl::SkipWhitespace())) {
        deps.insert(std::string(d));
      }
    }
  }
  return t;
}

// "layer -> dep" edges of the table that close a cycle (empty when the table is a DAG).
std::vector<std::string> Cycles(const Table& t) {
  std::vector<std::string> out;
  std::map<std::string, int> state;  // 0 new, 1 on stack, 2 done
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    state[n] = 1;
    auto it = t.find(n);
    if (it != t.end()) {
      for (const std::string& d : it->second) {
        if (state[d] == 1) out.push_back(absl::StrCat(n, " -> ", d));
        if (state[d] == 0) visit(d);
      }
    }
    state[n] = 2;
  };
  for (const auto& [n, _] : t) {
    if (state[n] == 0) visit(n);
  }
  return out;
}

// Every include of another layer that `table` does not allow, as "file:line: part -> layer".
// The layer an include names, "" for none: the path as the compiler finds it (a quoted include
// relative to the including file when that file exists, e.g. "../bpf/map.h"; else as written),
// normalized ("libsarena//bpf/x.h", "libsarena/live/../bpf/x.h" are libsarena/bpf/), then
// "libsarena/<layer>/..." is <layer> and "bpf/..." (libbpf, the BPF tree's headers) is bpf.
std::string LayerOf(const fs::path& root, const fs::path& file, char delim,
                    const std::string& target) {
  fs::path p = fs::path(target).lexically_normal();
  if (delim == '"') {
    std::error_code ec;
    const fs::path beside = (file.parent_path() / target).lexically_normal();
    if (fs::exists(beside, ec)) p = beside.lexically_relative(root);
  }
  const std::vector<std::string> parts = absl::StrSplit(p.generic_string(), '/');
  if (parts.size() >= 3 && parts[0] == "libsarena") return parts[1];
  if (parts.size() >= 2 && parts[0] == "bpf") return "bpf";
  return "";
}

// Every include of another layer that `table` does not allow, as "file:line: part -> layer".
std::vector<std::string> Violations(const fs::path& root, const Table& table) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s*([<"])([^>"]+)[>"])re");
  static const std::set<std::string> kSources = {".h",   ".hh", ".hpp", ".inc", ".ipp",
                                                 ".c",   ".cc", ".cpp", ".cxx"};
  std::vector<std::string> out;
  auto check_dir = [&](const fs::path& dir, const std::string& part, const std::string& own) {
    if (!fs::exists(dir)) return;
    auto allowed = table.find(part);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file() || !kSources.count(e.path().extension().string())) continue;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, kInclude)) continue;
        const std::string layer = LayerOf(root, e.path(), m.str(1)[0], m.str(2));
        if (layer.empty() || layer == own) continue;
        if (allowed == table.end() || !allowed->second.count(layer)) {
          out.push_back(absl::StrCat(fs::relative(e.path(), root).string(), ":", n, ": ", part,
                                     " -> ", layer,
                                     allowed == table.end() ? " (part not in cmake/layers.txt)"
                                                            : ""));
        }
      }
    }
  };
  for (const auto& e : fs::directory_iterator(root / "libsarena")) {
    if (e.is_directory()) {
      const std::string layer = e.path().filename().string();
      check_dir(e.path(), layer, layer);
    }
  }
  if (fs::exists(root / "tools")) {
    for (const auto& e : fs::directory_iterator(root / "tools")) {
      if (e.is_directory()) check_dir(e.path(), "tools/" + e.path().filename().string(), "");
    }
  }
  check_dir(root / "examples", "examples", "");
  check_dir(root / "bench", "bench", "");
  return out;
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Layering, EveryIncludeIsAllowedByTheLayerTable) {
  const fs::path root = sarena::testing::SourceDir();
  const Table table = ParseTable(Read(root / "cmake/layers.txt"));
  ASSERT_GE(table.size(), 10u) << "cmake/layers.txt not read";
  EXPECT_THAT(Violations(root, table), ::testing::IsEmpty());
}

TEST(Layering, TheTableHasNoCycleAndNamesEveryLayer) {
  const fs::path root = sarena::testing::SourceDir();
  const Table table = ParseTable(Read(root / "cmake/layers.txt"));
  EXPECT_THAT(Cycles(table), ::testing::IsEmpty());
  for (const auto& e : fs::directory_iterator(root / "libsarena")) {
    if (e.is_directory()) {
      EXPECT_TRUE(table.count(e.path().filename().string())) << e.path();
    }
  }
  // Nothing above datapath/ uses the generic BPF layer directly: the sarena maps and programs,
  // and the kernel drop tracer of live/, are datapath/'s (bench measures the bpf/ wrappers
  // themselves).
  for (const auto& [part, deps] : table) {
    if (deps.count("bpf")) {
      EXPECT_THAT(part, ::testing::AnyOf("datapath", "bench")) << part;
    }
  }
  EXPECT_FALSE(table.at("model").count("diag"));
  // The offline walk never reads the kernel: diag/ and collect/ never include live/.
  EXPECT_FALSE(table.at("diag").count("live"));
  EXPECT_FALSE(table.at("collect").count("live"));
}

// The checker itself can fail: a tree with an upward include is reported, file and line named.
TEST(Layering, AnUpwardIncludeIsReported) {
  sarena::testing::TempDir dir("sarena-layers-");
  const fs::path root = dir.path();
  fs::create_directories(root / "libsarena/diag");
  dir.Write("libsarena/model/x.h",
            "#include \"libsarena/base/log.h\"\n#include \"libsarena/diag/walk.h\"\n");
  // libbpf and a skeleton are the bpf layer's; the shared ABI header is not.
  dir.Write("libsarena/model/y.cc",
            "#include \"sarena/abi.h\"\n#include <bpf/libbpf.h>\n#include \"bpf/x.skel.h\"\n");
  // Spellings that compile as well: angle brackets, a path relative to the file, a path with
  // "//" or "..", a header of another extension; an own-layer include relative to the file is
  // no violation.
  dir.Write("libsarena/diag/walk.h", "");
  dir.Write("libsarena/model/own.h", "");
  dir.Write("libsarena/model/z.hpp",
            "#include <libsarena/diag/walk.h>\n#include \"../diag/walk.h\"\n"
            "#include \"libsarena//diag/walk.h\"\n#include \"libsarena/model/../diag/walk.h\"\n"
            "#include \"own.h\"\n");
  const Table table = ParseTable("base:\nbpf: base\nmodel: base\ndiag: base model\n");
  std::vector<std::string> v = Violations(root, table);
  EXPECT_THAT(v, ::testing::UnorderedElementsAre("libsarena/model/x.h:2: model -> diag",
                                                 "libsarena/model/y.cc:2: model -> bpf",
                                                 "libsarena/model/y.cc:3: model -> bpf",
                                                 "libsarena/model/z.hpp:1: model -> diag",
                                                 "libsarena/model/z.hpp:2: model -> diag",
                                                 "libsarena/model/z.hpp:3: model -> diag",
                                                 "libsarena/model/z.hpp:4: model -> diag"));
  EXPECT_THAT(Cycles(ParseTable("a: b\nb: c\nc: a\n")), ::testing::SizeIs(1));
}

}  // namespace
