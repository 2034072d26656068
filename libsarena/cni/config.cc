#include "libsarena/cni/config.h"

#include <sys/un.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libsarena/base/status_macros.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/json.h"
#include "libsarena/cni/version.h"

namespace sarena::cni {
namespace {

absl::Status ConfigError(absl::string_view message) {
  return MakeCniError(ErrorCode::kInvalidNetworkConfig, absl::StatusCode::kInvalidArgument,
                      message);
}

// Re-tags a JsonObject getter error (kInvalidArgument naming the field) as CNI code 7.
absl::Status AsConfigError(const absl::Status& s) {
  return s.ok() ? s : ConfigError(s.message());
}

#define SARENA_CONFIG_GET(lhs, expr)                   \
  auto SARENA_STATUS_CONCAT_(cfg_, __LINE__) = (expr); \
  if (!SARENA_STATUS_CONCAT_(cfg_, __LINE__).ok())     \
    return AsConfigError(SARENA_STATUS_CONCAT_(cfg_, __LINE__).status()); \
  lhs = std::move(SARENA_STATUS_CONCAT_(cfg_, __LINE__)).value()

absl::StatusOr<std::string> RequiredString(const JsonObject& o, absl::string_view key) {
  SARENA_CONFIG_GET(std::optional<std::string> v, o.GetString(key));
  if (!v) return ConfigError(absl::StrCat("missing field '", key, "'"));
  if (v->empty()) return ConfigError(absl::StrCat("field '", key, "' is empty"));
  return *v;
}

absl::StatusOr<std::vector<Attachment>> ParseAttachments(const JsonObject& o,
                                                         absl::string_view key) {
  SARENA_CONFIG_GET(auto list, o.GetObjectArray(key));
  // libcni >= 1.2 sends null when no attachment is valid (Go's nil slice): none to keep.
  if (!list) return std::vector<Attachment>();
  std::vector<Attachment> out;
  for (const JsonObject& j : *list) {
    Attachment a;
    SARENA_CONFIG_GET(auto id, j.GetString("containerID"));
    if (!id || id->empty()) {
      return ConfigError(absl::StrCat("missing field '", j.PathOf("containerID"), "'"));
    }
    a.container_id = *id;
    SARENA_CONFIG_GET(auto ifname, j.GetString("ifname"));
    if (!ifname || ifname->empty()) {
      return ConfigError(absl::StrCat("missing field '", j.PathOf("ifname"), "'"));
    }
    a.ifname = *ifname;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

absl::Status ValidateNetworkName(absl::string_view name) {
  auto ok_char = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
           c == '-';
  };
  bool ok = !name.empty() && absl::ascii_isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && ok_char(c);
  if (ok) return absl::OkStatus();
  return ConfigError(absl::StrCat("invalid network name '", absl::CHexEscape(name),
                                  "': must start with a letter or digit, followed by letters, "
                                  "digits, '_', '.' or '-'"));
}

std::string PeekCniVersion(absl::string_view json) {
  absl::StatusOr<JsonObject> o = JsonObject::Parse(json);
  if (!o.ok()) return "";
  absl::StatusOr<std::optional<std::string>> v = o->GetString("cniVersion");
  if (!v.ok() || !v->has_value()) return "";
  return **v;
}

absl::StatusOr<NetConf> ParseNetConf(absl::string_view json, Command command) {
  std::string parser_detail;
  absl::StatusOr<JsonObject> parsed = JsonObject::Parse(json, &parser_detail);
  if (!parsed.ok()) {
    return WithCniDetails(
        MakeCniError(ErrorCode::kDecodingFailure, absl::StatusCode::kInvalidArgument,
                     absl::StrCat("decode network config: ", parsed.status().message())),
        parser_detail);
  }
  const JsonObject& o = *parsed;
  NetConf conf;

  if (const auto* plugins = o.Find("plugins")) {
    return ConfigError(absl::StrCat(
        "network config has field 'plugins' = ", JsonValueText(*plugins),
        ": that is a conflist; a runtime passes sarena-cni one plugin object with 'name' and "
        "'cniVersion' copied in"));
  }

  // cniVersion first: every later error is reported in that version.
  SARENA_CONFIG_GET(std::optional<std::string> version, o.GetString("cniVersion"));
  if (!version || version->empty()) return ConfigError("missing field 'cniVersion'");
  {
    absl::StatusOr<SpecVersion> v = SpecVersion::Parse(*version);
    if (!v.ok()) return v.status();
  }
  absl::Status s = CheckSupportedVersion(*version);
  if (!s.ok()) return s;
  s = CheckCommandVersion(command, *version);
  if (!s.ok()) return s;
  conf.cni_version = *version;

  absl::StatusOr<std::string> name = RequiredString(o, "name");
  if (!name.ok()) return name.status();
  s = ValidateNetworkName(*name);
  if (!s.ok()) return s;
  conf.name = *name;

  absl::StatusOr<std::string> type = RequiredString(o, "type");
  if (!type.ok()) return type.status();
  conf.type = *type;

  if (const auto* ipam = o.Find("ipam")) {
    return MakeCniError(ErrorCode::kUnsupportedField, absl::StatusCode::kInvalidArgument,
                        absl::StrCat("unsupported field 'ipam' = ", JsonValueText(*ipam),
                                     ": sarenad allocates pod addresses from its --pod-cidr"));
  }

  SARENA_CONFIG_GET(std::optional<std::string> socket, o.GetString("daemonSocket"));
  if (socket) {
    if (socket->empty() || (*socket)[0] != '/') {
      return ConfigError(absl::StrCat("invalid daemonSocket '", *socket,
                                      "': want an absolute path to sarenad's unix socket"));
    }
    if (socket->size() >= sizeof(sockaddr_un::sun_path)) {
      return ConfigError(absl::StrCat("invalid daemonSocket '", *socket, "': ", socket->size(),
                                      " bytes, a unix socket path has at most ",
                                      sizeof(sockaddr_un::sun_path) - 1));
    }
    conf.daemon_socket = *socket;
  }

  if (const auto* mtu_value = o.Find("mtu")) {
    if (mtu_value->kind_case() == google::protobuf::Value::kNumberValue) {
      double d = mtu_value->number_value();
      if (d != static_cast<double>(static_cast<int64_t>(d)) || d < kMinMtu || d > kMaxMtu) {
        return ConfigError(absl::StrCat("invalid mtu ", JsonValueText(*mtu_value), ": must be ",
                                        kMinMtu, "..", kMaxMtu));
      }
      conf.mtu = static_cast<uint32_t>(d);
    } else {
      SARENA_CONFIG_GET(auto unused, o.GetUint("mtu"));  // reports the wrong type
      (void)unused;
    }
  }

  SARENA_CONFIG_GET(std::optional<std::string> log_file, o.GetString("logFile"));
  if (log_file) {
    if (!log_file->empty() && (*log_file)[0] != '/') {
      return ConfigError(absl::StrCat("invalid logFile '", *log_file,
                                      "': want an absolute path, or \"\" for stderr"));
    }
    conf.log_file = *log_file;
  }

  SARENA_CONFIG_GET(std::optional<JsonObject> dns, o.GetObject("dns"));
  if (dns) {
    SARENA_CONFIG_GET(auto ns, dns->GetStringArray("nameservers"));
    conf.dns.nameservers = ns.value_or(std::vector<std::string>{});
    SARENA_CONFIG_GET(auto domain, dns->GetString("domain"));
    conf.dns.domain = domain.value_or("");
    SARENA_CONFIG_GET(auto search, dns->GetStringArray("search"));
    conf.dns.search = search.value_or(std::vector<std::string>{});
    SARENA_CONFIG_GET(auto options, dns->GetStringArray("options"));
    conf.dns.options = options.value_or(std::vector<std::string>{});
  }

  SARENA_CONFIG_GET(std::optional<JsonObject> prev, o.GetObject("prevResult"));
  if (prev) {
    absl::StatusOr<Result> r = ParseResult(*prev);
    if (!r.ok()) return AsConfigError(r.status());
    conf.prev_result = std::move(*r);
  } else if (command == Command::kCheck) {
    return ConfigError(
        "missing field 'prevResult': CHECK needs the result of the preceding ADD");
  }

  if (command == Command::kGc) {
    absl::string_view key = "cni.dev/valid-attachments";
    if (!o.Has(key) && o.Has("cni.dev/attachments")) key = "cni.dev/attachments";
    if (!o.Has(key)) {
      return ConfigError(
          "missing field 'cni.dev/valid-attachments': GC without the list of attachments to "
          "keep would remove every endpoint");
    }
    absl::StatusOr<std::vector<Attachment>> list = ParseAttachments(o, key);
    if (!list.ok()) return list.status();
    conf.valid_attachments = std::move(*list);
  }
  return conf;
}

}  // namespace sarena::cni
