#include "server/cpu/sparse_iterative.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/linalg/gmres_step.h"

namespace linalgd {
namespace {

using Vec = std::vector<double>;

double Dot(const Vec& x, const Vec& y) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}
// OpenBLAS's dnrm2 scales: no square of an entry underflows or overflows.
double Norm(const double* x, size_t n) { return cblas_dnrm2(static_cast<blasint>(n), x, 1); }
double Norm(const Vec& x) { return Norm(x.data(), x.size()); }
void Axpy(double alpha, const Vec& x, Vec& y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] += alpha * x[i];
}

struct Problem {
  const CsrView& a;
  const CpuPreconditioner& m;
  double tol;
  int64_t max_iterations;
  double bnorm;
  const StopToken& stop;
};

// Set when `stop` asks to stop before iteration `it`.
bool Stopped(const StopToken& stop, absl::string_view name, int64_t it, IterationOutcome* o) {
  if (!stop.stop_requested()) return false;
  absl::Status s = stop.Check(absl::StrCat("cpu: ", name, " at iteration ", it));
  if (s.ok()) return false;
  o->iterations = it;
  o->failure = std::string(s.message());
  o->stopped = std::move(s);
  return true;
}

IterationOutcome NotConverged(absl::string_view name, int64_t it, double rel, double tol) {
  IterationOutcome o;
  o.iterations = it;
  o.relative_residual = rel;
  o.failure = absl::StrCat(name, ": relative residual ", rel, " after ", it,
                           " iterations (max_iterations), tolerance ", tol);
  return o;
}

IterationOutcome Breakdown(absl::string_view name, int64_t it, double rel, absl::string_view why) {
  IterationOutcome o;
  o.iterations = it;
  o.relative_residual = rel;
  o.failure = absl::StrCat(name, ": breakdown at iteration ", it, " (", why, ")");
  return o;
}

IterationOutcome Converged(int64_t it, double rel) {
  IterationOutcome o;
  o.iterations = it;
  o.relative_residual = rel;
  o.converged = true;
  return o;
}

IterationOutcome Cg(const Problem& pb, Vec r, Vec& x) {
  const size_t n = r.size();
  Vec z(n), q(n);
  pb.m.Apply(r.data(), z.data());
  Vec p = z;
  double rz = Dot(r, z), rel = 1;
  IterationOutcome stopped;
  for (int64_t it = 1; it <= pb.max_iterations; ++it) {
    if (Stopped(pb.stop, "cg", it, &stopped)) return stopped;
    CsrMultiply(pb.a, p.data(), q.data());
    const double pq = Dot(p, q);
    if (!(pq > 0)) {
      return Breakdown("cg", it, rel,
                       absl::StrCat("p^T a p = ", pq, ": a is not positive definite"));
    }
    const double alpha = rz / pq;
    Axpy(alpha, p, x);
    Axpy(-alpha, q, r);
    rel = Norm(r) / pb.bnorm;
    if (rel <= pb.tol) return Converged(it, rel);
    pb.m.Apply(r.data(), z.data());
    const double rz_next = Dot(r, z);
    const double beta = rz_next / rz;
    rz = rz_next;
    for (size_t i = 0; i < n; ++i) p[i] = z[i] + beta * p[i];
  }
  return NotConverged("cg", pb.max_iterations, rel, pb.tol);
}

IterationOutcome Bicgstab(const Problem& pb, Vec r, Vec& x) {
  const size_t n = r.size();
  const Vec rhat = r;
  Vec p(n, 0.0), v(n, 0.0), ph(n), s(n), sh(n), t(n);
  double rho = 1, alpha = 1, omega = 1, rel = 1;
  IterationOutcome stopped;
  for (int64_t it = 1; it <= pb.max_iterations; ++it) {
    if (Stopped(pb.stop, "bicgstab", it, &stopped)) return stopped;
    const double rho_next = Dot(rhat, r);
    if (rho_next == 0 || omega == 0) return Breakdown("bicgstab", it, rel, "rho or omega is 0");
    const double beta = (rho_next / rho) * (alpha / omega);
    rho = rho_next;
    for (size_t i = 0; i < n; ++i) p[i] = r[i] + beta * (p[i] - omega * v[i]);
    pb.m.Apply(p.data(), ph.data());
    CsrMultiply(pb.a, ph.data(), v.data());
    alpha = rho / Dot(rhat, v);
    for (size_t i = 0; i < n; ++i) s[i] = r[i] - alpha * v[i];
    Axpy(alpha, ph, x);
    rel = Norm(s) / pb.bnorm;
    if (rel <= pb.tol) return Converged(it, rel);
    pb.m.Apply(s.data(), sh.data());
    CsrMultiply(pb.a, sh.data(), t.data());
    const double tn = Norm(t);  // omega = t.s / t.t, with no square of t's scale
    omega = tn > 0 ? Dot(t, s) / tn / tn : 0;
    Axpy(omega, sh, x);
    for (size_t i = 0; i < n; ++i) r[i] = s[i] - omega * t[i];
    rel = Norm(r) / pb.bnorm;
    if (rel <= pb.tol) return Converged(it, rel);
    if (!std::isfinite(rel)) return Breakdown("bicgstab", it, rel, "non-finite residual");
  }
  return NotConverged("bicgstab", pb.max_iterations, rel, pb.tol);
}

// GMRES's Krylov basis, x and b on the host, for the shared GMRES step.
class CpuGmresVectors final : public GmresVectors {
 public:
  CpuGmresVectors(const Problem& pb, const Vec& b, Vec& x)
      : pb_(pb), b_(b), x_(x), v_(kGmresRestart + 1, Vec(b.size())), z_(b.size()) {}

