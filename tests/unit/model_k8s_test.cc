// Kubernetes objects from kubectl -o json lists (tests/data/model/cluster), EndpointSlices and
// legacy Endpoints, Calico IPPools in both API groups and the legacy ipip form, lookups.
#include "libsarena/base/file.h"
#include "libsarena/model/k8s.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/model/ippool.h"
#include "libsarena/model/packet.h"
#include "libsarena/model/snapshot.h"
#include "tests/lib/status_matchers.h"
#include "tests/lib/test_util.h"

namespace sarena::model {
namespace {

using ::sarena::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

net::Ipv4 Ip(const char* s) { return net::Ipv4::from_string(s); }
net::Ipv4Prefix Pfx(const char* s) { return *net::ParseIpv4Prefix(s); }

std::string Fixture(const std::string& name) {
  auto text = ReadFileToString(sarena::testing::SourceDir() + "/tests/data/model/cluster/" + name);
  EXPECT_OK(text);
  return text.ok() ? *text : std::string();
}

Cluster Load(bool slices) {
  Cluster c;
  EXPECT_OK(c.ParsePods(Fixture("pods.json")));
  EXPECT_OK(c.ParseNodes(Fixture("nodes.json")));
  EXPECT_OK(c.ParseServices(Fixture("services.json")));
  if (slices) {
    EXPECT_OK(c.ParseEndpointSlices(Fixture("endpointslices.json")));
  } else {
    EXPECT_OK(c.ParseEndpoints(Fixture("endpoints.json")));
  }
  EXPECT_OK(c.ParseIpPools(Fixture("ippools-v3.json")));
  c.Finalize();
  return c;
}

TEST(K8sPods, FieldsAndLookups) {
  Cluster c = Load(true);
  ASSERT_EQ(c.pods().size(), 6u);
  const Pod* client = c.FindPod("default", "client");
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->node_name, "node-a");
  EXPECT_EQ(client->pod_ip, Ip("10.65.1.3"));
  EXPECT_EQ(client->pod_ips.size(), 1u);  // IPv6 skipped
  EXPECT_EQ(client->host_ip, Ip("192.168.10.10"));
  EXPECT_TRUE(client->ready);
  ASSERT_NE(FindLabel(client->labels, "app"), nullptr);
  EXPECT_EQ(*FindLabel(client->labels, "app"), "client");
  EXPECT_NE(FindLabel(client->annotations, "cni.projectcalico.org/podIP"), nullptr);
  const Pod* web = c.FindPod("shop", "web-7c9f-abcde");
  ASSERT_NE(web, nullptr);
  EXPECT_FALSE(web->ready);
  ASSERT_EQ(web->ports.size(), 2u);
  EXPECT_EQ(web->FindPort("http", kProtoTcp)->container_port, 8080);
  EXPECT_EQ(web->FindPort("metrics", kProtoTcp)->proto, kProtoTcp);  // protocol defaults to TCP
  EXPECT_EQ(c.FindPodByIp(Ip("10.65.2.8")), web);
  // hostNetwork pods never own the node IP.
  EXPECT_EQ(c.FindPodByIp(Ip("192.168.10.10")), nullptr);
  // A finished pod that kept its IP loses to the running one.
  EXPECT_EQ(c.FindPodByIp(Ip("10.65.2.9"))->name, "new-job");
  EXPECT_EQ(c.PodsOnNode("node-b").size(), 3u);
  EXPECT_FALSE(c.FindPod("default", "pending")->pod_ip.has_value());
  EXPECT_EQ(c.FindPod("default", "nope"), nullptr);
}

TEST(K8sPods, ListKindWithoutItemsNamesTheShape) {
  // A PodList with no "items" (kubectl prints "items": [] for an empty list) is not one pod.
  Cluster c;
  absl::Status st = c.ParsePods(
      R"({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "42"}})",
      "cluster/pods.json");
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("parse cluster/pods.json: items: missing: a PodList without \"items\""));
  EXPECT_THAT(std::string(st.message()), Not(HasSubstr("metadata.name")));
  // "items": null (kubectl's empty list) and one bare object still load.
  Cluster empty;
  EXPECT_OK(empty.ParsePods(R"({"kind": "PodList", "items": null})"));
  Cluster one;
  EXPECT_OK(one.ParsePods(R"({"kind": "Pod", "metadata": {"name": "p", "namespace": "d"}})"));
}

