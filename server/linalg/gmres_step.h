#ifndef LINALGD_SERVER_LINALG_GMRES_STEP_H_
#define LINALGD_SERVER_LINALG_GMRES_STEP_H_

// Restarted GMRES(kGmresRestart), right-preconditioned, as both backends run
// it: the host-side math (the Hessenberg matrix reduced by Givens rotations,
// its least-squares solve, the restart, convergence and breakdown decisions)
// lives here once; the vector operations on the Krylov basis are the
// backend's (the CPU's loops on host vectors, the GPU's cuBLAS and cuSPARSE
// on device vectors), through GmresVectors.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/common/stop_token.h"

namespace linalgd {

// One GMRES cycle's Hessenberg matrix, kept in upper-triangular form by
// Givens rotations as its columns arrive, and the rotated right-hand side g
// (g[0] = ||r0|| at the cycle's start); |g[j + 1]| is the residual norm after
// step j. Columns hold restart + 1 entries.
class GmresHessenberg {
 public:
  explicit GmresHessenberg(int restart);

  int restart() const { return static_cast<int>(cs_.size()); }
  // Starts a cycle whose residual norm is `beta`: g = (beta, 0, ..., 0).
  void Reset(double beta);
  // Column j, for the Arnoldi step to fill entries 0..j+1 before Rotate(j).
  std::vector<double>& column(int j) { return h_[j]; }
  const std::vector<double>& column(int j) const { return h_[j]; }
  double cs(int j) const { return cs_[j]; }
  double sn(int j) const { return sn_[j]; }
  double g(int i) const { return g_[i]; }
  // Applies rotations 0..j-1 to column j, then the rotation that zeroes its
  // entry j + 1, and rotates g; returns |g[j + 1]|.
  // REQUIRES: 0 <= j < restart(), column j filled for this cycle.
  double Rotate(int j);
  // True when step j's rotated diagonal is 0 (its column was 0: the Krylov
  // space stopped growing), so the cycle cannot take another step.
  bool Breakdown(int j) const { return h_[j][j] == 0; }
  // y with R y = g over steps 0..last by back-substitution (R the rotated,
  // upper-triangular H); a zero diagonal entry gives y[i] = 0.
  std::vector<double> Solve(int last) const;

 private:
  std::vector<std::vector<double>> h_;  // h_[j] is column j
  std::vector<double> cs_, sn_, g_;
};

// How one right-hand side's GMRES ended.
struct GmresOutcome {
  int64_t iterations = 0;
  double relative_residual = 0;  // of the recurrence, |g| / ||b||
  bool converged = false;
  std::string failure;   // when not converged: "gmres: ..." (breakdown or max_iterations)
  absl::Status stopped;  // CANCELLED / DEADLINE_EXCEEDED when `stop` ended it
};

// What GMRES stops on.
struct GmresLimits {
  double tol = 0;
  int64_t max_iterations = 0;
  double bnorm = 0;         // ||b||, > 0
  StopToken stop;           // polled before every step
  absl::string_view where;  // "cpu" or "gpu", for the stop message
};

// A backend's Krylov basis v[0..restart] of n-vectors, the system's x and b,
// and the operations GMRES needs on them. A non-ok status is a library
// error and ends the solve.
class GmresVectors {
 public:
  virtual ~GmresVectors() = default;
  // v[0] = b - a x; returns ||v[0]||.
  virtual absl::StatusOr<double> StartResidual() = 0;
  // v[to] = a M^-1 v[from].
  virtual absl::Status ApplyOperator(int from, int to) = 0;
  virtual absl::StatusOr<double> Dot(int i, int j) = 0;
  // v[to] += alpha v[from].
  virtual absl::Status Axpy(double alpha, int from, int to) = 0;
  virtual absl::StatusOr<double> Norm(int i) = 0;
  // v[i] /= d.
  virtual absl::Status Divide(int i, double d) = 0;
  // x += M^-1 (v[0..y.size()-1] y).
  virtual absl::Status UpdateSolution(const std::vector<double>& y) = 0;
};

// Arnoldi step j with modified Gram-Schmidt: v[j + 1] = a M^-1 v[j]
// orthogonalized against v[0..j] and normalized (unless its norm is 0), its
// coefficients into h's column j (not yet rotated).
absl::Status GmresArnoldi(GmresVectors& v, int j, GmresHessenberg& h);

// Restarted GMRES from the x that `v` holds: cycles of at most h.restart()
// steps, each ended by convergence, a breakdown (zero rotated diagonal) or
// max_iterations, then x is updated and the true residual b - a x starts the
// next cycle. Converged when the residual (the recurrence's, or the true one
// at a cycle's start) is at most tol ||b||; a non-finite residual is a
// breakdown. A stop request gives an outcome with `stopped` set.
absl::StatusOr<GmresOutcome> RunGmres(GmresVectors& v, const GmresLimits& limits,
                                      GmresHessenberg& h);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_GMRES_STEP_H_
