// ARP answers (net/ipv4/arp.c arp_process): see arp.h.
#include "libsarena/model/arp.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sarena::model {

bool AnswersArp(const Netstack& ns, const Interface& pif, const net::Ipv4& target,
                const net::Ipv4& sender, std::string* why) {
  std::string scratch;
  if (why == nullptr) why = &scratch;
  if (pif.noarp) {  // arp_rcv drops ARP on IFF_NOARP devices
    *why = absl::StrCat(pif.name, " is NOARP");
    return false;
  }
  const Sysctls& sc = ns.sysctls();
  auto conf = [&](absl::string_view dev, absl::string_view key) {
    return sc.ConfInt(dev, key).value_or(0);
  };
  if (ns.IsLocalAddress(target)) {
    // IN_DEV_ARP_IGNORE = max(all, dev): 0 any local address, 1 only one configured on the
    // receiving device, 2 that and the sender inside its subnet, 3 (scope) and 8 (never) no;
    // arp_ignore() answers for the reserved 4-7 and any other value, as for 0.
    int64_t ignore = std::max(conf("all", "arp_ignore"), conf(pif.name, "arp_ignore"));
    if (ignore <= 0 || (ignore >= 4 && ignore <= 7) || ignore > 8) return true;
    if (ignore > 2) return false;
    for (const auto& a : pif.addresses) {
      if (a.local != target) continue;
      if (ignore == 1 || net::Contains(a.Subnet(), sender)) return true;
    }
    *why = absl::StrCat("arp_ignore ", ignore, " on ", pif.name);
    return false;
  }
  // Proxy ARP (IN_DEV_PROXY_ARP = all OR dev; arp_fwd_proxy): answered when the device forwards
  // and the kernel would route the target out of another device.
  if (conf("all", "proxy_arp") == 0 && conf(pif.name, "proxy_arp") == 0) {
    *why = absl::StrCat("no local address, and proxy_arp is off on ", pif.name);
    return false;
  }
  Flow fl;
  fl.dst = target;
  fl.src = sender;
  fl.iif = pif.name;
  InputResult in = ns.RouteInput(fl);
  if (in.decision == InputDecision::kForward && in.route.type == RouteType::kUnicast &&
      in.route.oif != pif.name) {
    return true;
  }
  *why = absl::StrCat(
      "no local address, and proxy_arp on ", pif.name,
      " answers only for an address it forwards out of another device: ",
      in.decision == InputDecision::kForward
          ? absl::StrCat("the route is ", in.route.ToString())
          : absl::StrCat("no forwarding route (",
                         in.detail.empty() ? std::string(ToString(in.drop)) : in.detail,
                         ")"));
  return false;
}

}  // namespace sarena::model
