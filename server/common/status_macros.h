#ifndef LINALGD_SERVER_COMMON_STATUS_MACROS_H_
#define LINALGD_SERVER_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// RETURN_IF_ERROR(expr): returns the absl::Status of `expr` when not ok.
#define LINALGD_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status _linalgd_status = (expr);           \
    if (!_linalgd_status.ok()) return _linalgd_status; \
  } while (0)

#define LINALGD_CONCAT_INNER(a, b) a##b
#define LINALGD_CONCAT(a, b) LINALGD_CONCAT_INNER(a, b)

// ASSIGN_OR_RETURN(lhs, expr): evaluates the absl::StatusOr `expr`; returns
// its status when not ok, else assigns its value to `lhs` (a declaration or
// an lvalue).
#define LINALGD_ASSIGN_OR_RETURN(lhs, expr) \
  LINALGD_ASSIGN_OR_RETURN_IMPL(LINALGD_CONCAT(_linalgd_or_, __LINE__), lhs, expr)
#define LINALGD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // LINALGD_SERVER_COMMON_STATUS_MACROS_H_
