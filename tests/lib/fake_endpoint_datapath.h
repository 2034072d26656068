// An in-memory datapath::EndpointDatapath for unit tests of the daemon's endpoint life cycle
// (EndpointManager: rollback, GC, reconcile) without a kernel. It keeps "veths" (host ifname ->
// owner alias, up) and "map entries" (IP -> host ifname) and can be told to fail the next call
// of a verb with a given status.
#ifndef SARENA_TESTS_LIB_FAKE_ENDPOINT_DATAPATH_H_
#define SARENA_TESTS_LIB_FAKE_ENDPOINT_DATAPATH_H_

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "libsarena/datapath/naming.h"
#include "libsarena/datapath/node.h"

namespace sarena::testing {

class FakeEndpointDatapath final : public datapath::EndpointDatapath {
 public:
  struct Veth {
    std::string owner;  // VethOwnerAlias
    std::string netns;
  };
  // What the fake holds; tests read and edit it directly (e.g. a veth vanishing).
  struct World {
    std::map<std::string, Veth> veths;         // host ifname -> veth
    std::map<net::Ipv4, std::string> entries;  // endpoint-map entries: IP -> host ifname
    std::set<std::string> pins;                // from_container link pins by host ifname
    absl::Status fail_create, fail_restore;    // returned once by the next Create / Restore
    absl::Status fail_after_commit;  // returned once by the next Create after its commit hook
    int creates = 0, deletes = 0, restores = 0;
  };

  explicit FakeEndpointDatapath(World* world) : w_(world) {}

  absl::StatusOr<datapath::EndpointState> Create(const datapath::EndpointSpec& spec) override {
    ++w_->creates;
    if (!w_->fail_create.ok()) return std::exchange(w_->fail_create, absl::OkStatus());
    const std::string name = datapath::HostVethName(spec.container_id, spec.ifname);
    if (w_->veths.count(name)) return absl::AlreadyExistsError("veth '" + name + "' exists");
    w_->veths[name] = {datapath::VethOwnerAlias(spec.container_id, spec.ifname), spec.netns};
    w_->entries[spec.ip] = name;
    w_->pins.insert(name);
    datapath::EndpointState st;
    st.host_ifname = name;
    st.host_ifindex = 100 + static_cast<int>(w_->veths.size());
    st.pod_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(w_->veths.size())};
    st.host_mac = {0x02, 1, 0, 0, 0, static_cast<uint8_t>(w_->veths.size())};
    if (spec.commit) {  // the commit hook, then a failure after it (fail_after_commit)
      if (absl::Status c = spec.commit(st); !c.ok()) {
        w_->veths.erase(name), w_->entries.erase(spec.ip), w_->pins.erase(name);
        return c;
      }
    }
    if (!w_->fail_after_commit.ok()) {
      w_->veths.erase(name), w_->entries.erase(spec.ip), w_->pins.erase(name);
      return std::exchange(w_->fail_after_commit, absl::OkStatus());
    }
    return st;
  }
  absl::Status Delete(const std::string& host_ifname, const std::optional<net::Ipv4>& ip,
                      const std::optional<std::string>& expected_owner,
                      const std::string& /*netns*/) override {
    ++w_->deletes;
    auto v = w_->veths.find(host_ifname);
    const bool ours = v != w_->veths.end() &&
                      (!expected_owner || v->second.owner.empty() ||
                       v->second.owner == *expected_owner);
    if (ip) {
      auto e = w_->entries.find(*ip);
      if (e != w_->entries.end() && (e->second == host_ifname || !w_->veths.count(e->second))) {
        w_->entries.erase(e);
      }
    }
    if (ours) {
      w_->veths.erase(v);
      w_->pins.erase(host_ifname);
    }
    return absl::OkStatus();
  }
  absl::Status Check(const datapath::EndpointSpec& spec) override {
    const std::string name = spec.host_ifname.empty()
                                 ? datapath::HostVethName(spec.container_id, spec.ifname)
                                 : spec.host_ifname;
    if (!w_->veths.count(name)) return absl::NotFoundError("host veth '" + name + "' is missing");
    auto e = w_->entries.find(spec.ip);
    if (e == w_->entries.end() || e->second != name) {
      return absl::NotFoundError("no endpoint-map entry for " + spec.ip.to_string());
    }
    return absl::OkStatus();
  }
  absl::Status Restore(const datapath::RecordedEndpoint& e) override {
    ++w_->restores;
    if (!w_->fail_restore.ok()) return std::exchange(w_->fail_restore, absl::OkStatus());
    if (!w_->veths.count(e.host_ifname)) {
      return absl::NotFoundError("host veth '" + e.host_ifname + "' is gone");
    }
    w_->entries[e.ip] = e.host_ifname;
    w_->pins.insert(e.host_ifname);
    return absl::OkStatus();
  }
  absl::StatusOr<int> PruneOrphans(const std::set<net::Ipv4>& live_ips,
                                   const std::set<std::string>& live_host_ifnames) override {
    int removed = 0;
    for (auto it = w_->entries.begin(); it != w_->entries.end();) {
      if (live_ips.count(it->first)) { ++it; continue; }
      it = w_->entries.erase(it);
      ++removed;
    }
    for (auto it = w_->pins.begin(); it != w_->pins.end();) {
      if (live_host_ifnames.count(*it)) { ++it; continue; }
      it = w_->pins.erase(it);
      ++removed;
    }
    return removed;
  }
  absl::StatusOr<datapath::EndpointCounters> Counters(uint32_t) override {
    return datapath::EndpointCounters{};
  }
  bpf::AttachMode attach_mode() const override { return bpf::AttachMode::kTcx; }

 private:
  World* w_;
};

}  // namespace sarena::testing

#endif  // SARENA_TESTS_LIB_FAKE_ENDPOINT_DATAPATH_H_
