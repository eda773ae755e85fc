#include "server/gpu/sparse_gpu_krylov.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {
namespace {

// n-element device work vectors of one dtype.
class Work {
 public:
  static absl::StatusOr<Work> Create(GpuContext& ctx, DType t, int64_t n, int count) {
    Work w;
    for (int i = 0; i < count; ++i) {
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, ctx.Alloc(n * DTypeSize(t)));
      w.v_.push_back(std::move(b));
    }
    return w;
  }
  void* operator[](int i) { return v_[i].data(); }

 private:
  std::vector<DeviceBuffer> v_;
};

struct Problem {
  GpuContext& ctx;
  DeviceCsr& a;
  GpuPreconditioner& m;
  const DeviceVectors v;
  double tol;
  int64_t max_iterations;
  double bnorm;
  const StopToken& stop;
};

absl::Status CheckStop(const Problem& pb, absl::string_view name, int64_t it) {
  if (!pb.stop.stop_requested()) return absl::OkStatus();
  return pb.stop.Check(absl::StrCat("gpu: ", name, " at iteration ", it));
}

GpuIterationOutcome Done(int64_t it, double rel, bool converged, std::string failure = "") {
  return GpuIterationOutcome{it, rel, converged, std::move(failure)};
}

std::string NotConverged(absl::string_view name, int64_t it, double rel, double tol) {
  return absl::StrCat(name, ": relative residual ", rel, " after ", it,
                      " iterations (max_iterations), tolerance ", tol);
}

absl::StatusOr<GpuIterationOutcome> Cg(Problem& pb, const void* b, void* x) {
  LINALGD_ASSIGN_OR_RETURN(Work w, Work::Create(pb.ctx, pb.a.dtype(), pb.a.n(), 4));
  void *r = w[0], *z = w[1], *p = w[2], *q = w[3];
  LINALGD_RETURN_IF_ERROR(pb.v.Copy(b, r));  // r = b - a x
  LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, x, r, -1.0, 1.0));
  LINALGD_RETURN_IF_ERROR(pb.m.Apply(pb.ctx, r, z));
  LINALGD_RETURN_IF_ERROR(pb.v.Copy(z, p));
  LINALGD_ASSIGN_OR_RETURN(double rz, pb.v.Dot(r, z));
  double rel = 1;
  for (int64_t it = 1; it <= pb.max_iterations; ++it) {
    LINALGD_RETURN_IF_ERROR(CheckStop(pb, "cg", it));
    LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, p, q));
    LINALGD_ASSIGN_OR_RETURN(const double pq, pb.v.Dot(p, q));
    if (!(pq > 0)) {
      return Done(it, rel, false,
                  absl::StrCat("cg: breakdown at iteration ", it, " (p^T a p = ", pq,
                               ": a is not positive definite)"));
    }
    const double alpha = rz / pq;
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(alpha, p, x));
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(-alpha, q, r));
    LINALGD_ASSIGN_OR_RETURN(const double rn, pb.v.Nrm2(r));
    rel = rn / pb.bnorm;
    if (rel <= pb.tol) return Done(it, rel, true);
    LINALGD_RETURN_IF_ERROR(pb.m.Apply(pb.ctx, r, z));
    LINALGD_ASSIGN_OR_RETURN(const double rz_next, pb.v.Dot(r, z));
    LINALGD_RETURN_IF_ERROR(pb.v.Scal(rz_next / rz, p));  // p = z + beta p
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(1.0, z, p));
    rz = rz_next;
  }
  return Done(pb.max_iterations, rel, false, NotConverged("cg", pb.max_iterations, rel, pb.tol));
}

