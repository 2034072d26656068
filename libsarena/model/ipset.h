// IP sets from `ipset save` (ipset(8)), so that iptables rules with `-m set --match-set` can be
// evaluated instead of being reported as unknown. Calico's natOutgoing rule and kube-proxy's
// ipvs mode both depend on sets (cali40masq-ipam-pools, cali40all-ipam-pools, KUBE-CLUSTER-IP).
//
// Snapshot file: nodes/<node>/ipset-save.txt (optional; `ipset save` output). Without it every
// `-m set` match stays an unknown match (NfNote kUnknownMatch).
#ifndef LIBSARENA_MODEL_IPSET_H_
#define LIBSARENA_MODEL_IPSET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libsarena/model/packet.h"

namespace sarena::model {

/// The sets of one network namespace. Immutable after Parse; Test() is const and thread-safe.
class Ipsets {
 public:
  Ipsets();
  ~Ipsets();
  Ipsets(Ipsets&&) noexcept;
  Ipsets& operator=(Ipsets&&) noexcept;

  /// Parses `ipset save` output: "create NAME TYPE [options]" and "add NAME ENTRY [options]"
  /// lines (options such as timeout/comment/nomatch after the entry; "nomatch" is honoured).
  /// Modelled types: hash:ip, hash:net, hash:ip,port, hash:net,port, hash:ip,port,ip,
  /// hash:ip,port,net, bitmap:port, list:set; sets of other types (or family inet6) are kept by
  /// name but Test() returns nullopt for them. Errors: kInvalidArgument
  /// "parse <file_name>: line N: <cause>" (add to an undeclared set, malformed entry).
  static absl::StatusOr<Ipsets> Parse(absl::string_view text,
                                      absl::string_view file_name = "ipset-save.txt");

  bool Has(absl::string_view name) const;
  /// "hash:net", ... or "" when absent.
  std::string Type(absl::string_view name) const;
  size_t size() const;

  /// The xt_set match "--match-set NAME d1[,d2[,d3]]": `src_flags[i]` is true when dimension i
  /// takes the packet's source ("src") and false for "dst". Ports match together with the
  /// packet's protocol (an entry "tcp:80" never matches UDP). hash:net entries: the most specific
  /// matching entry decides, and a "nomatch" entry means no match (ipset(8) "nomatch").
  /// nullopt when the set does not exist or its type is not modelled.
  std::optional<bool> Test(absl::string_view name, const std::vector<bool>& src_flags,
                           const Packet& packet) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sarena::model

#endif  // LIBSARENA_MODEL_IPSET_H_
