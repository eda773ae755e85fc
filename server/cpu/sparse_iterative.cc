#include "server/cpu/sparse_iterative.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

using Vec = std::vector<double>;

double Dot(const Vec& x, const Vec& y) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}
double Norm(const Vec& x) { return std::sqrt(Dot(x, x)); }
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

// Set when the problem's stop token asks to stop before iteration `it`.
bool Stopped(const Problem& pb, absl::string_view name, int64_t it, IterationOutcome* o) {
  if (!pb.stop.stop_requested()) return false;
  o->iterations = it;
  o->stopped = pb.stop.Check(absl::StrCat("cpu: ", name, " at iteration ", it));
  o->failure = std::string(o->stopped.message());
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
    if (Stopped(pb, "cg", it, &stopped)) return stopped;
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
    if (Stopped(pb, "bicgstab", it, &stopped)) return stopped;
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
    const double tt = Dot(t, t);
    omega = tt > 0 ? Dot(t, s) / tt : 0;
    Axpy(omega, sh, x);
    for (size_t i = 0; i < n; ++i) r[i] = s[i] - omega * t[i];
    rel = Norm(r) / pb.bnorm;
    if (rel <= pb.tol) return Converged(it, rel);
    if (!std::isfinite(rel)) return Breakdown("bicgstab", it, rel, "non-finite residual");
  }
  return NotConverged("bicgstab", pb.max_iterations, rel, pb.tol);
}

// One GMRES cycle's Krylov basis and the Hessenberg matrix reduced by Givens
// rotations.
struct GmresCycle {
  std::vector<Vec> v;  // restart + 1 basis vectors
  std::vector<Vec> h;  // h[j] is column j, restart + 1 entries
  Vec cs, sn, g;
  explicit GmresCycle(size_t n)
      : v(kGmresRestart + 1, Vec(n)),
        h(kGmresRestart, Vec(kGmresRestart + 1)),
        cs(kGmresRestart),
        sn(kGmresRestart),
        g(kGmresRestart + 1) {}
};

// Arnoldi step j (modified Gram-Schmidt) and its Givens rotation; returns
// |g[j + 1]|, the residual norm after step j.
double GmresStep(const Problem& pb, GmresCycle& c, int j, Vec& z) {
  Vec& w = c.v[j + 1];
  Vec& h = c.h[j];
  pb.m.Apply(c.v[j].data(), z.data());
  CsrMultiply(pb.a, z.data(), w.data());
  for (int i = 0; i <= j; ++i) {
    h[i] = Dot(w, c.v[i]);
    Axpy(-h[i], c.v[i], w);
  }
  h[j + 1] = Norm(w);
  if (h[j + 1] > 0) {
    for (double& e : w) e /= h[j + 1];
  }
  for (int i = 0; i < j; ++i) {
    const double t = c.cs[i] * h[i] + c.sn[i] * h[i + 1];
    h[i + 1] = -c.sn[i] * h[i] + c.cs[i] * h[i + 1];
    h[i] = t;
  }
  const double d = std::hypot(h[j], h[j + 1]);
  c.cs[j] = d > 0 ? h[j] / d : 1;
  c.sn[j] = d > 0 ? h[j + 1] / d : 0;
  h[j] = d;
  h[j + 1] = 0;
  c.g[j + 1] = -c.sn[j] * c.g[j];
  c.g[j] = c.cs[j] * c.g[j];
  return std::abs(c.g[j + 1]);
}

// x += M^-1 V y, where H y = g (steps 0..last).
void GmresUpdate(const Problem& pb, GmresCycle& c, int last, Vec& x, Vec& z) {
  Vec y(last + 1);
  for (int i = last; i >= 0; --i) {
    double s = c.g[i];
    for (int k = i + 1; k <= last; ++k) s -= c.h[k][i] * y[k];
    y[i] = c.h[i][i] != 0 ? s / c.h[i][i] : 0;
  }
  Vec u(x.size(), 0.0);
  for (int i = 0; i <= last; ++i) Axpy(y[i], c.v[i], u);
  pb.m.Apply(u.data(), z.data());
  Axpy(1.0, z, x);
}

IterationOutcome Gmres(const Problem& pb, const Vec& b, Vec& x) {
  const size_t n = b.size();
  GmresCycle c(n);
  Vec z(n), ax(n);
  int64_t it = 0;
  double rel = 1;
  while (it < pb.max_iterations) {
    CsrMultiply(pb.a, x.data(), ax.data());
    for (size_t i = 0; i < n; ++i) c.v[0][i] = b[i] - ax[i];
    const double beta = Norm(c.v[0]);
    rel = beta / pb.bnorm;
    if (rel <= pb.tol) return Converged(it, rel);
    for (double& e : c.v[0]) e /= beta;
    std::fill(c.g.begin(), c.g.end(), 0.0);
    c.g[0] = beta;
    int last = -1;
    for (int j = 0; j < kGmresRestart && it < pb.max_iterations; ++j) {
      IterationOutcome stopped;
      if (Stopped(pb, "gmres", it + 1, &stopped)) return stopped;
      ++it;
      last = j;
      rel = GmresStep(pb, c, j, z) / pb.bnorm;
      if (rel <= pb.tol || c.h[j][j] == 0) break;
    }
    GmresUpdate(pb, c, last, x, z);
    if (!std::isfinite(rel)) return Breakdown("gmres", it, rel, "non-finite residual");
    if (rel <= pb.tol) return Converged(it, rel);
  }
  return NotConverged("gmres", it, rel, pb.tol);
}

}  // namespace

IterationOutcome CpuKrylov(SparseMethod method, const CsrView& a, const CpuPreconditioner& m,
                           const double* b, double* x, double tol, int64_t max_iterations,
                           const StopToken& stop) {
  const size_t n = a.rows;
  Vec bv(b, b + n), xv(x, x + n);
  const double bnorm = Norm(bv);
  if (bnorm == 0) {
    std::fill(x, x + n, 0.0);
    return Converged(0, 0);
  }
  const Problem pb{a, m, tol, max_iterations, bnorm, stop};
  Vec r0(n);  // b - a x for the starting x
  CsrMultiply(a, xv.data(), r0.data());
  for (size_t i = 0; i < n; ++i) r0[i] = bv[i] - r0[i];
  IterationOutcome o;
  switch (method) {
    case SparseMethod::kCg:
      o = Cg(pb, r0, xv);
      break;
    case SparseMethod::kBicgstab:
      o = Bicgstab(pb, r0, xv);
      break;
    default:
      o = Gmres(pb, bv, xv);
      break;
  }
  std::copy(xv.begin(), xv.end(), x);
  return o;
}

}  // namespace linalgd
