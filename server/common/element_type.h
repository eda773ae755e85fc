#ifndef LINALGD_SERVER_COMMON_ELEMENT_TYPE_H_
#define LINALGD_SERVER_COMMON_ELEMENT_TYPE_H_

#include <complex>
#include <type_traits>

#include "common/dtype.h"

namespace linalgd {

// The C++ element types the CPU kernels compute in, and what relates them to
// DType: float (f32), double (f64), std::complex<float> (c64) and
// std::complex<double> (c128), whose layout is numpy's (real, imaginary).

template <typename T>
struct IsComplexType : std::false_type {};
template <typename R>
struct IsComplexType<std::complex<R>> : std::true_type {};
template <typename T>
inline constexpr bool kIsComplex = IsComplexType<T>::value;

// The real type of T's parts: float for float and std::complex<float>.
template <typename T>
struct RealTypeOf {
  using type = T;
};
template <typename R>
struct RealTypeOf<std::complex<R>> {
  using type = R;
};
template <typename T>
using RealOf = typename RealTypeOf<T>::type;

// The dtype that holds T. REQUIRES: T is one of the four types above.
template <typename T>
constexpr DType NativeDType() {
  if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kC64;
  if constexpr (std::is_same_v<T, std::complex<double>>) return DType::kC128;
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  return DType::kF32;
}

// The scalar re + i*im as T; im is dropped for a real T.
template <typename T>
T MakeScalar(double re, double im) {
  if constexpr (kIsComplex<T>) {
    return T(static_cast<RealOf<T>>(re), static_cast<RealOf<T>>(im));
  } else {
    return static_cast<T>(re);
  }
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_ELEMENT_TYPE_H_
