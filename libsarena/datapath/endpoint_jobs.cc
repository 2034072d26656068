#include "libsarena/datapath/endpoint_jobs.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libsarena/netlink/socket.h"
#include "libsarena/base/log.h"
#include "libsarena/datapath/abi.h"
#include "libsarena/datapath/naming.h"

namespace sarena::datapath {

namespace {

// Deletes the retired pairs a stopped daemon left (a DEL replied, the deletion had not run):
// the retired name and an owner mark, never the name alone.
void DeleteLeftovers() {
  absl::StatusOr<nl::Socket> sock = nl::Socket::Open();
  absl::StatusOr<std::vector<nl::Link>> links =
      sock.ok() ? sock->ListLinks() : absl::StatusOr<std::vector<nl::Link>>(sock.status());
  if (!links.ok()) {
    SARENA_LOG(Warning, "looking for retired veths left by an earlier run: ",
               links.status().message());
    return;
  }
  for (const nl::Link& l : *links) {
    if (!absl::StartsWith(l.name, kRetiredVethPrefix) || !IsVethOwnerAlias(l.alias)) continue;
    absl::Status st = sock->DeleteLink(l.ifindex);
    if (st.ok()) {
      SARENA_LOG(Info, "deleted retired veth ", l.name, " (", l.alias, ") left by an earlier run");
    } else {
      SARENA_LOG(Warning, "delete retired veth ", l.name, " left by an earlier run: ",
                 st.message());
    }
  }
}

}  // namespace

EndpointJobs::EndpointJobs(Datapath& dp) : dp_(dp) {
  DeleteLeftovers();
  thread_ = std::thread([this] { Run(); });
}

EndpointJobs::~EndpointJobs() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EndpointJobs::Upgrade(std::string host_ifname, int ifindex) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(host_ifname), ifindex});
  }
  cv_.notify_one();
}

void EndpointJobs::Retire(std::string retired_name, std::optional<bpf::Link> link) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job job;
    job.host_ifname = std::move(retired_name);
    job.retire = true;
    job.link = std::move(link);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::string EndpointJobs::RetiredName() {
  std::lock_guard<std::mutex> lock(mu_);
  return RetiredVethName(next_retired_++);
}

absl::Status EndpointJobs::OpenSocket() {
  if (sock_) return absl::OkStatus();
  absl::StatusOr<nl::Socket> s = nl::Socket::Open();
  if (!s.ok()) return s.status();
  sock_ = std::move(*s);
  return absl::OkStatus();
}

void EndpointJobs::RunRetire(Job& job) {
  absl::Status st = OpenSocket();
  if (st.ok()) st = sock_->DeleteLink(job.host_ifname);
  job.link.reset();  // after the device: releasing the link then detaches nothing
  if (!st.ok() && !absl::IsNotFound(st)) {
    SARENA_LOG(Warning, "delete retired veth ", job.host_ifname, ": ", st.message(),
               " (deleted at the next start)");
  }
}

void EndpointJobs::RunUpgrade(const Job& job) {
  absl::Status st = OpenSocket();
  if (st.ok()) {
    st = dp_.Attach(Program::kFromContainer, job.host_ifname, job.ifindex,
                    bpf::Direction::kIngress);
  }
  if (st.ok()) st = dp_.RemoveTcCopy(Program::kFromContainer, job.ifindex, *sock_);
  if (st.ok()) {
    SARENA_LOG(Debug, "endpoint ", job.host_ifname, " (ifindex ", job.ifindex,
               "): from_container now on TCX, tc copy removed");
  } else if (absl::IsNotFound(st)) {
    // The runtime deleted the pod netns, and the pair with it, right after ADD.
    SARENA_LOG(Info, "endpoint ", job.host_ifname, " (ifindex ", job.ifindex,
               "): gone before its move to TCX");
  } else {
    SARENA_LOG(Warning, "endpoint ", job.host_ifname, " (ifindex ", job.ifindex,
               "): TCX upgrade failed, the tc copy of from_container stays: ", st.message());
  }
}

bool EndpointJobs::Pending(absl::string_view host_ifname) const {
  if (running_ == host_ifname) return true;
  for (const Job& j : queue_) {
    if (j.host_ifname == host_ifname) return true;
  }
  return false;
}

void EndpointJobs::CancelUpgrade(absl::string_view host_ifname) {
  std::unique_lock<std::mutex> lock(mu_);
  std::erase_if(queue_, [&](const Job& j) { return !j.retire && j.host_ifname == host_ifname; });
  done_cv_.wait(lock, [&] { return running_ != host_ifname; });
}

void EndpointJobs::WaitFor(absl::string_view host_ifname) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return !Pending(host_ifname); });
}

void EndpointJobs::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    running_ = job.host_ifname;
    lock.unlock();
    if (job.retire) {
      RunRetire(job);
    } else {
      RunUpgrade(job);
    }
    lock.lock();
    running_.clear();
    done_cv_.notify_all();
  }
}

}  // namespace sarena::datapath
