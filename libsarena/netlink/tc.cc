// Socket's tc (traffic control) requests: rtnetlink RTM_GETTFILTER.
#include <libmnl/libmnl.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/netlink/internal.h"
#include "libsarena/netlink/socket.h"

namespace sarena::nl {

using internal::MsgBuf;

absl::StatusOr<int> Socket::CountTcFilters(int ifindex, TcHook hook) {
  MsgBuf buf;
  nlmsghdr* nlh = buf.Start(RTM_GETTFILTER, 0);
  auto* t = MsgBuf::PutHeader<tcmsg>(nlh);
  t->tcm_family = AF_UNSPEC;
  t->tcm_ifindex = ifindex;
  t->tcm_parent = TC_H_MAKE(TC_H_CLSACT, hook == TcHook::kIngress ? TC_H_MIN_INGRESS
                                                                  : TC_H_MIN_EGRESS);
  int n = 0;
  SARENA_RETURN_IF_ERROR(Dump(
      nlh,
      absl::StrCat("list tc filters of ifindex ", ifindex, " ",
                   hook == TcHook::kIngress ? "ingress" : "egress"),
      [&](const nlmsghdr& m) {
        if (m.nlmsg_type == RTM_NEWTFILTER) ++n;
        return absl::OkStatus();
      },
      [&] { n = 0; }));
  return n;
}

}  // namespace sarena::nl