  absl::StatusOr<double> StartResidual() override {
    Vec& r = v_[0];
    CsrMultiply(pb_.a, x_.data(), z_.data());
    for (size_t i = 0; i < r.size(); ++i) r[i] = b_[i] - z_[i];
    return linalgd::Norm(r);
  }
  absl::Status ApplyOperator(int from, int to) override {
    pb_.m.Apply(v_[from].data(), z_.data());
    CsrMultiply(pb_.a, z_.data(), v_[to].data());
    return absl::OkStatus();
  }
  absl::StatusOr<double> Dot(int i, int j) override { return linalgd::Dot(v_[i], v_[j]); }
  absl::Status Axpy(double alpha, int from, int to) override {
    linalgd::Axpy(alpha, v_[from], v_[to]);
    return absl::OkStatus();
  }
  absl::StatusOr<double> Norm(int i) override { return linalgd::Norm(v_[i]); }
  absl::Status Divide(int i, double d) override {
    for (double& e : v_[i]) e /= d;
    return absl::OkStatus();
  }
  absl::Status UpdateSolution(const std::vector<double>& y) override {
    Vec u(x_.size(), 0.0);
    for (size_t i = 0; i < y.size(); ++i) linalgd::Axpy(y[i], v_[i], u);
    pb_.m.Apply(u.data(), z_.data());
    linalgd::Axpy(1.0, z_, x_);
    return absl::OkStatus();
  }

 private:
  const Problem& pb_;
  const Vec& b_;
  Vec& x_;
  std::vector<Vec> v_;  // kGmresRestart + 1 basis vectors
  Vec z_;               // scratch
};

IterationOutcome Gmres(const Problem& pb, const Vec& b, Vec& x) {
  CpuGmresVectors v(pb, b, x);
  GmresHessenberg h(kGmresRestart);
  const GmresLimits limits{pb.tol, pb.max_iterations, pb.bnorm, pb.stop, "cpu"};
  absl::StatusOr<GmresOutcome> run = RunGmres(v, limits, h);
  IterationOutcome o;
  if (!run.ok()) {  // the CPU's vector operations do not fail; kept honest all the same
    o.failure = absl::StrCat("gmres: ", run.status().message());
    return o;
  }
  GmresOutcome& g = *run;
  o.iterations = g.iterations;
  o.relative_residual = g.relative_residual;
  o.converged = g.converged;
  o.failure = std::move(g.failure);
  o.stopped = std::move(g.stopped);
  return o;
}

// The exponent e of b's scaling, b / 2^e with ||b|| / 2^e in [1, 2); 2^e and 2^-e stay normal.
int ScaleExponent(double bnorm) { return std::clamp(std::ilogb(bnorm), -1022, 1022); }

void Scale(const double* from, double factor, size_t n, double* to) {
  for (size_t i = 0; i < n; ++i) to[i] = from[i] * factor;
}

}  // namespace

IterationOutcome CpuKrylov(SparseMethod method, const CsrView& a, const CpuPreconditioner& m,
                           const double* b, double* x, double tol, int64_t max_iterations,
                           const StopToken& stop) {
  IterationOutcome o;
  if (Stopped(stop, SparseMethodName(method), 1, &o)) return o;
  const size_t n = a.rows;
  const double bnorm = Norm(b, n);
  if (bnorm == 0) {
    std::fill(x, x + n, 0.0);
    return Converged(0, 0);
  }
  const int e = ScaleExponent(bnorm);
  Vec bv(n), xv(n);  // b / 2^e and x / 2^e: the system the iteration solves
  Scale(b, std::ldexp(1.0, -e), n, bv.data());
  Scale(x, std::ldexp(1.0, -e), n, xv.data());
  const Problem pb{a, m, tol, max_iterations, Norm(bv), stop};
  Vec r(n);  // b - a x for the starting x
  CsrMultiply(a, xv.data(), r.data());
  for (size_t i = 0; i < n; ++i) r[i] = bv[i] - r[i];
  const double rel = Norm(r) / pb.bnorm;
  if (rel <= tol) return Converged(0, rel);  // x, as given, already solves a x = b
  switch (method) {
    case SparseMethod::kCg:
      o = Cg(pb, std::move(r), xv);
      break;
    case SparseMethod::kBicgstab:
      o = Bicgstab(pb, std::move(r), xv);
      break;
    default:
      Vec().swap(r);  // GMRES starts from its own residual
      o = Gmres(pb, bv, xv);
      break;
  }
  Scale(xv.data(), std::ldexp(1.0, e), n, x);
  return o;
}

KrylovWorkspace CpuKrylovWorkspace(SparseMethod method, Preconditioner pre, DType dtype, int64_t n,
                                   int64_t nnz, int64_t k) {
  KrylovWorkspace w;
  w.vectors = method == SparseMethod::kCg         ? 6
              : method == SparseMethod::kBicgstab ? 10
                                                  : kGmresRestart + 5;
  int64_t doubles = n * w.vectors + 3 * n * k;
  if (pre == Preconditioner::kJacobi) doubles += n;
  if (pre == Preconditioner::kIlu0 || pre == Preconditioner::kIc0) doubles += nnz + 2 * n;
  if (dtype == DType::kF32) doubles += nnz;
  w.bytes = doubles * static_cast<int64_t>(sizeof(double));
  w.what = absl::StrCat(
      "n = ", n,
      method == SparseMethod::kGmres ? absl::StrCat(", restart ", kGmresRestart) : std::string(),
      ": ", w.vectors, " vectors of n doubles, plus b, x and the preconditioner");
  return w;
}

}  // namespace linalgd
