#include "server/scheduler/matmul_split.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/scheduler/job_cost.h"

namespace linalgd {
namespace {

// rows x cols elements of a row-major matrix with row length `ld` at `base`,
// starting at (r0, c0), copied into a new [rows, cols] tensor.
std::shared_ptr<Tensor> CopyBlock(DType dtype, const std::byte* base, int64_t ld, int64_t r0,
                                  int64_t c0, int64_t rows, int64_t cols) {
  const size_t es = DTypeSize(dtype);
  auto t = std::make_shared<Tensor>(dtype, Shape{rows, cols});
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(t->mutable_data() + r * cols * es, base + ((r0 + r) * ld + c0) * es, cols * es);
  }
  return t;
}

TensorView ViewAt(DType dtype, const std::byte* base, int64_t element_offset, Shape shape) {
  TensorView v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = base + element_offset * static_cast<int64_t>(DTypeSize(dtype));
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MatmulSplitter>> MatmulSplitter::Create(const MatmulOp& op,
                                                                       const MatmulPlan& plan,
                                                                       int64_t max_piece_bytes) {
  std::unique_ptr<MatmulSplitter> s(new MatmulSplitter(op, plan));
  if (op.c && !plan.c_full_matrix) {
    s->c_full_ = std::make_shared<Tensor>(BroadcastTo(*op.c, plan.out_shape));
  }
  const int64_t per_matrix = s->TileBytes(plan.m, plan.n);
  if (per_matrix <= max_piece_bytes) {
    s->chunk_ = std::max<int64_t>(1, max_piece_bytes / per_matrix);
    s->num_pieces_ = (plan.batch + s->chunk_ - 1) / s->chunk_;
    return s;
  }
  if (!s->ChooseTiles(max_piece_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat("matmul with K = ", plan.k, " does not fit ",
                                                     max_piece_bytes,
                                                     " device bytes even as 1 x 1 output tiles"));
  }
  s->num_pieces_ = plan.batch * s->row_tiles_ * s->col_tiles_;
  return s;
}

int64_t MatmulSplitter::TileBytes(int64_t rows, int64_t cols) const {
  const int64_t ein = DTypeSize(op_.a.dtype), eout = DTypeSize(op_.out_dtype);
  int64_t bytes = ein * (rows * plan_.k + plan_.k * cols) + eout * rows * cols;
  if (op_.c) bytes += eout * rows * cols;
  if (op_.bias) bytes += eout * (plan_.bias_per_row ? rows : cols);
  return bytes;
}

bool MatmulSplitter::ChooseTiles(int64_t max_piece_bytes) {
  for (int64_t cols = plan_.n; cols >= 1; cols = cols == 1 ? 0 : (cols + 1) / 2) {
    int64_t lo = 0, hi = plan_.m;  // largest rows with TileBytes(rows, cols) <= max
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (TileBytes(mid, cols) <= max_piece_bytes)
        lo = mid;
      else
        hi = mid - 1;
    }
    if (lo >= 1) {
      tile_rows_ = lo;
      tile_cols_ = cols;
      row_tiles_ = (plan_.m + lo - 1) / lo;
      col_tiles_ = (plan_.n + cols - 1) / cols;
      return true;
    }
  }
  return false;
}

TensorView MatmulSplitter::CView(int64_t matrix) const {
  const TensorView& c = c_full_ ? c_full_->view() : *op_.c;
  const int64_t off = c_full_ ? matrix * plan_.m * plan_.n : plan_.c_offsets[matrix];
  return ViewAt(c.dtype, c.data, off, {plan_.m, plan_.n});
}

absl::StatusOr<std::unique_ptr<MatmulPiece>> MatmulSplitter::Piece(int64_t i) const {
  auto piece = std::make_unique<MatmulPiece>();
  piece->op = op_;
  piece->op.result_to = {};
  piece->op.check_finite = false;  // the whole op is checked before it is split
  if (chunk_ > 0) {
    const int64_t first = i * chunk_;
    BatchPiece(first, std::min(chunk_, plan_.batch - first), *piece);
  } else {
    const int64_t per_matrix = row_tiles_ * col_tiles_;
    const int64_t tile = i % per_matrix;
    TilePiece(i / per_matrix, (tile / col_tiles_) * tile_rows_, (tile % col_tiles_) * tile_cols_,
              *piece);
  }
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(piece->op);
  if (!plan.ok()) return plan.status();
  piece->plan = *std::move(plan);
  return piece;
}

TensorView MatmulSplitter::BatchOperand(const TensorView& x, const std::vector<int64_t>& offsets,
                                        int64_t rows, int64_t cols, int64_t first, int64_t count,
                                        MatmulPiece& piece) const {
  const int64_t matrix = rows * cols;
  bool same = true, contiguous = true;
  for (int64_t j = 1; j < count; ++j) {
    same = same && offsets[first + j] == offsets[first];
    contiguous = contiguous && offsets[first + j] == offsets[first] + j * matrix;
  }
  if (count == 1 || same) return ViewAt(x.dtype, x.data, offsets[first], {rows, cols});
  if (contiguous) return ViewAt(x.dtype, x.data, offsets[first], {count, rows, cols});
  const size_t es = DTypeSize(x.dtype);
  auto copy = std::make_shared<Tensor>(x.dtype, Shape{count, rows, cols});
  for (int64_t j = 0; j < count; ++j) {
    std::memcpy(copy->mutable_data() + j * matrix * es, x.data + offsets[first + j] * es,
                matrix * es);
  }
  piece.owned.push_back(copy);
  return copy->view();
}

void MatmulSplitter::BatchPiece(int64_t first, int64_t count, MatmulPiece& piece) const {
  piece.first_matrix = first;
  piece.matrices = count;
  piece.op.a =
      BatchOperand(op_.a, plan_.a_offsets, op_.a.rows(), op_.a.cols(), first, count, piece);
  piece.op.b =
      BatchOperand(op_.b, plan_.b_offsets, op_.b.rows(), op_.b.cols(), first, count, piece);
  if (op_.c) {
    std::vector<int64_t> c_offsets(plan_.batch);
    for (int64_t j = 0; j < plan_.batch; ++j) {
      c_offsets[j] = c_full_ ? j * plan_.m * plan_.n : plan_.c_offsets[j];
    }
    const TensorView c = c_full_ ? c_full_->view() : *op_.c;
    if (c_full_) piece.owned.push_back(c_full_);
    piece.op.c = BatchOperand(c, c_offsets, plan_.m, plan_.n, first, count, piece);
    if (count > 1 && piece.op.c->shape.size() == 2) {
      piece.op.c->shape.insert(piece.op.c->shape.begin(), 1);  // broadcasts over the run
    }
  }
}

void MatmulSplitter::TilePiece(int64_t matrix, int64_t row0, int64_t col0,
                               MatmulPiece& piece) const {
  const int64_t rows = std::min(tile_rows_, plan_.m - row0);
  const int64_t cols = std::min(tile_cols_, plan_.n - col0);
  const int64_t k = plan_.k;
  piece.first_matrix = matrix;
  piece.tile = true;
  piece.row0 = row0;
  piece.col0 = col0;
  auto own = [&](std::shared_ptr<Tensor> t) {
    piece.owned.push_back(t);
    return t->view();
  };
  const TensorView& a = op_.a;
  const std::byte* a_base = a.data + plan_.a_offsets[matrix] * DTypeSize(a.dtype);
  piece.op.a = op_.trans_a ? own(CopyBlock(a.dtype, a_base, plan_.m, 0, row0, k, rows))
                           : ViewAt(a.dtype, a_base, row0 * k, {rows, k});
  const TensorView& b = op_.b;
  const std::byte* b_base = b.data + plan_.b_offsets[matrix] * DTypeSize(b.dtype);
  if (op_.trans_b) {
    piece.op.b = ViewAt(b.dtype, b_base, col0 * k, {cols, k});
  } else {
    piece.op.b = cols == plan_.n ? ViewAt(b.dtype, b_base, 0, {k, cols})
                                 : own(CopyBlock(b.dtype, b_base, plan_.n, 0, col0, k, cols));
  }
  if (op_.c) {
    const TensorView c = CView(matrix);
    if (c_full_) piece.owned.push_back(c_full_);
    piece.op.c = cols == plan_.n ? ViewAt(c.dtype, c.data, row0 * plan_.n, {rows, cols})
                                 : own(CopyBlock(c.dtype, c.data, plan_.n, row0, col0, rows, cols));
  }
  if (op_.bias) {
    const TensorView& bias = *op_.bias;
    piece.op.bias = plan_.bias_per_row       ? ViewAt(bias.dtype, bias.data, row0, {rows, 1})
                    : bias.shape.size() == 1 ? ViewAt(bias.dtype, bias.data, col0, {cols})
                                             : ViewAt(bias.dtype, bias.data, col0, {1, cols});
  }
}

void MatmulSplitter::Place(const MatmulPiece& piece, const Tensor& piece_out, Tensor* out) const {
  const size_t es = DTypeSize(op_.out_dtype);
  const int64_t matrix = plan_.m * plan_.n;
  std::byte* dst = out->mutable_data() + piece.first_matrix * matrix * es;
  const std::byte* src = piece_out.view().data;
  if (!piece.tile) {
    std::memcpy(dst, src, piece.matrices * matrix * es);
    return;
  }
  const int64_t rows = piece.plan.m, cols = piece.plan.n;
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + ((piece.row0 + r) * plan_.n + piece.col0) * es, src + r * cols * es,
                cols * es);
  }
}

}  // namespace linalgd