absl::StatusOr<GpuIterationOutcome> Bicgstab(Problem& pb, const void* b, void* x) {
  LINALGD_ASSIGN_OR_RETURN(Work w, Work::Create(pb.ctx, pb.a.dtype(), pb.a.n(), 7));
  void *r = w[0], *rhat = w[1], *p = w[2], *v = w[3], *ph = w[4], *sh = w[5], *t = w[6];
  LINALGD_RETURN_IF_ERROR(pb.v.Copy(b, r));  // r = b - a x
  LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, x, r, -1.0, 1.0));
  LINALGD_RETURN_IF_ERROR(pb.v.Copy(r, rhat));
  LINALGD_RETURN_IF_ERROR(pb.v.Zero(p));
  LINALGD_RETURN_IF_ERROR(pb.v.Zero(v));
  double rho = 1, alpha = 1, omega = 1, rel = 1;
  for (int64_t it = 1; it <= pb.max_iterations; ++it) {
    LINALGD_RETURN_IF_ERROR(CheckStop(pb, "bicgstab", it));
    LINALGD_ASSIGN_OR_RETURN(const double rho_next, pb.v.Dot(rhat, r));
    if (rho_next == 0 || omega == 0) {
      return Done(it, rel, false,
                  absl::StrCat("bicgstab: breakdown at iteration ", it, " (rho or omega is 0)"));
    }
    const double beta = (rho_next / rho) * (alpha / omega);
    rho = rho_next;
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(-omega, v, p));  // p = r + beta (p - omega v)
    LINALGD_RETURN_IF_ERROR(pb.v.Scal(beta, p));
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(1.0, r, p));
    LINALGD_RETURN_IF_ERROR(pb.m.Apply(pb.ctx, p, ph));
    LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, ph, v));
    LINALGD_ASSIGN_OR_RETURN(const double rv, pb.v.Dot(rhat, v));
    alpha = rho / rv;
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(-alpha, v, r));  // r is now s
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(alpha, ph, x));
    LINALGD_ASSIGN_OR_RETURN(double rn, pb.v.Nrm2(r));
    rel = rn / pb.bnorm;
    if (rel <= pb.tol) return Done(it, rel, true);
    LINALGD_RETURN_IF_ERROR(pb.m.Apply(pb.ctx, r, sh));
    LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, sh, t));
    LINALGD_ASSIGN_OR_RETURN(const double tt, pb.v.Dot(t, t));
    LINALGD_ASSIGN_OR_RETURN(const double ts, pb.v.Dot(t, r));
    omega = tt > 0 ? ts / tt : 0;
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(omega, sh, x));
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(-omega, t, r));
    LINALGD_ASSIGN_OR_RETURN(rn, pb.v.Nrm2(r));
    rel = rn / pb.bnorm;
    if (rel <= pb.tol) return Done(it, rel, true);
    if (!std::isfinite(rel)) {
      return Done(it, rel, false,
                  absl::StrCat("bicgstab: breakdown at iteration ", it, " (non-finite residual)"));
    }
  }
  return Done(pb.max_iterations, rel, false,
              NotConverged("bicgstab", pb.max_iterations, rel, pb.tol));
}

// GMRES's Krylov basis on the device and its Hessenberg matrix (reduced by
// Givens rotations) on the host.
struct Gmres {
  std::vector<DeviceBuffer> basis;  // kGmresRestart + 1 vectors
  std::vector<std::vector<double>> h;
  std::vector<double> cs, sn, g;
  void* v(int i) { return basis[i].data(); }
};

// Arnoldi step j (modified Gram-Schmidt) and its rotation; returns |g[j+1]|.
absl::StatusOr<double> GmresStep(Problem& pb, Gmres& c, int j, void* z) {
  std::vector<double>& h = c.h[j];
  LINALGD_RETURN_IF_ERROR(pb.m.Apply(pb.ctx, c.v(j), z));
  LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, z, c.v(j + 1)));
  for (int i = 0; i <= j; ++i) {
    LINALGD_ASSIGN_OR_RETURN(h[i], pb.v.Dot(c.v(j + 1), c.v(i)));
    LINALGD_RETURN_IF_ERROR(pb.v.Axpy(-h[i], c.v(i), c.v(j + 1)));
  }
  LINALGD_ASSIGN_OR_RETURN(h[j + 1], pb.v.Nrm2(c.v(j + 1)));
  if (h[j + 1] > 0) LINALGD_RETURN_IF_ERROR(pb.v.Scal(1.0 / h[j + 1], c.v(j + 1)));
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

