#include "server/backend/sparse_ops.h"

namespace linalgd {

absl::string_view SparseMethodName(SparseMethod m) {
  switch (m) {
    case SparseMethod::kAuto:
      return "auto";
    case SparseMethod::kCholesky:
      return "cholesky";
    case SparseMethod::kLu:
      return "lu";
    case SparseMethod::kQr:
      return "qr";
    case SparseMethod::kCg:
      return "cg";
    case SparseMethod::kBicgstab:
      return "bicgstab";
    case SparseMethod::kGmres:
      return "gmres";
  }
  return "?";
}

absl::string_view PreconditionerName(Preconditioner p) {
  switch (p) {
    case Preconditioner::kNone:
      return "none";
    case Preconditioner::kJacobi:
      return "jacobi";
    case Preconditioner::kIlu0:
      return "ilu0";
    case Preconditioner::kIc0:
      return "ic0";
  }
  return "?";
}

bool IsIterative(SparseMethod m) {
  return m == SparseMethod::kCg || m == SparseMethod::kBicgstab || m == SparseMethod::kGmres;
}

}  // namespace linalgd
