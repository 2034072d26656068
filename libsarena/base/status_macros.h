// Status propagation macros. Debian 12's Abseil (20220623) ships neither absl/log nor
// RETURN_IF_ERROR / ASSIGN_OR_RETURN, so libsarena defines them once here.
#ifndef LIBSARENA_BASE_STATUS_MACROS_H_
#define LIBSARENA_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SARENA_STATUS_CONCAT_INNER_(a, b) a##b
#define SARENA_STATUS_CONCAT_(a, b) SARENA_STATUS_CONCAT_INNER_(a, b)

/// Evaluates `expr` (an absl::Status); returns it from the enclosing function when not OK.
#define SARENA_RETURN_IF_ERROR(expr)                        \
  do {                                                      \
    ::absl::Status sarena_status_ = (expr);                 \
    if (!sarena_status_.ok()) return sarena_status_;        \
  } while (0)

/// `SARENA_ASSIGN_OR_RETURN(auto x, Foo());` — evaluates an absl::StatusOr<T>; on error returns
/// its status from the enclosing function, otherwise moves the value into `lhs`.
#define SARENA_ASSIGN_OR_RETURN(lhs, rexpr)                                                   \
  SARENA_ASSIGN_OR_RETURN_IMPL_(SARENA_STATUS_CONCAT_(sarena_statusor_, __LINE__), lhs, rexpr)

#define SARENA_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

#endif  // LIBSARENA_BASE_STATUS_MACROS_H_