TEST(K8sNodes, AddressesCidrsCalicoAnnotations) {
  Cluster c = Load(true);
  const Node* a = c.FindNode("node-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->internal_ips, std::vector<net::Ipv4>{Ip("192.168.10.10")});
  EXPECT_EQ(a->external_ips, std::vector<net::Ipv4>{Ip("198.51.100.10")});
  EXPECT_EQ(a->hostname, "node-a");
  ASSERT_EQ(a->pod_cidrs.size(), 1u);
  EXPECT_EQ(a->pod_cidrs[0], Pfx("10.244.1.0/24"));
  ASSERT_TRUE(a->calico_ipv4_address.has_value());
  EXPECT_EQ(a->calico_ipv4_address->address(), Ip("192.168.10.10"));
  EXPECT_EQ(a->calico_ipv4_address->prefix_length(), 24u);
  EXPECT_EQ(a->calico_ipip_tunnel_addr, Ip("10.65.1.0"));
  EXPECT_EQ(a->calico_vxlan_tunnel_addr, Ip("10.65.1.1"));
  EXPECT_TRUE(a->ready);
  const Node* cnode = c.FindNode("node-c");
  EXPECT_FALSE(cnode->calico_ipv4_address.has_value());  // empty annotation = autodetection failed
  EXPECT_TRUE(cnode->unschedulable);
  EXPECT_FALSE(cnode->ready);
  EXPECT_EQ(c.FindNodeByIp(Ip("198.51.100.10")), a);
  EXPECT_EQ(c.FindNodeByIp(Ip("10.65.1.1")), a);  // tunnel address
  EXPECT_EQ(c.FindNodeByPodCidr(Ip("10.244.3.77")), cnode);
  EXPECT_EQ(c.FindNodeByPodCidr(Ip("10.244.9.1")), nullptr);
  EXPECT_EQ(a->PrimaryIp(), Ip("192.168.10.10"));
}

TEST(K8sServices, TypesPortsPoliciesRanges) {
  Cluster c = Load(true);
  const Service* web = c.FindService("shop", "web");
  ASSERT_NE(web, nullptr);
  EXPECT_EQ(web->type, ServiceType::kClusterIP);
  ASSERT_EQ(web->ports.size(), 2u);
  EXPECT_EQ(web->ports[0].target_port.name, "http");
  EXPECT_EQ(web->ports[1].target_port.number, 9090);
  EXPECT_EQ(c.FindServiceByIp(Ip("10.96.0.100")), web);
  const Service* lb = c.FindService("shop", "lb");
  EXPECT_EQ(lb->type, ServiceType::kLoadBalancer);
  EXPECT_TRUE(lb->external_traffic_policy_local);
  EXPECT_FALSE(lb->internal_traffic_policy_local);
  ASSERT_EQ(lb->load_balancer_source_ranges.size(), 1u);  // spec wins over the annotation; v6 skipped
  EXPECT_EQ(lb->load_balancer_source_ranges[0], Pfx("192.0.2.0/24"));
  EXPECT_EQ(lb->load_balancer_ips, std::vector<net::Ipv4>{Ip("203.0.113.11")});
  EXPECT_EQ(lb->health_check_node_port, 32000);
  EXPECT_EQ(c.FindServiceByIp(Ip("203.0.113.11")), lb);
  EXPECT_EQ(c.FindServiceByIp(Ip("203.0.113.50")), lb);  // externalIPs
  EXPECT_EQ(c.FindServiceByNodePort(30443, kProtoTcp), lb);
  EXPECT_EQ(c.FindServiceByNodePort(30053, kProtoUdp), lb);
  EXPECT_EQ(c.FindServiceByNodePort(30053, kProtoTcp), nullptr);
  EXPECT_EQ(lb->FindNodePort(30443, kProtoTcp)->target_port.number, 8443);
  EXPECT_TRUE(c.FindService("shop", "headless")->headless);
  EXPECT_TRUE(c.FindService("shop", "headless")->cluster_ips.empty());
  const Service* np = c.FindService("default", "np");
  EXPECT_EQ(np->ports[0].target_port.number, 8080);  // IntOrString "8080"
  EXPECT_EQ(np->ports[0].proto, kProtoTcp);
  EXPECT_EQ(np->load_balancer_source_ranges.size(), 2u);  // from the legacy annotation
}

TEST(K8sServices, SelectorMatchesEveryLabel) {
  Labels pod = {{"app", "web"}, {"tier", "front"}};
  EXPECT_TRUE(SelectorMatches({{"app", "web"}}, pod));
  EXPECT_TRUE(SelectorMatches({{"app", "web"}, {"tier", "front"}}, pod));
  EXPECT_FALSE(SelectorMatches({{"app", "web"}, {"tier", "back"}}, pod));  // every key ANDed
  EXPECT_FALSE(SelectorMatches({{"zone", "a"}}, pod));                     // a missing key
  EXPECT_TRUE(SelectorMatches({}, pod));  // an empty equality selector has no requirement
}

TEST(K8sServices, CountSelectedPodsInTheServicesNamespace) {
  Cluster c = Load(true);
  // shop/web selects app=web: shop/web-7c9f-abcde (not Ready).
  Cluster::SelectedPods web = c.CountSelectedPods(*c.FindService("shop", "web"));
  EXPECT_EQ(web.pods, 1u);
  EXPECT_EQ(web.ready, 0u);
  // app=db: nobody.
  Cluster::SelectedPods db = c.CountSelectedPods(*c.FindService("shop", "headless"));
  EXPECT_EQ(db.pods, 0u);
  // No selector: manual endpoints, nothing counted.
  Cluster::SelectedPods np = c.CountSelectedPods(*c.FindService("default", "np"));
  EXPECT_EQ(np.pods, 0u);
  // The namespace matters: a Service in another namespace with the same selector sees nobody.
  Service other = *c.FindService("shop", "web");
  other.namespace_ = "default";
  EXPECT_EQ(c.CountSelectedPods(other).pods, 0u);
  // A Ready match counts in both.
  Service client = other;
  client.selector = {{"app", "client"}};
  Cluster::SelectedPods cl = c.CountSelectedPods(client);
  EXPECT_EQ(cl.pods, 1u);
  EXPECT_EQ(cl.ready, 1u);
}

TEST(K8sEndpoints, SlicesGroupedAndResolvedPerPortName) {
  Cluster c = Load(true);
  EXPECT_TRUE(c.files().endpoint_slices);
  const Service* web = c.FindService("shop", "web");
  auto http = c.BackendsFor(*web, web->ports[0]);
  ASSERT_EQ(http.size(), 3u);  // two slices; the IPv6 slice skipped
  EXPECT_EQ(http[0].ip, Ip("10.65.2.8"));
  EXPECT_EQ(http[0].port, 8080);
  EXPECT_FALSE(http[0].ready);
  EXPECT_TRUE(http[0].serving);
  EXPECT_TRUE(http[0].terminating);
  EXPECT_EQ(http[0].pod_name, "web-7c9f-abcde");
  EXPECT_EQ(http[1].ip, Ip("10.65.1.20"));
  EXPECT_TRUE(http[1].ready);
  EXPECT_EQ(http[2].port, 8081);  // port number comes from its own slice
  EXPECT_TRUE(http[2].ready);     // unset conditions = ready
  auto metrics = c.BackendsFor(*web, web->ports[1]);
  EXPECT_EQ(metrics.size(), 2u);  // the second slice has no "metrics" port
  const Service* lb = c.FindService("shop", "lb");
  EXPECT_TRUE(c.BackendsFor(*lb, lb->ports[0]).empty());
  ASSERT_NE(c.FindEndpoints("shop", "lb"), nullptr);
}

TEST(K8sEndpoints, LegacyEndpoints) {
  Cluster c = Load(false);
  EXPECT_FALSE(c.files().endpoint_slices);
  const Service* web = c.FindService("shop", "web");
  auto http = c.BackendsFor(*web, web->ports[0]);
  ASSERT_EQ(http.size(), 2u);
  EXPECT_TRUE(http[0].ready);
  EXPECT_EQ(http[0].node_name, "node-a");
  EXPECT_EQ(http[0].pod_name, "web-1");
  EXPECT_FALSE(http[1].ready);  // notReadyAddresses
  const Service* np = c.FindService("default", "np");
  auto b = c.BackendsFor(*np, np->ports[0]);  // unnamed port matches the subset's single port
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].port, 8080);
  const Service* lb = c.FindService("shop", "lb");
  EXPECT_TRUE(c.BackendsFor(*lb, lb->ports[0]).empty());
}

