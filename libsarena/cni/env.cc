#include "libsarena/cni/env.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libsarena/cni/error.h"
#include "libsarena/cni/version.h"

namespace sarena::cni {
namespace {

absl::Status EnvError(absl::string_view message) {
  return MakeCniError(ErrorCode::kInvalidEnvironment, absl::StatusCode::kInvalidArgument, message);
}

bool IsAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// Quotes an environment value for a message, escaping control characters.
std::string Quote(absl::string_view v) { return absl::StrCat("'", absl::CEscape(v), "'"); }

}  // namespace

absl::string_view ToString(Command command) {
  switch (command) {
    case Command::kAdd:
      return "ADD";
    case Command::kDel:
      return "DEL";
    case Command::kCheck:
      return "CHECK";
    case Command::kVersion:
      return "VERSION";
    case Command::kStatus:
      return "STATUS";
    case Command::kGc:
      return "GC";
  }
  return "?";
}

absl::StatusOr<Command> ParseCommand(absl::string_view text) {
  for (Command c : {Command::kAdd, Command::kDel, Command::kCheck, Command::kVersion,
                    Command::kStatus, Command::kGc}) {
    if (text == ToString(c)) return c;
  }
  if (text.empty()) return EnvError("CNI_COMMAND is not set");
  return EnvError(absl::StrCat("unknown CNI_COMMAND ", Quote(text),
                               ": want ADD, DEL, CHECK, VERSION, STATUS or GC"));
}

absl::string_view MinimumVersionFor(Command command) {
  switch (command) {
    case Command::kCheck:
      return "0.4.0";
    case Command::kStatus:
    case Command::kGc:
      return "1.1.0";
    default:
      return "0.1.0";
  }
}

absl::Status CheckCommandVersion(Command command, absl::string_view cni_version) {
  absl::StatusOr<SpecVersion> have = SpecVersion::Parse(cni_version);
  if (!have.ok()) return have.status();
  absl::StatusOr<SpecVersion> need = SpecVersion::Parse(MinimumVersionFor(command));
  if (*have >= *need) return absl::OkStatus();
  return MakeCniError(ErrorCode::kIncompatibleVersion, absl::StatusCode::kInvalidArgument,
                      absl::StrCat("CNI_COMMAND '", ToString(command), "' needs cniVersion ",
                                   MinimumVersionFor(command),
                                   " or later, the network config has '", cni_version, "'"));
}

absl::Status ValidateContainerId(absl::string_view id) {
  auto bad = [&](absl::string_view why) {
    return EnvError(absl::StrCat("invalid CNI_CONTAINERID ", Quote(id), ": ", why));
  };
  if (id.empty()) return EnvError("CNI_CONTAINERID is not set");
  if (!IsAlnum(id[0])) return bad("must start with a letter or digit");
  for (char c : id) {
    if (!IsAlnum(c) && c != '_' && c != '.' && c != '-') {
      return bad(absl::StrCat("contains ", Quote(absl::string_view(&c, 1)),
                              "; allowed are letters, digits, '_', '.', '-'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateIfname(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return EnvError(absl::StrCat("invalid CNI_IFNAME ", Quote(name), ": ", why));
  };
  if (name.empty()) return EnvError("CNI_IFNAME is not set");
  if (name.size() > 15) {
    return bad(absl::StrCat("is ", name.size(), " bytes, an interface name has at most 15"));
  }
  if (name == "." || name == "..") return bad("'.' and '..' are not interface names");
  for (char c : name) {
    if (c == '/' || c == ':') return bad(absl::StrCat("contains '", std::string(1, c), "'"));
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) return bad("contains whitespace");
    if (absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return bad("contains a control character");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNetns(absl::string_view netns) {
  if (netns.empty()) return EnvError("CNI_NETNS is not set");
  if (netns[0] != '/') {
    return EnvError(absl::StrCat("invalid CNI_NETNS ", Quote(netns),
                                 ": want an absolute path to a network namespace"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CniArgs> ParseCniArgs(absl::string_view text) {
  CniArgs args;
  std::vector<std::string> unknown_keys;
  std::vector<std::pair<std::string, std::string>> unknown;
  for (absl::string_view pair : absl::StrSplit(text, ';', absl::SkipEmpty())) {
    size_t eq = pair.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return EnvError(absl::StrCat("invalid CNI_ARGS pair ", Quote(pair), ": want KEY=VALUE"));
    }
    absl::string_view key = pair.substr(0, eq);
    absl::string_view value = pair.substr(eq + 1);
    if (key == "K8S_POD_NAMESPACE") {
      args.pod_namespace = std::string(value);
    } else if (key == "K8S_POD_NAME") {
      args.pod_name = std::string(value);
    } else if (key == "K8S_POD_INFRA_CONTAINER_ID") {
      args.pod_infra_container_id = std::string(value);
    } else if (key == "K8S_POD_UID") {
      args.pod_uid = std::string(value);
    } else if (key == "IgnoreUnknown") {
      std::string v = absl::AsciiStrToLower(value);
      if (v == "1" || v == "t" || v == "true") {
        args.ignore_unknown = true;
      } else if (v == "0" || v == "f" || v == "false") {
        args.ignore_unknown = false;
      } else {
        return EnvError(absl::StrCat("invalid CNI_ARGS IgnoreUnknown ", Quote(value),
                                     ": want 1, true, 0 or false"));
      }
    } else {
      unknown_keys.emplace_back(key);
      unknown.emplace_back(std::string(key), std::string(value));
    }
  }
  if (!unknown.empty() && !args.ignore_unknown) {
    return EnvError(absl::StrCat(
        "CNI_ARGS key", unknown_keys.size() > 1 ? "s " : " ", "'",
        absl::StrJoin(unknown_keys, "', '"),
        "' unknown (known: K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, "
        "K8S_POD_UID); set IgnoreUnknown=1 to ignore"));
  }
  args.unknown = std::move(unknown);
  return args;
}

absl::StatusOr<Environment> ParseEnvironment(const EnvLookup& lookup) {
  auto get = [&](absl::string_view name) { return lookup(name).value_or(""); };
  Environment env;
  absl::StatusOr<Command> command = ParseCommand(get("CNI_COMMAND"));
  if (!command.ok()) return command.status();
  env.command = *command;
  env.path = get("CNI_PATH");
  if (env.command == Command::kVersion || env.command == Command::kStatus ||
      env.command == Command::kGc) {
    return env;
  }

  std::vector<std::string> problems;
  auto note = [&](const absl::Status& s) {
    if (!s.ok()) problems.emplace_back(s.message());
  };
  env.container_id = get("CNI_CONTAINERID");
  note(ValidateContainerId(env.container_id));
  env.ifname = get("CNI_IFNAME");
  note(ValidateIfname(env.ifname));
  env.netns = get("CNI_NETNS");
  if (env.command != Command::kDel || !env.netns.empty()) note(ValidateNetns(env.netns));
  env.args_text = get("CNI_ARGS");
  absl::StatusOr<CniArgs> args = ParseCniArgs(env.args_text);
  if (args.ok()) {
    env.args = std::move(*args);
  } else {
    note(args.status());
  }
  if (!problems.empty()) return EnvError(absl::StrJoin(problems, "; "));
  return env;
}

absl::StatusOr<Environment> ParseProcessEnvironment() {
  return ParseEnvironment([](absl::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace sarena::cni
