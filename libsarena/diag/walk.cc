#include "libsarena/diag/walk.h"

#include <string>

#include "libsarena/base/status_macros.h"
#include "libsarena/diag/walk/walker.h"

namespace sarena::diag {

absl::StatusOr<TraceResult> Trace(const model::Snapshot& snapshot, const Query& query,
                                  Plugin& plugin, const TraceOptions& options) {
  internal::Walker w(snapshot, query, plugin, options);
  SARENA_RETURN_IF_ERROR(w.Run());
  SARENA_RETURN_IF_ERROR(plugin.error());
  w.Finish();
  TraceResult r;
  r.graph = w.TakeGraph();
  r.plugin = std::string(plugin.name());
  return r;
}

}  // namespace sarena::diag