TEST(K8sParse, MalformedNamesFileAndField) {
  Cluster c;
  absl::Status st = c.ParsePods(
      R"({"items":[{"metadata":{"name":"a","namespace":"x"},"status":{"podIP":"10.0.0.1"}},
                   {"metadata":{"name":"b"},"status":{"podIP":"10.0.0.300"}}]})",
      "cluster/pods.json");
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(st.message()), HasSubstr("cluster/pods.json: items[1].status.podIP: invalid IPv4 address '10.0.0.300'"));
  st = c.ParseServices(R"({"items":[{"metadata":{"name":"s"},"spec":{"ports":[{"port":"eighty"}]}}]})",
                       "cluster/services.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("items[0].spec.ports[0].port"));
  st = c.ParseNodes("{\"items\": [\n  {\"metadata\": {\"name\": \"n\"}\n  ]}", "cluster/nodes.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("cluster/nodes.json: JSON syntax error at byte 43 (line 3, column 3)"));
  st = c.ParsePods(R"({"items":[{"spec":{}}]})", "cluster/pods.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("items[0].metadata: missing"));
  st = c.ParseServices(R"({"items":[{"metadata":{"name":"s"},"spec":{"type":"Weird"}}]})", "s.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("items[0].spec.type: unknown Service type 'Weird'"));
}

TEST(K8sParse, KubectlStatusIsAnErrorNotAnEmptyList) {
  // What `kubectl get pods -A -o json > pods.json` leaves when the API refuses (it has a
  // "metadata" like a single object, and no "items").
  Cluster c;
  absl::Status st = c.ParsePods(
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
          "message":"pods is forbidden: User \"dev\" cannot list resource \"pods\"",
          "reason":"Forbidden","details":{"kind":"pods"},"code":403})",
      "cluster/pods.json");
  ASSERT_THAT(st, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(std::string(st.message()),
            "parse cluster/pods.json: (root): a kubectl Status object, not a list: status "
            "'Failure', message 'pods is forbidden: User \"dev\" cannot list resource \"pods\"'");
  st = c.ParseNodes(R"({"a":1})", "cluster/nodes.json");
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("parse cluster/nodes.json: (root): expected a JSON array or a list object "
                        "with \"items\", got an object with keys \"a\""));
  EXPECT_OK(c.ParseServices(R"({"kind":"List","items":null})", "s.json"));
}

TEST(K8sPods, LivePodsSharingAnAddress) {
  Cluster c;
  ASSERT_TRUE(c.ParsePods(R"({"items":[
      {"metadata":{"name":"a","namespace":"x"},"spec":{"nodeName":"n1"},
       "status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"}]}},
      {"metadata":{"name":"old","namespace":"x"},"spec":{"nodeName":"n1"},
       "status":{"phase":"Succeeded","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"}]}},
      {"metadata":{"name":"b","namespace":"y"},"spec":{"nodeName":"n2"},
       "status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"}]}},
      {"metadata":{"name":"c","namespace":"x"},"spec":{"nodeName":"n2"},
       "status":{"phase":"Running","podIP":"10.0.0.2","podIPs":[{"ip":"10.0.0.2"}]}},
      {"metadata":{"name":"d","namespace":"x"},"spec":{"nodeName":"n2"},
       "status":{"phase":"Failed","podIP":"10.0.0.2","podIPs":[{"ip":"10.0.0.2"}]}}]})",
                          "cluster/pods.json")
                  .ok());
  c.Finalize();
  std::vector<const Pod*> shared = c.LivePodsSharingIp(Ip("10.0.0.1"));
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0]->Key(), "x/a");
  EXPECT_EQ(shared[1]->Key(), "y/b");
  EXPECT_TRUE(c.LivePodsSharingIp(Ip("10.0.0.2")).empty());  // one live owner
  EXPECT_TRUE(c.LivePodsSharingIp(Ip("10.0.0.9")).empty());
}

