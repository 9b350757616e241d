// Status helpers for code that returns absl::Status / absl::StatusOr.
//
// Debian's Abseil (20220623) has no status_macros.h, so these are ours:
//   LEEWAY_RETURN_IF_ERROR(expr);            // returns expr's Status if !ok
//   LEEWAY_ASSIGN_OR_RETURN(auto x, expr);   // unwraps a StatusOr or returns
// Both evaluate `expr` exactly once.
#ifndef LEEWAY_CORE_COMMON_STATUS_MACROS_H_
#define LEEWAY_CORE_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define LEEWAY_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status leeway_status_ = (expr);          \
    if (!leeway_status_.ok()) return leeway_status_; \
  } while (0)

#define LEEWAY_STATUS_CONCAT_INNER_(a, b) a##b
#define LEEWAY_STATUS_CONCAT_(a, b) LEEWAY_STATUS_CONCAT_INNER_(a, b)

#define LEEWAY_ASSIGN_OR_RETURN(lhs, expr) \
  LEEWAY_ASSIGN_OR_RETURN_IMPL_(           \
      LEEWAY_STATUS_CONCAT_(leeway_statusor_, __LINE__), lhs, expr)

#define LEEWAY_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = *std::move(tmp)

#endif  // LEEWAY_CORE_COMMON_STATUS_MACROS_H_
