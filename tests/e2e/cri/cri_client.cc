// cri_client: a minimal CRI (Kubernetes Container Runtime Interface, runtime.v1) client that
// drives a runtime's pod-sandbox lifecycle over gRPC exactly as kubelet does, for
// tests/e2e/cri_test.sh (crictl is not packaged in Debian 12). Wire contract: api.proto next to
// this file (a field-number-compatible subset of k8s.io/cri-api runtime/v1).
//
// Usage: cri_client --endpoint PATH COMMAND [ARGS]
//   version                              runtime name, version and CRI version
//   run-sandbox NAME NAMESPACE UID [--hostname H] [--cgroup-parent P]
//                                        RunPodSandbox; prints the sandbox id
//   status ID                            PodSandboxStatus; prints network.ip ("" if none)
//   state ID                             PodSandboxStatus; prints SANDBOX_READY / SANDBOX_NOTREADY
//   info ID                              PodSandboxStatus(verbose); prints info["info"] (JSON)
//   stop ID                              StopPodSandbox
//   remove ID                            RemovePodSandbox
//   list                                 ListPodSandbox; one "ID STATE NAMESPACE/NAME UID" line each
// PATH is a unix socket path (or a gRPC target such as unix:///run/x.sock).
// Exit status: 0 on success, 1 when the RPC fails (its gRPC code and message on stderr),
// 2 on a usage error.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "api.grpc.pb.h"

