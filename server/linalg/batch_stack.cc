#include "server/linalg/batch_stack.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

// [count] + padding ones up to `rank` dims + inner.
Shape StackedShape(const Shape& inner, size_t count, size_t rank) {
  Shape shape = {static_cast<int64_t>(count)};
  for (size_t i = inner.size(); i < rank; ++i) shape.push_back(1);
  shape.insert(shape.end(), inner.begin(), inner.end());
  return shape;
}

// The rank of a matmul's output (and of its stacked operands, less one).
size_t OutRank(const MatmulOp& op) { return std::max(op.a.shape.size(), op.b.shape.size()); }

// Concatenates the views' bytes under shape [count] + padding ones + shape,
// into a block from `alloc` when it gives one.
Tensor Stack(const std::vector<TensorView>& views, size_t rank, const HostAllocator& alloc) {
  Shape shape = StackedShape(views[0].shape, views.size(), rank);
  if (std::shared_ptr<std::byte> block =
          alloc ? alloc(views.size() * views[0].num_bytes()) : nullptr) {
    std::byte* at = block.get();
    for (const TensorView& v : views) {
      std::memcpy(at, v.data, v.num_bytes());
      at += v.num_bytes();
    }
    return Tensor::Adopt(views[0].dtype, std::move(shape), std::move(block));
  }
  std::string bytes;
  bytes.reserve(views.size() * views[0].num_bytes());
  for (const TensorView& v : views) {
    bytes.append(reinterpret_cast<const char*>(v.data), v.num_bytes());
  }
  return Tensor(views[0].dtype, std::move(shape), std::move(bytes));
}

// A block of `bytes` from `alloc` for a stacked result, and where it is.
ResultDestination ResultBlock(const HostAllocator& alloc, size_t bytes,
                              std::shared_ptr<std::byte>& block) {
  block = alloc && bytes > 0 ? alloc(bytes) : nullptr;
  return block ? ResultDestination(block.get(), bytes) : ResultDestination();
}

}  // namespace

bool ShareOneBias(absl::Span<const MatmulOp* const> ops) {
  const std::optional<TensorView>& first = ops[0]->bias;
  if (!first) return true;
  for (const MatmulOp* op : ops) {
    if (op->bias->num_bytes() != first->num_bytes() ||
        std::memcmp(op->bias->data, first->data, first->num_bytes()) != 0) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::unique_ptr<StackedMatmul>> StackMatmuls(absl::Span<const MatmulOp* const> ops,
                                                            const HostAllocator& alloc) {
  const MatmulOp& first = *ops[0];
  auto s = std::make_unique<StackedMatmul>();
  std::vector<TensorView> as, bs, cs;
  if (!ShareOneBias(ops)) {
    return absl::UnimplementedError("batched matmul: the ops have different biases");
  }
  for (const MatmulOp* op : ops) {
    as.push_back(op->a);
    bs.push_back(op->b);
    if (op->c) cs.push_back(*op->c);
  }
  const size_t out_rank = OutRank(first);
  s->a = Stack(as, out_rank, alloc);
  s->b = Stack(bs, out_rank, alloc);
  s->op = first;
  s->op.a = s->a.view();
  s->op.b = s->b.view();
  if (first.c) {
    s->c = Stack(cs, out_rank, alloc);
    s->op.c = s->c->view();
  }
  LINALGD_ASSIGN_OR_RETURN(s->plan, PlanMatmul(s->op));
  s->op.result_to = ResultBlock(alloc, NumElements(s->plan.out_shape) * DTypeSize(s->op.out_dtype),
                                s->out_memory);
  return s;
}

MatmulOp StackedShapes(absl::Span<const MatmulOp* const> ops) {
  MatmulOp op = *ops[0];
  const size_t rank = OutRank(op);
  op.a = TensorView{op.a.dtype, StackedShape(op.a.shape, ops.size(), rank), nullptr};
  op.b = TensorView{op.b.dtype, StackedShape(op.b.shape, ops.size(), rank), nullptr};
  op.c.reset();
  op.result_to = {};
  return op;
}

absl::StatusOr<std::unique_ptr<StackedSolve>> StackSolves(absl::Span<const SolveOp* const> ops,
                                                          const HostAllocator& alloc) {
  auto s = std::make_unique<StackedSolve>();
  std::vector<TensorView> as, bs;
  for (const SolveOp* op : ops) {
    as.push_back(op->a);
    bs.push_back(op->b);
  }
  const SolveOp& first = *ops[0];
  const size_t rank = std::max(first.a.shape.size(), first.b.shape.size());
  s->a = Stack(as, rank, alloc);
  s->b = Stack(bs, rank, alloc);
  s->op = first;
  s->op.a = s->a.view();
  s->op.b = s->b.view();
  LINALGD_ASSIGN_OR_RETURN(s->plan, PlanSolve(s->op));
  s->op.result_to =
      ResultBlock(alloc, NumElements(s->plan.x_shape) * DTypeSize(s->op.a.dtype), s->x_memory);
  return s;
}

std::vector<Tensor> Unstack(const Tensor& stacked, size_t count) {
  const Shape inner(stacked.shape().begin() + 1, stacked.shape().end());
  const size_t bytes = stacked.num_bytes() / count;
  std::vector<Tensor> out;
  out.reserve(count);
  if (const std::shared_ptr<std::byte>& memory = stacked.memory()) {
    const size_t base = static_cast<size_t>(stacked.data() - memory.get());
    for (size_t i = 0; i < count; ++i) {
      out.push_back(
          Tensor::Adopt(stacked.dtype(), inner,
                        std::shared_ptr<std::byte>(memory, memory.get() + base + i * bytes)));
    }
    return out;
  }
  const char* src = reinterpret_cast<const char*>(stacked.as<char>());
  for (size_t i = 0; i < count; ++i) {
    out.emplace_back(stacked.dtype(), inner, std::string(src + i * bytes, bytes));
  }
  return out;
}

}  // namespace linalgd

namespace linalgd {
namespace {

// Part j of `count` equal parts of v.
template <typename T>
std::vector<T> Part(const std::vector<T>& v, size_t j, size_t count) {
  const size_t each = v.size() / count;
  return std::vector<T>(v.begin() + j * each, v.begin() + (j + 1) * each);
}

}  // namespace

void UnstackMemberOutputs(const SolveResult& stacked, size_t j, size_t count, SolveResult* one) {
  one->member_rcond = Part(stacked.member_rcond, j, count);
  one->rcond.reset();
  for (double r : one->member_rcond) {
    if (!std::isnan(r)) one->rcond = std::min(one->rcond.value_or(r), r);
  }
  if (!stacked.lstsq) return;
  one->lstsq =
      LstsqOutputs{Part(stacked.lstsq->residuals, j, count), Part(stacked.lstsq->rank, j, count),
                   Part(stacked.lstsq->singular_values, j, count)};
}

}  // namespace linalgd
