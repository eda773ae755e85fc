#include "server/backend/plan.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

Shape BatchDims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// numpy broadcasting of two shapes; `what` names them in the error.
absl::StatusOr<Shape> BroadcastShapes(const Shape& x, const Shape& y, absl::string_view what) {
  const size_t rank = std::max(x.size(), y.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dx = i < rank - x.size() ? 1 : x[i - (rank - x.size())];
    const int64_t dy = i < rank - y.size() ? 1 : y[i - (rank - y.size())];
    if (dx != dy && dx != 1 && dy != 1) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": batch dims ", ShapeString(x), " and ",
                                                     ShapeString(y), " do not broadcast (", dx,
                                                     " vs ", dy, ")"));
    }
    out[i] = dx == 1 ? dy : dx;  // a 1 stretches to the other, 0 included
  }
  return out;
}

// The element count of `dims` (1 for none) when the product of its nonzero
// dims is at most `limit` (so that no product of them overflows, even when
// a zero dim makes the count 0); the message names `field` and the limit
// otherwise. Never overflows.
absl::StatusOr<int64_t> CheckedCount(const Shape& dims, int64_t limit, absl::string_view field,
                                     absl::string_view what) {
  int64_t nonzero = 1;
  bool empty = false;
  for (const int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", ShapeString(dims), " has a negative dim"));
    }
    if (d > 0 && nonzero > limit / d) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", ShapeString(dims),
                                                     " has more than ", limit, " ", what,
                                                     " (zero dims aside)"));
    }
    if (d == 0) empty = true;
    if (d > 0) nonzero *= d;
  }
  return empty ? 0 : nonzero;
}

// Checks the broadcast batch and the result [batch..., rows, cols] against
// `limits` (before any offset vector is built).
absl::Status CheckPlanSize(const Shape& batch, int64_t rows, int64_t cols, const PlanLimits& limits,
                           absl::string_view out) {
  LINALGD_RETURN_IF_ERROR(CheckedCount(batch, limits.max_batch, "a, b: broadcast batch dims",
                                       "matrices, the batch limit (--max-batch-matrices)")
                              .status());
  Shape full;
  full.reserve(batch.size() + 2);
  full = batch;
  full.push_back(rows);
  full.push_back(cols);
  return CheckedCount(full, limits.max_out_elements, absl::StrCat(out, ".shape"),
                      "elements, the per-tensor limit (--max-elements)")
      .status();
}

// Offsets (in elements) of operand matrices for each element of out_batch.
// `batch` are the operand's own batch dims; `matrix` its matrix size.
std::vector<int64_t> BatchOffsets(const Shape& batch, const Shape& out_batch, int64_t matrix) {
  const size_t rank = out_batch.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = matrix;
  for (size_t i = rank; i-- > 0;) {
    const size_t j = i + batch.size();
    if (j < rank) continue;  // missing leading dim: broadcast
    const int64_t d = batch[j - rank];
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  const int64_t count = NumElements(out_batch);
  std::vector<int64_t> offsets(count);
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t n = 0; n < count; ++n) {
    offsets[n] = off;
    for (size_t i = rank; i-- > 0;) {  // odometer increment
      ++idx[i];
      off += stride[i];
      if (idx[i] < out_batch[i]) break;
      off -= stride[i] * idx[i];
      idx[i] = 0;
    }
  }
  return offsets;
}

// Complex operands take complex scalars and no activation; real operands
// take real scalars.
absl::Status CheckComplexMatmul(const MatmulOp& op) {
  const DType in = op.a.dtype;
  if (!IsComplex(in)) {
    for (const auto& [v, name] :
         {std::pair{op.alpha_imag, "alpha_imag"}, std::pair{op.beta_imag, "beta_imag"}}) {
      if (v != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": ", v, " is nonzero, but ", DTypeName(in), " inputs take real scalars only"));
      }
    }
    return absl::OkStatus();
  }
  const Epilogue e = op.epilogue;
  if (e != Epilogue::kNone && e != Epilogue::kBias) {
    return absl::InvalidArgumentError(
        absl::StrCat("epilogue: ", EpilogueName(e), " is not supported for ", DTypeName(in),
                     " inputs (complex products take the none and bias epilogues)"));
  }
  return absl::OkStatus();
}