// x += M^-1 (V y) with H y = g over steps 0..last; u and z are scratch.
absl::Status GmresUpdate(Problem& pb, Gmres& c, int last, void* x, void* u, void* z) {
  std::vector<double> y(last + 1);
  for (int i = last; i >= 0; --i) {
    double s = c.g[i];
    for (int k = i + 1; k <= last; ++k) s -= c.h[k][i] * y[k];
    y[i] = c.h[i][i] != 0 ? s / c.h[i][i] : 0;
  }
  LINALGD_RETURN_IF_ERROR(pb.v.Zero(u));
  for (int i = 0; i <= last; ++i) LINALGD_RETURN_IF_ERROR(pb.v.Axpy(y[i], c.v(i), u));
  LINALGD_RETURN_IF_ERROR(pb.m.Apply(pb.ctx, u, z));
  return pb.v.Axpy(1.0, z, x);
}

absl::StatusOr<GpuIterationOutcome> RunGmres(Problem& pb, const void* b, void* x) {
  Gmres c;
  for (int i = 0; i <= kGmresRestart; ++i) {
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer v, pb.ctx.Alloc(pb.v.bytes()));
    c.basis.push_back(std::move(v));
  }
  c.h.assign(kGmresRestart, std::vector<double>(kGmresRestart + 1));
  c.cs.assign(kGmresRestart, 0);
  c.sn.assign(kGmresRestart, 0);
  LINALGD_ASSIGN_OR_RETURN(Work w, Work::Create(pb.ctx, pb.a.dtype(), pb.a.n(), 2));
  int64_t it = 0;
  double rel = 1;
  while (it < pb.max_iterations) {
    LINALGD_RETURN_IF_ERROR(pb.v.Copy(b, c.v(0)));  // r = b - a x
    LINALGD_RETURN_IF_ERROR(pb.a.Multiply(pb.ctx, x, c.v(0), -1.0, 1.0));
    LINALGD_ASSIGN_OR_RETURN(const double beta, pb.v.Nrm2(c.v(0)));
    rel = beta / pb.bnorm;
    if (rel <= pb.tol) return Done(it, rel, true);
    LINALGD_RETURN_IF_ERROR(pb.v.Scal(1.0 / beta, c.v(0)));
    c.g.assign(kGmresRestart + 1, 0);
    c.g[0] = beta;
    int last = -1;
    for (int j = 0; j < kGmresRestart && it < pb.max_iterations; ++j) {
      LINALGD_RETURN_IF_ERROR(CheckStop(pb, "gmres", it + 1));
      ++it;
      last = j;
      LINALGD_ASSIGN_OR_RETURN(const double res, GmresStep(pb, c, j, w[1]));
      rel = res / pb.bnorm;
      if (rel <= pb.tol || c.h[j][j] == 0) break;
    }
    LINALGD_RETURN_IF_ERROR(GmresUpdate(pb, c, last, x, w[0], w[1]));
    if (!std::isfinite(rel)) {
      return Done(it, rel, false,
                  absl::StrCat("gmres: breakdown at iteration ", it, " (non-finite residual)"));
    }
    if (rel <= pb.tol) return Done(it, rel, true);
  }
  return Done(it, rel, false, NotConverged("gmres", it, rel, pb.tol));
}

}  // namespace

absl::StatusOr<GpuIterationOutcome> GpuKrylov(GpuContext& ctx, SparseMethod method, DeviceCsr& a,
                                              GpuPreconditioner& m, const void* b, void* x,
                                              double tol, int64_t max_iterations, bool x_is_start,
                                              const StopToken& stop) {
  Problem pb{ctx, a, m, DeviceVectors(ctx.hs, a.dtype(), a.n()), tol, max_iterations, 0, stop};
  if (!x_is_start) LINALGD_RETURN_IF_ERROR(pb.v.Zero(x));
  LINALGD_ASSIGN_OR_RETURN(pb.bnorm, pb.v.Nrm2(b));
  if (pb.bnorm == 0) return Done(0, 0, true);
  switch (method) {
    case SparseMethod::kCg:
      return Cg(pb, b, x);
    case SparseMethod::kBicgstab:
      return Bicgstab(pb, b, x);
    default:
      return RunGmres(pb, b, x);
  }
}

}  // namespace linalgd::gpu
