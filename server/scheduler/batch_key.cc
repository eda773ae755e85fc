#include "server/scheduler/batch_key.h"

#include <tuple>

#include "absl/hash/hash.h"

namespace linalgd {
namespace {

auto Tie(const BatchKey& k) {
  return std::tie(k.kind, k.dtype, k.out_dtype, k.a_shape, k.b_shape, k.c_shape, k.bias_shape,
                  k.has_c, k.has_bias, k.trans_a, k.trans_b, k.check_finite, k.alpha, k.beta,
                  k.alpha_imag, k.beta_imag, k.epilogue, k.compute, k.method, k.allow_fallback,
                  k.refine, k.lstsq_rcond);
}

BatchKey MatmulKey(const MatmulOp& op) {
  BatchKey k;
  k.kind = OpKind::kMatmul;
  k.dtype = op.a.dtype;
  k.out_dtype = op.out_dtype;
  k.a_shape = op.a.shape;
  k.b_shape = op.b.shape;
  k.has_c = op.c.has_value();
  if (op.c) k.c_shape = op.c->shape;
  k.has_bias = op.bias.has_value();
  if (op.bias) k.bias_shape = op.bias->shape;
  k.trans_a = op.trans_a;
  k.trans_b = op.trans_b;
  k.check_finite = op.check_finite;
  k.alpha = op.alpha;
  k.beta = op.beta;
  k.alpha_imag = op.alpha_imag;
  k.beta_imag = op.beta_imag;
  k.epilogue = op.epilogue;
  k.compute = op.compute;
  return k;
}

BatchKey SolveKey(const SolveOp& op) {
  BatchKey k;
  k.kind = OpKind::kSolve;
  k.dtype = k.out_dtype = op.a.dtype;
  k.a_shape = op.a.shape;
  k.b_shape = op.b.shape;
  k.method = op.method;
  k.allow_fallback = op.allow_fallback;
  k.refine = op.refine;
  k.lstsq_rcond = op.lstsq_rcond.value_or(-1.0);
  return k;
}

}  // namespace

bool BatchKey::operator==(const BatchKey& o) const {
  return hash == o.hash && Tie(*this) == Tie(o);
}

std::optional<BatchKey> BatchKeyOf(const Job& job) {
  BatchKey k;
  if (job.spec().kind == OpKind::kMatmul && job.matmul_op() != nullptr) {
    k = MatmulKey(*job.matmul_op());
  } else if (job.spec().kind == OpKind::kSolve && job.solve_op() != nullptr) {
    k = SolveKey(*job.solve_op());
  } else {
    return std::nullopt;
  }
  k.hash = absl::HashOf(static_cast<int>(k.kind), static_cast<int>(k.dtype),
                        static_cast<int>(k.out_dtype), k.a_shape, k.b_shape, k.c_shape,
                        k.bias_shape, k.has_c, k.has_bias, k.trans_a, k.trans_b, k.check_finite,
                        k.alpha, k.beta, k.alpha_imag, k.beta_imag, static_cast<int>(k.epilogue),
                        static_cast<int>(k.compute), static_cast<int>(k.method), k.allow_fallback,
                        k.refine, k.lstsq_rcond);
  return k;
}

}  // namespace linalgd
