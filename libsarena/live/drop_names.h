// The names of the kernel's drops (the records of datapath::DropTraceProgram): the drop reason
// by the running kernel's name for it (datapath::ReadKernelDropReasons, read once a process), the
// drop location as a kernel symbol from /proc/kallsyms.
// Source: include/net/dropreason-core.h, proc(5) (/proc/kallsyms).
#ifndef LIBSARENA_LIVE_DROP_NAMES_H_
#define LIBSARENA_LIVE_DROP_NAMES_H_

#include <cstdint>
#include <string>

namespace sarena::live {

/// The kernel's name of drop reason `value` ("SKB_DROP_REASON_IP_RPFILTER"), from the running
/// kernel's BTF (enum skb_drop_reason, or skb_drop_reason_core on newer kernels), read on the
/// first call and kept; "SKB_DROP_REASON_<value>" when BTF is missing or lacks it. Thread-safe.
std::string DropReasonName(uint32_t value);

/// "function+0xoff" for a kernel text address, from /proc/kallsyms (needs root: otherwise the
/// addresses read as 0); "" when unresolved.
std::string KernelSymbol(uint64_t address);

}  // namespace sarena::live

#endif  // LIBSARENA_LIVE_DROP_NAMES_H_
