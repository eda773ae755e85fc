#include "server/gpu/sparse_gpu_krylov.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"
#include "server/linalg/gmres_step.h"

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
  LINALGD_ASSIGN_OR_RETURN(const double r0n, pb.v.Nrm2(r));
  if (r0n / pb.bnorm <= pb.tol) return Done(0, r0n / pb.bnorm, true);  // x already solves it
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
  LINALGD_ASSIGN_OR_RETURN(const double r0n, pb.v.Nrm2(r));
  if (r0n / pb.bnorm <= pb.tol) return Done(0, r0n / pb.bnorm, true);  // x already solves it
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
    LINALGD_ASSIGN_OR_RETURN(const double tn, pb.v.Nrm2(t));  // t.t with no square of t's scale
    LINALGD_ASSIGN_OR_RETURN(const double ts, pb.v.Dot(t, r));
    omega = tn > 0 ? ts / tn / tn : 0;
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

// GMRES's Krylov basis on the device, for the shared GMRES step (the
// Hessenberg system stays on the host).
class GpuGmresVectors final : public GmresVectors {
 public:
  static absl::StatusOr<GpuGmresVectors> Create(Problem& pb, const void* b, void* x) {
    LINALGD_ASSIGN_OR_RETURN(Work basis,
                             Work::Create(pb.ctx, pb.a.dtype(), pb.a.n(), kGmresRestart + 1));
    LINALGD_ASSIGN_OR_RETURN(Work scratch, Work::Create(pb.ctx, pb.a.dtype(), pb.a.n(), 2));
    return GpuGmresVectors(pb, b, x, std::move(basis), std::move(scratch));
  }

  absl::StatusOr<double> StartResidual() override {  // v[0] = b - a x
    LINALGD_RETURN_IF_ERROR(pb_.v.Copy(b_, basis_[0]));
    LINALGD_RETURN_IF_ERROR(pb_.a.Multiply(pb_.ctx, x_, basis_[0], -1.0, 1.0));
    return pb_.v.Nrm2(basis_[0]);
  }
  absl::Status ApplyOperator(int from, int to) override {
    LINALGD_RETURN_IF_ERROR(pb_.m.Apply(pb_.ctx, basis_[from], scratch_[1]));
    return pb_.a.Multiply(pb_.ctx, scratch_[1], basis_[to]);
  }
  absl::StatusOr<double> Dot(int i, int j) override { return pb_.v.Dot(basis_[i], basis_[j]); }
  absl::Status Axpy(double alpha, int from, int to) override {
    return pb_.v.Axpy(alpha, basis_[from], basis_[to]);
  }
  absl::StatusOr<double> Norm(int i) override { return pb_.v.Nrm2(basis_[i]); }
  absl::Status Divide(int i, double d) override { return pb_.v.Scal(1.0 / d, basis_[i]); }
  absl::Status UpdateSolution(const std::vector<double>& y) override {
    void *u = scratch_[0], *z = scratch_[1];
    LINALGD_RETURN_IF_ERROR(pb_.v.Zero(u));
    for (size_t i = 0; i < y.size(); ++i) {
      LINALGD_RETURN_IF_ERROR(pb_.v.Axpy(y[i], basis_[static_cast<int>(i)], u));
    }
    LINALGD_RETURN_IF_ERROR(pb_.m.Apply(pb_.ctx, u, z));
    return pb_.v.Axpy(1.0, z, x_);
  }

 private:
  GpuGmresVectors(Problem& pb, const void* b, void* x, Work basis, Work scratch)
      : pb_(pb), b_(b), x_(x), basis_(std::move(basis)), scratch_(std::move(scratch)) {}

  Problem& pb_;
  const void* b_;
  void* x_;
  Work basis_;    // kGmresRestart + 1 vectors
  Work scratch_;  // u and z
};

absl::StatusOr<GpuIterationOutcome> RunGmres(Problem& pb, const void* b, void* x) {
  LINALGD_ASSIGN_OR_RETURN(GpuGmresVectors v, GpuGmresVectors::Create(pb, b, x));
  GmresHessenberg h(kGmresRestart);
  const GmresLimits limits{pb.tol, pb.max_iterations, pb.bnorm, pb.stop, "gpu"};
  LINALGD_ASSIGN_OR_RETURN(GmresOutcome o, linalgd::RunGmres(v, limits, h));
  if (!o.stopped.ok()) return o.stopped;
  return Done(o.iterations, o.relative_residual, o.converged, std::move(o.failure));
}

absl::StatusOr<GpuIterationOutcome> Run(Problem& pb, SparseMethod method, const void* b, void* x) {
  switch (method) {
    case SparseMethod::kCg:
      return Cg(pb, b, x);
    case SparseMethod::kBicgstab:
      return Bicgstab(pb, b, x);
    default:
      return RunGmres(pb, b, x);
  }
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
  // As on the CPU (sparse_iterative.cc): the solve runs on b / 2^e and x / 2^e with
  // ||b / 2^e|| in [1, 2), so that no dot product (r.z, p^T a p, t.s) under- or overflows for
  // a finite b (f32 squares past its range from |b| ~ 1e-19 and 1e19); powers of two scale
  // exactly, and x is scaled back.
  const int limit = a.dtype() == DType::kF32 ? 126 : 1022;
  const int e = std::clamp(std::ilogb(pb.bnorm), -limit, limit);
  if (e == 0) return Run(pb, method, b, x);
  LINALGD_ASSIGN_OR_RETURN(Work scaled, Work::Create(ctx, a.dtype(), a.n(), 1));
  LINALGD_RETURN_IF_ERROR(pb.v.Copy(b, scaled[0]));
  LINALGD_RETURN_IF_ERROR(pb.v.Scal(std::ldexp(1.0, -e), scaled[0]));
  LINALGD_RETURN_IF_ERROR(pb.v.Scal(std::ldexp(1.0, -e), x));
  pb.bnorm = std::ldexp(pb.bnorm, -e);
  absl::StatusOr<GpuIterationOutcome> out = Run(pb, method, scaled[0], x);
  LINALGD_RETURN_IF_ERROR(pb.v.Scal(std::ldexp(1.0, e), x));
  return out;
}

}  // namespace linalgd::gpu
