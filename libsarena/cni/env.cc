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

// Decodes the UTF-8 sequence at text[i] into *cp and its length into *len; false when the bytes
// there are not a well-formed sequence (RFC 3629, Table 3-7 of the Unicode standard).
bool DecodeUtf8(absl::string_view text, size_t i, uint32_t* cp, size_t* len) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *cp = b0;
    *len = 1;
    return true;
  }
  size_t n;
  uint32_t min;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, min = 0x80, *cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, min = 0x800, *cp = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return false;  // continuation byte, overlong lead 0xc0/0xc1, or 0xf5..0xff
  }
  if (i + n > text.size()) return false;
  for (size_t k = 1; k < n; ++k) {
    unsigned char b = byte(i + k);
    if ((b & 0xc0) != 0x80) return false;
    *cp = (*cp << 6) | (b & 0x3f);
  }
  if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) return false;
  *len = n;
  return true;
}

// Unicode White_Space outside ASCII (what Go's unicode.IsSpace, used by libcni, rejects).
bool IsUnicodeSpace(uint32_t cp) {
  return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

}  // namespace

std::optional<size_t> FirstInvalidUtf8(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp;
    size_t len;
    if (!DecodeUtf8(text, i, &cp, &len)) return i;
    i += len;
  }
  return std::nullopt;
}

absl::Status ValidateUtf8(absl::string_view variable, absl::string_view value) {
  std::optional<size_t> bad = FirstInvalidUtf8(value);
  if (!bad) return absl::OkStatus();
  return EnvError(absl::StrCat("invalid ", variable, " '", absl::CHexEscape(value),
                               "': not valid UTF-8 (byte 0x",
                               absl::Hex(static_cast<unsigned char>(value[*bad]), absl::kZeroPad2),
                               " at offset ", *bad, ")"));
}

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
  if (absl::Status s = ValidateUtf8("CNI_IFNAME", name); !s.ok()) return s;
  if (name.size() > 15) {
    return bad(absl::StrCat("is ", name.size(), " bytes, an interface name has at most 15"));
  }
  if (name == "." || name == "..") return bad("'.' and '..' are not interface names");
  for (size_t i = 0; i < name.size();) {
    uint32_t cp;
    size_t len;
    DecodeUtf8(name, i, &cp, &len);  // valid: checked above
    i += len;
    if (IsUnicodeSpace(cp)) {
      return bad(absl::StrCat("contains the Unicode space U+",
                              absl::Hex(cp, absl::kZeroPad4)));
    }
  }
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
  if (absl::Status s = ValidateUtf8("CNI_NETNS", netns); !s.ok()) return s;
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
    if (FirstInvalidUtf8(key)) return ValidateUtf8("CNI_ARGS", text);
    if (absl::Status s = ValidateUtf8(absl::StrCat("CNI_ARGS ", key), value); !s.ok()) return s;
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