TEST(K8sParse, BareArrayAndSingleObject) {
  Cluster c;
  ASSERT_OK(c.ParsePods(R"([{"metadata":{"name":"a"},"status":{"podIP":"10.1.1.1"}}])"));
  ASSERT_OK(c.ParsePods(R"({"kind":"Pod","metadata":{"name":"b","namespace":"n"}})"));
  c.Finalize();
  EXPECT_NE(c.FindPod("default", "a"), nullptr);  // namespace defaults to "default"
  EXPECT_NE(c.FindPod("n", "b"), nullptr);
}

TEST(IpPools, V3ListModesAndMostSpecific) {
  auto pools = ParseIpPools(Fixture("ippools-v3.json"), "cluster/ippools.json");
  ASSERT_OK(pools);
  ASSERT_EQ(pools->size(), 3u);  // IPv6 pool skipped
  const IpPool& def = (*pools)[0];
  EXPECT_EQ(def.api_version, "projectcalico.org/v3");
  EXPECT_EQ(def.ipip_mode, EncapMode::kCrossSubnet);
  EXPECT_EQ(def.vxlan_mode, EncapMode::kNever);
  EXPECT_TRUE(def.nat_outgoing);
  EXPECT_EQ(def.block_size, 26);
  EXPECT_EQ(FindIpPool(*pools, Ip("10.65.1.3"))->name, "default-ipv4-ippool");
  EXPECT_EQ(FindIpPool(*pools, Ip("10.65.200.3"))->name, "vxlan-pool");  // /17 beats /16
  EXPECT_EQ((*pools)[1].vxlan_mode, EncapMode::kAlways);
  EXPECT_EQ(FindIpPool(*pools, Ip("10.66.0.1"))->name, "old");
  EXPECT_EQ(FindIpPool(*pools, Ip("10.66.0.1"), /*include_disabled=*/false), nullptr);
  EXPECT_EQ(FindIpPool(*pools, Ip("8.8.8.8")), nullptr);
}

