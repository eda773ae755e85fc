#include "server/linalg/matmul_epilogue.h"

#include <cmath>
#include <type_traits>

#include "server/common/element_type.h"
#include "server/common/half.h"

namespace linalgd {
namespace {

// A pointer to t's values as T: t's own data when it already holds T, else a
// converted copy kept in *store.
template <typename T>
const T* ValuesAs(const TensorView& t, std::vector<T>* store) {
  if (t.dtype == NativeDType<T>()) return t.as<T>();  // complex: always (PlanMatmul)
  if constexpr (kIsComplex<T>) {
    return nullptr;
  } else if constexpr (std::is_same_v<T, float>) {
    *store = ToFloatVector(t);
  } else {
    *store = ToDoubleVector(t);
  }
  return store->data();
}

}  // namespace

template <typename T>
T Gelu(T x) {
  constexpr T kSqrt2OverPi = static_cast<T>(0.7978845608028654);
  constexpr T kCoeff = static_cast<T>(0.044715);
  return static_cast<T>(0.5) * x * (1 + std::tanh(kSqrt2OverPi * (x + kCoeff * x * x * x)));
}

template <typename T>
MatmulEpilogue<T>::MatmulEpilogue(const MatmulOp& op, const MatmulPlan& plan)
    : m_(plan.m), n_(plan.n), beta_(MakeScalar<T>(op.beta, op.beta_imag)) {
  switch (op.epilogue) {
    case Epilogue::kRelu:
    case Epilogue::kReluBias:
      act_ = kRelu;
      break;
    case Epilogue::kGelu:
    case Epilogue::kGeluBias:
      act_ = kGelu;
      break;
    default:
      act_ = kNone;
      break;
  }
  if (op.c && (op.beta != 0 || op.beta_imag != 0)) {
    if (plan.c_full_matrix) {
      c_ = ValuesAs<T>(*op.c, &c_store_);
      c_offsets_ = &plan.c_offsets;
    } else {
      const Tensor expanded = BroadcastTo(*op.c, plan.out_shape);
      c_ = ValuesAs<T>(expanded.view(), &c_store_);
      if (c_ != c_store_.data()) {  // native dtype: keep our own copy
        c_store_.assign(c_, c_ + expanded.num_elements());
        c_ = c_store_.data();
      }
    }
  }
  if (EpilogueHasBias(op.epilogue) && op.bias) {
    bias_ = ValuesAs<T>(*op.bias, &bias_store_);
    bias_per_row_ = plan.bias_per_row;
  }
}

template <typename T>
void MatmulEpilogue<T>::Apply(int64_t i, T* d) const {
  if (is_identity()) return;
  const T* c = nullptr;
  if (c_ != nullptr) c = c_ + (c_offsets_ ? (*c_offsets_)[i] : i * m_ * n_);
  for (int64_t r = 0; r < m_; ++r) {
    T* row = d + r * n_;
    const T* c_row = c ? c + r * n_ : nullptr;
    for (int64_t j = 0; j < n_; ++j) {
      T v = row[j];
      if (c_row) v += beta_ * c_row[j];
      if (bias_) v += bias_per_row_ ? bias_[r] : bias_[j];
      if constexpr (!kIsComplex<T>) {  // complex: none (PlanMatmul)
        if (act_ == kRelu) {
          v = v > 0 ? v : 0;
        } else if (act_ == kGelu) {
          v = Gelu(v);
        }
      }
      row[j] = v;
    }
  }
}

template class MatmulEpilogue<float>;
template class MatmulEpilogue<double>;
template class MatmulEpilogue<std::complex<float>>;
template class MatmulEpilogue<std::complex<double>>;
template float Gelu<float>(float);
template double Gelu<double>(double);

}  // namespace linalgd
