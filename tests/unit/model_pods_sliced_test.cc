// Cluster::Load parses a large pods.json in parallel slices (ClusterLoadOptions): the pods, and
// the error of a malformed file, must be exactly those of parsing the file in one piece — for
// kubectl's indented layout (split), compact JSON (not split), items whose nested arrays look
// like item boundaries at a deeper indentation, and members the slices skip (volumes,
// containerStatuses), whose syntax errors must still be found.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "libsarena/model/k8s.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

// One pod as kubectl prints it inside a List (item at 8 spaces), with nested arrays of objects
// ("},\n<deeper indent>{") that must not be taken for item boundaries.
std::string PrettyPod(int i) {
  std::string ns = absl::StrCat("ns-", i % 7);
  std::string ip = absl::StrCat("10.1.", i / 250, ".", i % 250 + 1);
  return absl::StrCat(R"(        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "annotations": {
                    "note": "a \"quoted\" },\n        { value"
                },
                "labels": {
                    "app": "web-)", i % 13, R"("
                },
                "name": "pod-)", i, R"(",
                "namespace": ")", ns, R"(",
                "uid": "u-)", i, R"("
            },
            "spec": {
                "containers": [
                    {
                        "name": "a",
                        "ports": [
                            {
                                "containerPort": 8080,
                                "name": "http",
                                "protocol": "TCP"
                            },
                            {
                                "containerPort": )", 9000 + i % 100, R"(,
                                "name": "metrics",
                                "protocol": "UDP"
                            }
                        ]
                    },
                    {
                        "name": "b"
                    }
                ],
                "nodeName": "node-)", i % 11, R"(",
                "volumes": [
                    {
                        "name": "token",
                        "projected": {
                            "defaultMode": 420,
                            "sources": [
                                {
                                    "serviceAccountToken": {
                                        "expirationSeconds": 3607,
                                        "path": "to\u006ben"
                                    }
                                }
                            ]
                        }
                    }
                ]
            },
            "status": {
                "conditions": [
                    {
                        "status": "True",
                        "type": "Ready"
                    }
                ],
                "containerStatuses": [
                    {
                        "name": "a",
                        "ready": true,
                        "restartCount": )", i % 3, R"(,
                        "state": {
                            "running": {}
                        }
                    }
                ],
                "phase": "Running",
                "podIP": ")", ip, R"(",
                "podIPs": [
                    {
                        "ip": ")", ip, R"("
                    }
                ]
            }
        })");
}

std::string PrettyList(int n) {
  std::string out = "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n";
  for (int i = 0; i < n; ++i) {
    if (i) out += ",\n";
    out += PrettyPod(i);
  }
  out += "\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n";
  return out;
}

class SlicedPods : public ::testing::Test {
 protected:
  void Write(const std::string& text) { dir_.Write("pods.json", text); }
  // Loaded in slices of `slice` bytes, and in one piece.
  std::pair<absl::StatusOr<Cluster>, absl::StatusOr<Cluster>> LoadBoth(size_t slice) {
    ClusterLoadOptions sliced{.parallel_min_bytes = 1, .slice_bytes = slice};
    ClusterLoadOptions whole{.parallel_min_bytes = SIZE_MAX};
    return {Cluster::Load(dir_.path(), sliced), Cluster::Load(dir_.path(), whole)};
  }

  sarena::testing::TempDir dir_{"sarena-sliced-"};
};

void ExpectSamePods(const Cluster& a, const Cluster& b) {
  ASSERT_EQ(a.pods().size(), b.pods().size());
  for (size_t i = 0; i < a.pods().size(); ++i) {
    const Pod& x = a.pods()[i];
    const Pod& y = b.pods()[i];
    EXPECT_EQ(x.Key(), y.Key());
    EXPECT_EQ(x.uid, y.uid);
    EXPECT_EQ(x.node_name, y.node_name);
    EXPECT_EQ(x.pod_ip, y.pod_ip);
    EXPECT_EQ(x.pod_ips, y.pod_ips);
    EXPECT_EQ(x.labels, y.labels);
    EXPECT_EQ(x.annotations, y.annotations);
    EXPECT_EQ(x.ready, y.ready);
    EXPECT_EQ(x.phase, y.phase);
    ASSERT_EQ(x.ports.size(), y.ports.size());
    for (size_t k = 0; k < x.ports.size(); ++k) {
      EXPECT_EQ(x.ports[k].name, y.ports[k].name);
      EXPECT_EQ(x.ports[k].container_port, y.ports[k].container_port);
      EXPECT_EQ(x.ports[k].proto, y.ports[k].proto);
    }
  }
  EXPECT_EQ(a.files().loaded, b.files().loaded);
}

TEST_F(SlicedPods, IndentedListSplitsAndMatchesWholeParse) {
  Write(PrettyList(3000));
  for (size_t slice : {size_t{4096}, size_t{65536}, size_t{1} << 20}) {
    auto [sliced, whole] = LoadBoth(slice);
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    ASSERT_TRUE(whole.ok()) << whole.status();
    ASSERT_EQ(whole->pods().size(), 3000u);
    ExpectSamePods(*sliced, *whole);
    const Pod* p = sliced->FindPod("ns-3", "pod-2999");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->pod_ip->to_string(), "10.1.11.250");
    EXPECT_EQ(p->annotations.front().second, "a \"quoted\" },\n        { value");
  }
}

TEST_F(SlicedPods, CompactJsonIsParsedWhole) {
  std::string text = PrettyList(200);
  text = absl::StrReplaceAll(text, {{"\n", ""}, {"    ", ""}});
  Write(text);
  auto [sliced, whole] = LoadBoth(4096);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->pods().size(), 200u);
  ExpectSamePods(*sliced, *whole);
}

TEST_F(SlicedPods, EmptyAndSingleItemLists) {
  Write("{\n    \"apiVersion\": \"v1\",\n    \"items\": [],\n    \"kind\": \"List\"\n}\n");
  auto [a, b] = LoadBoth(16);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->pods().empty());
  Write(PrettyList(1));
  auto [c, d] = LoadBoth(16);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectSamePods(*c, *d);
}

TEST_F(SlicedPods, ErrorsAreThoseOfTheWholeParse) {
  std::string good = PrettyList(2000);
  // A bad field in the middle, a syntax error near the end, a broken trailer.
  std::vector<std::string> bad = {
      absl::StrReplaceAll(good, {{"\"podIP\": \"10.1.4.1\"", "\"podIP\": \"10.1.4.x\""}}),
      good.substr(0, good.size() - 200) + "}}}",
      // A syntax error inside a member the slices skip (volumes) is still an error.
      absl::StrReplaceAll(good, {{"\"expirationSeconds\": 3607,\n", "\"expirationSeconds\": 3607,,\n"}}),
      absl::StrReplaceAll(good, {{"\"kind\": \"List\",", "\"kind\": \"List\""}}),
  };
  for (const std::string& text : bad) {
    Write(text);
    auto [sliced, whole] = LoadBoth(8192);
    ASSERT_FALSE(whole.ok());
    ASSERT_FALSE(sliced.ok());
    EXPECT_EQ(sliced.status(), whole.status());
  }
}

}  // namespace
}  // namespace sarena::model