absl::Status CheckMatmulDtypes(const MatmulOp& op) {
  if (op.a.dtype != op.b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "b.dtype: ", DTypeName(op.b.dtype), " differs from a.dtype ", DTypeName(op.a.dtype)));
  }
  LINALGD_RETURN_IF_ERROR(CheckComplexMatmul(op));
  const DType in = op.a.dtype, out = op.out_dtype;
  const bool half_in = in == DType::kF16 || in == DType::kBF16;
  if (out != in && !(half_in && out == DType::kF32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output_dtype: ", DTypeName(out), " is not supported for ", DTypeName(in),
                     " inputs (same dtype, or f32 for f16/bf16 inputs)"));
  }
  const ComputeMode cm = op.compute;
  const bool ok = cm == ComputeMode::kDefault || in == DType::kF32 ||
                  (in == DType::kF16 && cm == ComputeMode::kFast16F && out == DType::kF16);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("compute_mode: ", ComputeModeName(cm), " is not supported for ", DTypeName(in),
                     " inputs (tf32, fast_16f and fast_16bf need f32 inputs; f16 inputs with f16 "
                     "output also allow fast_16f)"));
  }
  for (const auto& [t, name] : {std::pair{op.c, "c"}, std::pair{op.bias, "bias"}}) {
    if (t && t->dtype != out) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ".dtype: ", DTypeName(t->dtype), " must equal the output dtype ", DTypeName(out)));
    }
  }
  return absl::OkStatus();
}

absl::Status PlanBias(const MatmulOp& op, MatmulPlan& plan) {
  const bool wants = EpilogueHasBias(op.epilogue);
  if (!wants) {
    if (op.bias) {
      return absl::InvalidArgumentError(
          absl::StrCat("bias: given, but epilogue ", EpilogueName(op.epilogue), " takes no bias"));
    }
    return absl::OkStatus();
  }
  if (!op.bias) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias: required by epilogue ", EpilogueName(op.epilogue)));
  }
  const Shape& s = op.bias->shape;
  if ((s.size() == 1 && s[0] == plan.n) || (s.size() == 2 && s[0] == 1 && s[1] == plan.n)) {
    plan.bias_per_row = false;
  } else if (s.size() == 2 && s[0] == plan.m && s[1] == 1) {
    plan.bias_per_row = true;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "bias.shape: ", ShapeString(s), " must be [", plan.n, "] or [1, ", plan.n,
        "] (per column) or [", plan.m, ", 1] (per row) for an output of ", plan.m, " x ", plan.n));
  }
  return absl::OkStatus();
}

absl::Status PlanC(const MatmulOp& op, MatmulPlan& plan) {
  if (!op.c) {
    if (op.beta != 0 || op.beta_imag != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          op.beta != 0 ? "beta: " : "beta_imag: ", op.beta != 0 ? op.beta : op.beta_imag,
          " needs c, which is not set"));
    }
    return absl::OkStatus();
  }
  const Shape& cs = op.c->shape;
  auto b = BroadcastShapes(cs, plan.out_shape, "c");
  if (!b.ok() || *b != plan.out_shape) {
    return absl::InvalidArgumentError(absl::StrCat("c.shape: ", ShapeString(cs),
                                                   " does not broadcast to the output shape ",
                                                   ShapeString(plan.out_shape)));
  }
  plan.c_full_matrix = cs.size() >= 2 && cs[cs.size() - 2] == plan.m && cs.back() == plan.n;
  if (plan.c_full_matrix) {
    plan.c_offsets = BatchOffsets(BatchDims(cs), BatchDims(plan.out_shape), plan.m * plan.n);
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<int64_t> MatmulPlan::UniformStride(const std::vector<int64_t>& offsets) {
  if (offsets.size() < 2) return 0;
  const int64_t step = offsets[1] - offsets[0];
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] - offsets[i - 1] != step) return std::nullopt;
  }
  return step;
}