namespace {

namespace cri = ::runtime::v1;

constexpr char kUsage[] =
    "usage: cri_client --endpoint PATH COMMAND [ARGS]\n"
    "  version\n"
    "  run-sandbox NAME NAMESPACE UID [--hostname H] [--cgroup-parent P]\n"
    "  status ID | state ID | info ID | stop ID | remove ID\n"
    "  list\n";

int Usage(const std::string& why) {
  std::cerr << "cri_client: " << why << "\n" << kUsage;
  return 2;
}

// Prints a failed RPC naming the method and the endpoint; returns the exit status 1.
int RpcFailed(const char* method, const std::string& endpoint, const grpc::Status& status) {
  std::cerr << "cri_client: " << method << " on " << endpoint << " failed: code "
            << static_cast<int>(status.error_code()) << ": " << status.error_message() << "\n";
  return 1;
}

// A context whose deadline is `seconds` from now (RunPodSandbox includes the CNI ADD and the
// shim start, so it gets more than the others).
std::unique_ptr<grpc::ClientContext> Context(int seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

int Run(const std::string& endpoint, const std::vector<std::string>& args) {
  const std::string target =
      endpoint.rfind("unix:", 0) == 0 ? endpoint : "unix://" + endpoint;
  auto stub = cri::RuntimeService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  const std::string& cmd = args[0];
  auto need = [&](size_t n) { return args.size() == n + 1; };

  if (cmd == "version" && need(0)) {
    cri::VersionRequest req;
    req.set_version("v1");
    cri::VersionResponse resp;
    grpc::Status s = stub->Version(Context(5).get(), req, &resp);
    if (!s.ok()) return RpcFailed("Version", endpoint, s);
    std::cout << resp.runtime_name() << " " << resp.runtime_version() << " "
              << resp.runtime_api_version() << "\n";
    return 0;
  }
  if (cmd == "run-sandbox" && args.size() >= 4) {
    std::string hostname = args[1], cgroup_parent;
    for (size_t i = 4; i < args.size(); i += 2) {
      if (i + 1 >= args.size()) return Usage(args[i] + " needs a value");
      if (args[i] == "--hostname") {
        hostname = args[i + 1];
      } else if (args[i] == "--cgroup-parent") {
        cgroup_parent = args[i + 1];
      } else {
        return Usage("unknown run-sandbox flag " + args[i]);
      }
    }
    cri::RunPodSandboxRequest req;
    cri::PodSandboxConfig* config = req.mutable_config();
    config->mutable_metadata()->set_name(args[1]);
    config->mutable_metadata()->set_namespace_(args[2]);
    config->mutable_metadata()->set_uid(args[3]);
    config->mutable_metadata()->set_attempt(0);
    config->set_hostname(hostname);
    // What kubelet sends for a pod without hostNetwork: every namespace POD-scoped.
    cri::LinuxPodSandboxConfig* linux = config->mutable_linux();
    linux->set_cgroup_parent(cgroup_parent);
    cri::NamespaceOption* ns = linux->mutable_security_context()->mutable_namespace_options();
    ns->set_network(cri::POD);
    ns->set_pid(cri::POD);
    ns->set_ipc(cri::POD);
    (*config->mutable_labels())["io.kubernetes.pod.name"] = args[1];
    (*config->mutable_labels())["io.kubernetes.pod.namespace"] = args[2];
    (*config->mutable_labels())["io.kubernetes.pod.uid"] = args[3];
    cri::RunPodSandboxResponse resp;
    grpc::Status s = stub->RunPodSandbox(Context(60).get(), req, &resp);
    if (!s.ok()) return RpcFailed("RunPodSandbox", endpoint, s);
    std::cout << resp.pod_sandbox_id() << "\n";
    return 0;
  }
  if ((cmd == "status" || cmd == "state" || cmd == "info") && need(1)) {
    cri::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(args[1]);
    req.set_verbose(cmd == "info");
    cri::PodSandboxStatusResponse resp;
    grpc::Status s = stub->PodSandboxStatus(Context(10).get(), req, &resp);
    if (!s.ok()) return RpcFailed("PodSandboxStatus", endpoint, s);
    if (cmd == "status") {
      std::cout << resp.status().network().ip() << "\n";
    } else if (cmd == "state") {
      std::cout << cri::PodSandboxState_Name(resp.status().state()) << "\n";
    } else {
      auto it = resp.info().find("info");
      if (it == resp.info().end()) {
        std::cerr << "cri_client: PodSandboxStatus of " << args[1]
                  << " returned no info[\"info\"] (the runtime gives no verbose record)\n";
        return 1;
      }
      std::cout << it->second << "\n";
    }
    return 0;
  }
  if (cmd == "stop" && need(1)) {
    cri::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(args[1]);
    cri::StopPodSandboxResponse resp;
    grpc::Status s = stub->StopPodSandbox(Context(60).get(), req, &resp);
    return s.ok() ? 0 : RpcFailed("StopPodSandbox", endpoint, s);
  }
  if (cmd == "remove" && need(1)) {
    cri::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(args[1]);
    cri::RemovePodSandboxResponse resp;
    grpc::Status s = stub->RemovePodSandbox(Context(60).get(), req, &resp);
    return s.ok() ? 0 : RpcFailed("RemovePodSandbox", endpoint, s);
  }
  if (cmd == "list" && need(0)) {
    cri::ListPodSandboxRequest req;
    cri::ListPodSandboxResponse resp;
    grpc::Status s = stub->ListPodSandbox(Context(10).get(), req, &resp);
    if (!s.ok()) return RpcFailed("ListPodSandbox", endpoint, s);
    for (const cri::PodSandbox& p : resp.items()) {
      std::cout << p.id() << " " << cri::PodSandboxState_Name(p.state()) << " "
                << p.metadata().namespace_() << "/" << p.metadata().name() << " "
                << p.metadata().uid() << "\n";
    }
    return 0;
  }
  return Usage("unknown command or wrong arguments: " + cmd);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string endpoint;
  if (args.size() >= 2 && args[0] == "--endpoint") {
    endpoint = args[1];
    args.erase(args.begin(), args.begin() + 2);
  } else if (!args.empty() && args[0].rfind("--endpoint=", 0) == 0) {
    endpoint = args[0].substr(sizeof("--endpoint=") - 1);
    args.erase(args.begin());
  }
  if (endpoint.empty()) return Usage("--endpoint PATH is required");
  if (args.empty()) return Usage("no command");
  return Run(endpoint, args);
}
