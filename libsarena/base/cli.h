// Command-line helpers shared by the executables.
#ifndef LIBSARENA_BASE_CLI_H_
#define LIBSARENA_BASE_CLI_H_

#include <string>
#include <vector>

namespace sarena {

/// Rewrites "--pod-cidr=X" / "--pod-cidr" into "--pod_cidr=X" / "--pod_cidr" (the flag name
/// only, never its value) so the documented dashed flags map onto Abseil flag identifiers.
/// Arguments after a bare "--" are left alone. Returns storage for argv-style use.
std::vector<std::string> NormalizeFlagDashes(int argc, char** argv);

/// argv-style pointers into `args` (valid while `args` lives).
std::vector<char*> ArgvOf(std::vector<std::string>& args);

}  // namespace sarena

#endif  // LIBSARENA_BASE_CLI_H_