absl::StatusOr<MatmulPlan> PlanMatmul(const MatmulOp& op, const PlanLimits& limits) {
  LINALGD_RETURN_IF_ERROR(CheckMatmulDtypes(op));
  MatmulPlan plan;
  const int64_t ar = op.a.rows(), ac = op.a.cols(), br = op.b.rows(), bc = op.b.cols();
  plan.m = op.trans_a ? ac : ar;
  plan.k = op.trans_a ? ar : ac;
  const int64_t kb = op.trans_b ? bc : br;
  plan.n = op.trans_b ? br : bc;
  if (plan.k != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("b.shape: ", ShapeString(op.b.shape), " does not match a.shape ",
                     ShapeString(op.a.shape), " (contraction dims ", plan.k, " vs ", kb,
                     op.trans_a || op.trans_b ? ", after transposes" : "", ")"));
  }
  const Shape ab = BatchDims(op.a.shape), bb = BatchDims(op.b.shape);
  LINALGD_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(ab, bb, "a, b"));
  LINALGD_RETURN_IF_ERROR(CheckPlanSize(batch, plan.m, plan.n, limits, "out"));
  plan.batch = NumElements(batch);
  plan.a_offsets = BatchOffsets(ab, batch, ar * ac);
  plan.b_offsets = BatchOffsets(bb, batch, br * bc);
  plan.out_shape.reserve(batch.size() + 2);
  plan.out_shape = batch;
  plan.out_shape.push_back(plan.m);
  plan.out_shape.push_back(plan.n);
  LINALGD_RETURN_IF_ERROR(PlanC(op, plan));
  LINALGD_RETURN_IF_ERROR(PlanBias(op, plan));
  return plan;
}

absl::StatusOr<SolvePlan> PlanSolve(const SolveOp& op, const PlanLimits& limits) {
  if (!IsSolveDType(op.a.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a.dtype: solve supports f32, f64, c64 and c128, not ", DTypeName(op.a.dtype)));
  }
  if (op.b.dtype != op.a.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "b.dtype: ", DTypeName(op.b.dtype), " differs from a.dtype ", DTypeName(op.a.dtype)));
  }
  SolvePlan plan;
  plan.m = op.a.rows();
  plan.n = op.a.cols();
  plan.k = op.b.cols();
  const bool square_only = op.method == SolveMethod::kLu || op.method == SolveMethod::kCholesky;
  if (square_only && plan.m != plan.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.shape: ", ShapeString(op.a.shape), " is not square; method ",
                     SolveMethodName(op.method), " needs a square a (use qr or lstsq)"));
  }
  if (op.b.rows() != plan.m) {
    return absl::InvalidArgumentError(absl::StrCat("b.shape: ", ShapeString(op.b.shape), " needs ",
                                                   plan.m, " rows to match a.shape ",
                                                   ShapeString(op.a.shape), ", has ", op.b.rows()));
  }
  const Shape ab = BatchDims(op.a.shape), bb = BatchDims(op.b.shape);
  LINALGD_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(ab, bb, "a, b"));
  LINALGD_RETURN_IF_ERROR(CheckPlanSize(batch, plan.n, plan.k, limits, "x"));
  plan.batch = NumElements(batch);
  plan.a_offsets = BatchOffsets(ab, batch, plan.m * plan.n);
  plan.b_offsets = BatchOffsets(bb, batch, plan.m * plan.k);
  plan.x_shape.reserve(batch.size() + 2);
  plan.x_shape = batch;
  plan.x_shape.push_back(plan.n);
  plan.x_shape.push_back(plan.k);
  return plan;
}

bool IsSolveDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || IsComplex(dtype);
}

double MatmulFlops(const MatmulPlan& plan) {
  return 2.0 * static_cast<double>(plan.batch) * plan.m * plan.n * plan.k;
}

Tensor BroadcastTo(const TensorView& t, const Shape& shape) {
  Tensor out(t.dtype, shape);
  const size_t esize = DTypeSize(t.dtype);
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t i = rank; i-- > 0;) {
    if (i + t.shape.size() < rank) continue;
    const int64_t d = t.shape[i + t.shape.size() - rank];
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  const int64_t count = NumElements(shape);
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;
  std::byte* dst = out.mutable_data();
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(dst + n * esize, t.data + src * esize, esize);
    for (size_t i = rank; i-- > 0;) {
      ++idx[i];
      src += stride[i];
      if (idx[i] < shape[i]) break;
      src -= stride[i] * idx[i];
      idx[i] = 0;
    }
  }
  return out;
}

}  // namespace linalgd
