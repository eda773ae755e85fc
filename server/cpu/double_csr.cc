#include "server/cpu/sparse_direct.h"

namespace linalgd {

DoubleCsr::DoubleCsr(const CsrView& a) : view(a) {
  const int parts = IsComplex(a.dtype) ? 2 : 1;
  view.dtype = parts == 2 ? DType::kC128 : DType::kF64;
  if (a.dtype == view.dtype) return;
  const float* v = a.as<float>();  // f32, or c64's packed (real, imaginary) pairs
  widened.assign(v, v + a.nnz() * parts);
  view.values = widened.data();
}

}  // namespace linalgd
