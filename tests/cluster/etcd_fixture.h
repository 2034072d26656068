// A private etcd for one test: etcd 3.4 (Debian etcd-server) listening on a unix socket in a fresh
// temp dir (docs/architecture.md "The privileged test topology"), started as a child process that
// dies with the test binary (PR_SET_PDEATHSIG) and is killed and its dir removed on destruction,
// also when the test fails.
#ifndef SARENA_TESTS_CLUSTER_ETCD_FIXTURE_H_
#define SARENA_TESTS_CLUSTER_ETCD_FIXTURE_H_

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "libsarena/cluster/etcd_client.h"
#include "tests/lib/test_util.h"

namespace sarena::testing {

class EtcdProcess {
 public:
  /// `netns_path` (e.g. "/var/run/netns/x"): run etcd in that network namespace (its unix socket
  /// is still reachable from anywhere). `extra_client_url` (e.g. "http://127.0.0.1:2379"): an
  /// additional client listener, inside that namespace.
  explicit EtcdProcess(std::string netns_path = "", std::string extra_client_url = "")
      : netns_path_(std::move(netns_path)), extra_url_(std::move(extra_client_url)) {}
  ~EtcdProcess() { Stop(); }  // then dir_ goes, data and all
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  /// Starts etcd (same data dir on a restart) and waits until it answers a range, at most 20 s.
  /// Returns false (with a test failure) when it does not come up.
  bool Start() {
    if (pid_ > 0) return true;
    (void)unlink(socket_path().c_str());
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (!netns_path_.empty()) {
        int ns = open(netns_path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) _exit(126);
      }
      if (chdir(dir_.path().c_str()) != 0) _exit(127);
      int log = open(dir_.Path("etcd.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
      }
      std::string data = dir_.Path("data");
      std::string urls = "unix://etcd.sock:2379";
      if (!extra_url_.empty()) urls += "," + extra_url_;
      execlp("etcd", "etcd", "--name", "n1", "--data-dir", data.c_str(),
             "--listen-client-urls", urls.c_str(), "--advertise-client-urls",
             urls.c_str(), "--listen-peer-urls", "unix://peer.sock:2380",
             "--initial-advertise-peer-urls", "unix://peer.sock:2380", "--initial-cluster",
             "n1=unix://peer.sock:2380", "--log-level", "warn", static_cast<char*>(nullptr));
      _exit(127);
    }
    auto client = cluster::EtcdClient::Create(endpoint());
    absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ADD_FAILURE() << "etcd exited at start; see " << dir_.Path("etcd.log");
        return false;
      }
      if ((*client)->Range("health", {}, 0, 0, absl::Seconds(1)).ok()) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    ADD_FAILURE() << "etcd did not answer within 20 s; see " << dir_.Path("etcd.log");
    return false;
  }

  /// SIGKILLs etcd (the data dir stays) and reaps it.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  bool running() const { return pid_ > 0; }
  const std::string& dir() const { return dir_.path(); }
  std::string socket_path() const { return dir_.Path("etcd.sock:2379"); }
  /// "unix:///tmp/sarena-etcd-XXXX/etcd.sock:2379"
  std::string endpoint() const { return "unix://" + socket_path(); }

 private:
  std::string netns_path_;
  std::string extra_url_;
  TempDir dir_{"sarena-etcd-"};  // a failed mkdtemp is a test failure
  pid_t pid_ = -1;
};

}  // namespace sarena::testing

#endif  // SARENA_TESTS_CLUSTER_ETCD_FIXTURE_H_
