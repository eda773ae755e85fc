#include "server/cpu/sparse_direct.h"

namespace linalgd {

DoubleCsr::DoubleCsr(const CsrView& a) : view(a) {
  view.dtype = DType::kF64;
  if (a.dtype == DType::kF64) return;
  const float* v = a.as<float>();
  widened.assign(v, v + a.nnz());
  view.values = widened.data();
}

}  // namespace linalgd