TEST(IpPools, CrdV1AndLegacyIpipForms) {
  auto pools = ParseIpPools(Fixture("ippools-crd-v1.json"));
  ASSERT_OK(pools);
  ASSERT_EQ(pools->size(), 5u);
  EXPECT_EQ((*pools)[0].api_version, "crd.projectcalico.org/v1");
  EXPECT_EQ((*pools)[0].ipip_mode, EncapMode::kAlways);
  EXPECT_EQ((*pools)[1].ipip_mode, EncapMode::kCrossSubnet);  // ipip: {enabled, mode: cross-subnet}
  EXPECT_TRUE((*pools)[1].nat_outgoing);                       // "nat-outgoing"
  EXPECT_EQ((*pools)[2].ipip_mode, EncapMode::kAlways);        // enabled without mode
  EXPECT_EQ((*pools)[3].ipip_mode, EncapMode::kNever);         // enabled: false
  EXPECT_EQ((*pools)[4].ipip_mode, EncapMode::kAlways);        // lowercase
  EXPECT_EQ((*pools)[4].vxlan_mode, EncapMode::kCrossSubnet);
}

TEST(IpPools, BareArraySingleObjectAndErrors) {
  auto pools = ParseIpPools(R"([{"metadata":{"name":"p"},"spec":{"cidr":"10.9.0.0/16","vxlanMode":"CrossSubnet"}}])");
  ASSERT_OK(pools);
  EXPECT_EQ((*pools)[0].vxlan_mode, EncapMode::kCrossSubnet);
  pools = ParseIpPools(R"({"kind":"IPPool","metadata":{"name":"one"},"spec":{"cidr":"10.8.0.0/16"}})");
  ASSERT_OK(pools);
  ASSERT_EQ(pools->size(), 1u);
  EXPECT_EQ((*pools)[0].ipip_mode, EncapMode::kNever);
  EXPECT_EQ((*pools)[0].node_selector, "all()");
  pools = ParseIpPools(R"({"items":[{"spec":{"cidr":"10.8.0.0/16","ipipMode":"Sometimes"}}]})",
                       "cluster/ippools.json");
  ASSERT_FALSE(pools.ok());
  EXPECT_THAT(std::string(pools.status().message()),
              HasSubstr("cluster/ippools.json: items[0].spec.ipipMode: invalid ipipMode 'Sometimes'"));
  pools = ParseIpPools(R"({"items":[{"spec":{"cidr":"10.8.0.0/33"}}]})", "p.json");
  ASSERT_FALSE(pools.ok());
  EXPECT_THAT(std::string(pools.status().message()), HasSubstr("items[0].spec.cidr"));
}

}  // namespace
}  // namespace sarena::model
