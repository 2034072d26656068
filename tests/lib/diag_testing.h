// Helpers of the diag unit tests: snapshot fixtures under tests/data/cases/, scratch copies to
// mutate one thing at a time, running a trace through the library or the real binary, and
// looking up hops and suspicions in the report.
#ifndef SARENA_TESTS_LIB_DIAG_TESTING_H_
#define SARENA_TESTS_LIB_DIAG_TESTING_H_

#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "libsarena/diag/codes.h"
#include "libsarena/diag/plugin.h"
#include "libsarena/diag/query.h"
#include "libsarena/diag/report.h"
#include "libsarena/diag/walk.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/test_util.h"

namespace sarena::diag::testing {

inline std::string CaseDir(absl::string_view name) {
  return absl::StrCat(sarena::testing::SourceDir(), "/tests/data/cases/", name);
}

inline std::string DiagBinary() { return absl::StrCat(sarena::testing::BinaryDir(), "/tools/sarena-diag"); }

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteAll(const std::string& path, absl::string_view text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

/// The string value of `key` in `s` ("" when absent or not a string).
inline std::string Str(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

/// A copy of a fixture in a fresh temporary directory, removed on destruction.
class Scratch {
 public:
  explicit Scratch(absl::string_view fixture) {
    auto r = sarena::testing::Run(
        absl::StrCat("cp -a '", CaseDir(fixture), "/.' '", tmp_.path(), "/'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }

  const std::string& dir() const { return tmp_.path(); }
  std::string Path(absl::string_view rel) const { return tmp_.Path(rel); }

  /// Replaces every occurrence of `from` (which must occur) in `rel`.
  void Replace(absl::string_view rel, absl::string_view from, absl::string_view to) {
    std::string text = ReadAll(Path(rel));
    ASSERT_NE(text.find(std::string(from)), std::string::npos) << "'" << from << "' not in " << rel;
    WriteAll(Path(rel), absl::StrReplaceAll(text, {{from, to}}));
  }
  /// Sets `key = value` in a sysctl.txt (replacing the line, or appending it).
  void SetSysctl(absl::string_view rel, absl::string_view key, absl::string_view value) {
    std::string text = ReadAll(Path(rel));
    std::string out;
    bool found = false;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(line, absl::StrCat(key, " = "))) {
        absl::StrAppend(&out, key, " = ", value, "\n");
        found = true;
      } else {
        absl::StrAppend(&out, line, "\n");
      }
    }
    if (!found) absl::StrAppend(&out, key, " = ", value, "\n");
    WriteAll(Path(rel), out);
  }
  /// Parses `rel` as JSON, lets `edit` change it, writes it back.
  void EditJson(absl::string_view rel, const std::function<void(google::protobuf::Value*)>& edit) {
    google::protobuf::Value v;
    auto st = google::protobuf::util::JsonStringToMessage(ReadAll(Path(rel)), &v);
    ASSERT_TRUE(st.ok()) << rel << ": " << st.ToString();
    edit(&v);
    std::string out;
    google::protobuf::util::JsonPrintOptions o;
    o.add_whitespace = true;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(v, &out, o).ok());
    WriteAll(Path(rel), out);
  }
  /// Removes the entries of the JSON list in `rel` for which `match` is true; returns how many.
  int RemoveFromList(absl::string_view rel,
                     const std::function<bool(const google::protobuf::Struct&)>& match) {
    int removed = 0;
    EditJson(rel, [&](google::protobuf::Value* v) {
      google::protobuf::ListValue* list = nullptr;
      if (v->has_struct_value()) {
        auto& f = *v->mutable_struct_value()->mutable_fields();
        for (const char* key : {"items", "endpoints", "programs"}) {
          if (f.count(key)) list = f[key].mutable_list_value();
        }
      } else {
        list = v->mutable_list_value();
      }
      ASSERT_NE(list, nullptr) << rel << ": no list";
      google::protobuf::ListValue kept;
      for (const auto& e : list->values()) {
        if (e.has_struct_value() && match(e.struct_value())) {
          ++removed;
        } else {
          *kept.add_values() = e;
        }
      }
      *list = kept;
    });
    return removed;
  }
  /// Lets `edit` change the entry of `ifname` (which must be there) in the ip-link.json `rel`.
  void EditLink(absl::string_view rel, const std::string& ifname,
                const std::function<void(google::protobuf::Struct*)>& edit) {
    bool found = false;
    EditJson(rel, [&](google::protobuf::Value* v) {
      for (auto& l : *v->mutable_list_value()->mutable_values()) {
        if (Str(l.struct_value(), "ifname") != ifname) continue;
        edit(l.mutable_struct_value());
        found = true;
      }
    });
    ASSERT_TRUE(found) << ifname << " not in " << rel;
  }
  /// Sets the MTU of `ifname` in the ip-link.json `rel`.
  void SetMtu(absl::string_view rel, const std::string& ifname, int mtu) {
    EditLink(rel, ifname, [&](google::protobuf::Struct* l) {
      (*l->mutable_fields())["mtu"].set_number_value(mtu);
    });
  }
  /// Removes the file or directory (with all it holds) `rel`.
  void Remove(absl::string_view rel) { std::filesystem::remove_all(Path(rel)); }
  void Write(absl::string_view rel, absl::string_view text) { WriteAll(Path(rel), text); }

 private:
  sarena::testing::TempDir tmp_{"sarena-diag-test-"};
};

struct Traced {
  absl::Status status;
  sarena::diag::v1::Report report;
  std::string text;  // the text report, for failure messages
  std::string plugin;
};

/// Fails the test unless the trace ran (TraceLib's status), naming the error.
#define ASSERT_TRACED(t) ASSERT_TRUE((t).status.ok()) << (t).status

/// Runs a trace through the library, as sarena-diag does.
inline Traced TraceLib(const std::string& dir, absl::string_view src, absl::string_view dst,
                       absl::string_view cni = "auto", uint8_t ttl = 64, uint32_t size = 0) {
  Traced t;
  auto snap = sarena::model::Snapshot::Open(dir);
  if (!snap.ok()) {
    t.status = snap.status();
    return t;
  }
  auto q = ParseQuery(src, dst);
  if (!q.ok()) {
    t.status = q.status();
    return t;
  }
  q->ttl = ttl;
  q->size = size;
  std::vector<std::string> nodes;
  auto plugin = SelectPlugin(cni, **snap, nodes);
  if (!plugin.ok()) {
    t.status = plugin.status();
    return t;
  }
  auto r = Trace(**snap, *q, **plugin);
  if (!r.ok()) {
    t.status = r.status();
    return t;
  }
  // Every code the walk reports is in the one list, at a level the list allows.
  for (const Suspicion& s : r->graph.Suspicions()) {
    EXPECT_TRUE(CodeAllowsLevel(s.code, s.level))
        << "suspicion " << ToString(s.level) << " " << s.code << " (" << s.message
        << ") is not allowed by libsarena/diag/codes.h";
  }
  t.plugin = r->plugin;
  t.report = BuildReport(r->graph);
  t.text = ToText(r->graph);
  return t;
}

inline const sarena::diag::v1::Hop* FindHop(const sarena::diag::v1::Report& r,
                                            absl::string_view id) {
  for (const auto& h : r.hops()) {
    if (h.id() == id) return &h;
  }
  return nullptr;
}

/// The first suspicion with `code` (and `level`, when given).
inline const sarena::diag::v1::Suspicion* FindSuspicion(const sarena::diag::v1::Report& r,
                                                        absl::string_view code,
                                                        absl::string_view level = "") {
  for (const auto& s : r.suspicions()) {
    if (s.code() == code && (level.empty() || s.level() == level)) return &s;
  }
  return nullptr;
}

/// The hop a suspicion names.
inline const sarena::diag::v1::Hop* HopOf(const sarena::diag::v1::Report& r,
                                          const sarena::diag::v1::Suspicion* s) {
  return s ? FindHop(r, s->hop()) : nullptr;
}

/// True when no suspicion has a level other than INFO.
inline bool OnlyInfo(const sarena::diag::v1::Report& r) {
  for (const auto& s : r.suspicions()) {
    if (s.level() != "INFO") return false;
  }
  return true;
}

}  // namespace sarena::diag::testing

#endif  // SARENA_TESTS_LIB_DIAG_TESTING_H_
