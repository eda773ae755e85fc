#ifndef LINALGD_SERVER_SCHEDULER_MATMUL_SPLIT_H_
#define LINALGD_SERVER_SCHEDULER_MATMUL_SPLIT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

// One piece of a split matmul: an op of its own (views into the parent's
// operands, or into copies the piece owns) and where its output goes.
struct MatmulPiece {
  MatmulOp op;
  MatmulPlan plan;
  std::vector<std::shared_ptr<Tensor>> owned;  // what op's views may point into
  int64_t first_matrix = 0;                    // output batch element of the piece's first matrix
  int64_t matrices = 1;                        // consecutive output matrices covered (batch split)
  bool tile = false;                           // a [rows, cols] tile of matrix first_matrix
  int64_t row0 = 0, col0 = 0;
};

// Splits a matmul too large for a device budget into pieces that each fit
// (MatmulDeviceBytes(piece) <= max_piece_bytes), run one after another:
// first along the batch (runs of consecutive output matrices), and when one
// matrix does not fit, into row blocks of a and of the output (M) and, if a
// whole row of the output is still too large, column blocks of b (N).
// Epilogues, alpha, beta, c and bias are elementwise, so tiles are exact.
// The splitter views the parent op's memory: it must outlive the splitter.
class MatmulSplitter {
 public:
  // RESOURCE_EXHAUSTED when even a 1 x 1 tile does not fit (K is not split).
  static absl::StatusOr<std::unique_ptr<MatmulSplitter>> Create(const MatmulOp& op,
                                                                const MatmulPlan& plan,
                                                                int64_t max_piece_bytes);

  int64_t num_pieces() const { return num_pieces_; }
  // Builds piece i (copying the blocks that are not contiguous).
  // REQUIRES: 0 <= i < num_pieces().
  absl::StatusOr<std::unique_ptr<MatmulPiece>> Piece(int64_t i) const;
  // Copies a piece's result into the full output `out` (of op.out_dtype and
  // plan.out_shape).
  void Place(const MatmulPiece& piece, const Tensor& piece_out, Tensor* out) const;

 private:
  MatmulSplitter(const MatmulOp& op, const MatmulPlan& plan) : op_(op), plan_(plan) {}
  int64_t TileBytes(int64_t rows, int64_t cols) const;
  bool ChooseTiles(int64_t max_piece_bytes);
  TensorView CView(int64_t matrix) const;  // c as a full [M, N] matrix
  TensorView BatchOperand(const TensorView& x, const std::vector<int64_t>& offsets, int64_t rows,
                          int64_t cols, int64_t first, int64_t count, MatmulPiece& piece) const;
  void BatchPiece(int64_t first, int64_t count, MatmulPiece& piece) const;
  void TilePiece(int64_t matrix, int64_t row0, int64_t col0, MatmulPiece& piece) const;

  const MatmulOp op_;
  const MatmulPlan plan_;
  std::shared_ptr<Tensor> c_full_;  // c expanded to out_shape when it broadcasts
  int64_t chunk_ = 0;               // > 0: batch split, matrices per piece
  int64_t tile_rows_ = 0, tile_cols_ = 0;
  int64_t row_tiles_ = 1, col_tiles_ = 1;
  int64_t num_pieces_ = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_MATMUL_SPLIT_H_
