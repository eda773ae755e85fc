// The sparse direct solvers of a build with -DLINALGD_GPL=OFF: CHOLMOD's
// supernodal factorization, UMFPACK and SPQR are GPL-2+, so such a build links
// none of them and refuses these methods (iterative methods still run).
#include "absl/strings/str_cat.h"
#include "server/cpu/sparse_direct.h"

namespace linalgd {
namespace {

absl::Status WithoutGpl(absl::string_view method, absl::string_view library) {
  return absl::UnimplementedError(absl::StrCat(
      "sparse_solve method ", method, " needs SuiteSparse's ", library,
      " (GPL-2+), and this server was built without it (-DLINALGD_GPL=OFF); use method cg, "
      "bicgstab or gmres, or a server built with -DLINALGD_GPL=ON"));
}

}  // namespace

absl::StatusOr<std::vector<double>> CholmodSolve(const CsrView&, const std::vector<double>&,
                                                 int64_t, const DirectSolveLimits&) {
  return WithoutGpl("cholesky", "CHOLMOD Supernodal");
}

absl::StatusOr<std::vector<double>> UmfpackSolve(const CsrView&, const std::vector<double>&,
                                                 int64_t, const DirectSolveLimits&) {
  return WithoutGpl("lu", "UMFPACK");
}

absl::StatusOr<std::vector<std::complex<double>>> UmfpackSolveComplex(
    const CsrView&, const std::vector<std::complex<double>>&, int64_t, const DirectSolveLimits&) {
  return WithoutGpl("lu", "UMFPACK");
}

absl::StatusOr<std::vector<double>> SpqrSolve(const CsrView&, const std::vector<double>&, int64_t,
                                              int64_t*, const DirectSolveLimits&) {
  return WithoutGpl("qr", "SPQR");
}

}  // namespace linalgd
