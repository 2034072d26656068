#ifndef LIBSARENA_DATAPATH_ENDPOINT_JOBS_H_
#define LIBSARENA_DATAPATH_ENDPOINT_JOBS_H_

// The endpoint work that would hold the RTNL lock through an RCU grace period, done on one
// background thread after ADD has replied.
//
// Why: attaching a TCX program to a new device waits in synchronize_rcu() with the RTNL lock
// held (kernel/bpf/tcx.c, tcx_link_prog_attach -> tcx_entry_sync), ~10 ms on this machine, and
// every other netlink request of the ADD queues behind that lock — so a helper thread beside the
// ADD does not take it off the critical path (strace: the pod's RTM_NEWADDR returned together
// with BPF_LINK_CREATE, 10.5 ms each). A tc (cls_bpf) attach waits for no grace period. So ADD
// guards the new host veth with a tc copy of from_container before the host side goes up, and
// this thread then attaches the TCX link (pinned, as Datapath::Attach does) and removes the tc
// copy. While both are attached the TCX program runs first and its verdict (TC_ACT_OK = TCX_PASS,
// TC_ACT_SHOT, a redirect; never TCX_NEXT) ends the ingress hook, so the tc copy never sees a
// packet twice (net/core/dev.c, sch_handle_ingress): there is no moment without a program and
// no packet handled twice.
//
// DEL has the same wait the other way: deleting a device with a TCX program waits in
// synchronize_rcu() with the RTNL lock held (tcx_uninstall -> tcx_entry_sync). So DEL takes the
// endpoint out of service itself — endpoint-map entry removed, host side down (the kernel drops
// the endpoint route with it, the pod side loses carrier), both ends renamed to a retired name
// (RetiredName: CNI_IFNAME and the host name are free again at once), the link pin removed with
// the link held open — and this thread deletes the pair and releases the link.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/string_view.h"
#include "libsarena/bpf/link.h"
#include "libsarena/datapath/datapath.h"
#include "libsarena/netlink/socket.h"

namespace sarena::datapath {

class EndpointJobs {
 public:
  /// Starts the thread. `dp` must outlive this object. The thread works in the network
  /// namespace of the thread that constructs this object (it inherits it).
  explicit EndpointJobs(Datapath& dp);
  /// Finishes every queued job, then joins the thread.
  ~EndpointJobs();
  EndpointJobs(const EndpointJobs&) = delete;
  EndpointJobs& operator=(const EndpointJobs&) = delete;

  /// Queues the TCX upgrade of a new endpoint's host veth `host_ifname` (ifindex `ifindex`),
  /// guarded by a tc copy of from_container (Datapath::AttachTc): Datapath::Attach of
  /// from_container to its ingress (TCX link pinned under the host veth's name), then
  /// Datapath::RemoveTcCopy. A failed attach (device gone: the runtime deleted the pod netns) is
  /// logged and leaves the tc copy in place, so the endpoint stays guarded; CHECK accepts either.
  void Upgrade(std::string host_ifname, int ifindex);

  /// Queues the deletion of a retired veth pair (its host side renamed to `retired_name` in
  /// this thread's namespace), then the release of `link` (its from_container TCX link, held
  /// open so that removing the pin did not detach it; nullopt when there is none). Releasing a
  /// link whose device is gone detaches nothing. A pair already gone (the runtime deleted the
  /// pod netns, which takes both ends) is fine.
  void Retire(std::string retired_name, std::optional<bpf::Link> link);

  /// The next RetiredVethName (naming.h), unique in this process. Retired pairs a stopped
  /// daemon left behind (RetiredVethName prefix and an owner mark) are deleted when this object
  /// is made, so the counter can start at 0.
  std::string RetiredName();

  /// DEL's wait: drops a queued (not yet running) TCX move of `host_ifname` — the device is about
  /// to be deleted, and its tc copy guards it until then, so DEL need not wait behind every
  /// earlier job of the FIFO — and waits for one already running.
  void CancelUpgrade(absl::string_view host_ifname);

  /// Blocks until no job for `host_ifname` is queued or running. ADD calls it before it makes a
  /// device of that name, so a job never lands on a re-created device.
  void WaitFor(absl::string_view host_ifname);

 private:
  struct Job {
    std::string host_ifname;             // Upgrade: the host veth; Retire: its retired name
    int ifindex = 0;                     // Upgrade only
    bool retire = false;
    std::optional<bpf::Link> link;       // Retire only
  };
  void RunUpgrade(const Job& job);  // logs what happened; the tc copy stays on failure
  void RunRetire(Job& job);         // logs a failure; the next start deletes the pair
  absl::Status OpenSocket();        // sock_, on the worker thread
  void Run();
  bool Pending(absl::string_view host_ifname) const;  // mu_ held

  Datapath& dp_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // the worker waits on it for jobs or stop
  std::condition_variable done_cv_;  // WaitFor/CancelUpgrade wait on it
  std::deque<Job> queue_;
  std::string running_;  // host_ifname of the job in progress, "" when idle
  bool stop_ = false;
  uint64_t next_retired_ = 0;
  std::optional<nl::Socket> sock_;  // the worker's own, opened at its first job
  std::thread thread_;  // started in the constructor body, after every member is constructed
};

}  // namespace sarena::datapath

#endif  // LIBSARENA_DATAPATH_ENDPOINT_JOBS_H_
