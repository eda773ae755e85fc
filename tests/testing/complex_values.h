#ifndef LINALGD_TESTS_TESTING_COMPLEX_VALUES_H_
#define LINALGD_TESTS_TESTING_COMPLEX_VALUES_H_

// Complex test data and complex<double> references, shared by the CPU and
// GPU complex tests: the reference is computed in double precision with
// plain loops, whatever the dtype under test.

#include <algorithm>
#include <complex>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "server/common/tensor.h"

namespace linalgd::test_complex {

using C = std::complex<double>;

// A c64 or c128 tensor holding `values`.
inline Tensor ComplexTensor(DType dtype, Shape shape, const std::vector<C>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kC128) {
      t.mutable_as<C>()[i] = values[i];
    } else {
      t.mutable_as<std::complex<float>>()[i] = std::complex<float>(values[i]);
    }
  }
  return t;
}

inline std::vector<C> ValuesOf(const Tensor& t) {
  std::vector<C> out(t.num_elements());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = t.dtype() == DType::kC128 ? t.as<C>()[i] : C(t.as<std::complex<float>>()[i]);
  }
  return out;
}

inline std::vector<C> RandomValues(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<C> v(n);
  for (C& x : v) x = C(u(rng), u(rng));
  return v;
}

// max |got - want| / max |want|.
inline double RelError(const std::vector<C>& got, const std::vector<C>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

// The n x k product of row-major a (n x m) and x (m x k).
inline std::vector<C> Product(const std::vector<C>& a, const std::vector<C>& x, int n, int m,
                              int k) {
  std::vector<C> out(size_t{1} * n * k);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j)
      for (int l = 0; l < m; ++l) out[i * k + j] += a[i * m + l] * x[l * k + j];
  return out;
}

inline double Tolerance(DType dtype) { return dtype == DType::kC128 ? 1e-12 : 1e-5; }

}  // namespace linalgd::test_complex

#endif  // LINALGD_TESTS_TESTING_COMPLEX_VALUES_H_
