#ifndef LINALGD_TESTS_TESTING_TEST_REFERENCE_H_
#define LINALGD_TESTS_TESTING_TEST_REFERENCE_H_

#include <cstdint>
#include <random>
#include <vector>

#include "server/backend/ops.h"
#include "server/common/tensor.h"

// Naive float64 references for the CPU and GPU backend tests alike,
// independent of server/backend/plan (their own broadcasting) and of
// BLAS/LAPACK.
namespace linalgd::test_ref {

// Uniform values in [lo, hi], stored in `dtype` (so the tensor's own values,
// read back with Values, are what the reference sees).
Tensor RandomTensor(DType dtype, const Shape& shape, std::mt19937& rng, double lo = -1,
                    double hi = 1);
Tensor FromValues(DType dtype, const Shape& shape, const std::vector<double>& values);
std::vector<double> Values(const Tensor& t);

// numpy broadcasting of two shapes. REQUIRES: compatible.
Shape Broadcast(const Shape& x, const Shape& y);

// out = epilogue(alpha * op(a) @ op(b) + beta * c + bias), by triple loops in
// double; *shape receives the output shape.
std::vector<double> ReferenceMatmul(const MatmulOp& op, Shape* shape);

// max |x - ref| / max |ref| (max |x - ref| when ref is all zero).
double RelError(const std::vector<double>& x, const std::vector<double>& ref);

// Row-major helpers in double.
std::vector<double> MatMul(const std::vector<double>& a, const std::vector<double>& b, int m, int k,
                           int n);
std::vector<double> Transpose(const std::vector<double>& a, int rows, int cols);
// Gaussian elimination with partial pivoting: a (n x n) x = b (n x k).
std::vector<double> GaussSolve(std::vector<double> a, std::vector<double> b, int n, int k);
// Least squares by normal equations (a m x n of full column rank).
std::vector<double> NormalEquations(const std::vector<double>& a, const std::vector<double>& b,
                                    int m, int n, int k);
// Minimum-norm solution a^T (a a^T)^-1 b (a m x n of full row rank).
std::vector<double> MinNormSolve(const std::vector<double>& a, const std::vector<double>& b, int m,
                                 int n, int k);

// [c, c]: rows x 2p of rank p (c rows x p, full column rank).
std::vector<double> DuplicatedColumns(const std::vector<double>& c, int rows, int p);
// The minimum-norm least-squares solution of [c, c] x = b: [y; y] / 2, with y
// the least-squares solution of c y = b (b rows x k).
std::vector<double> DuplicatedColumnsSolution(const std::vector<double>& c,
                                              const std::vector<double>& b, int rows, int p, int k);
// ||a x - b|| / (||a|| ||x|| + ||b||) (Frobenius norms) of one system a (m x n)
// x (n x k) = b, in double.
double Residual(const std::vector<double>& a, const std::vector<double>& x,
                const std::vector<double>& b, int m, int n, int k);

// Row-major f64 matrices for solver tests: uniform in [-1, 1); plus n on
// the diagonal (well conditioned); exactly symmetric with n + 1 on the
// diagonal (diagonally dominant, so SPD); the same with entry (2, 2) made
// -(n + 1) (symmetric indefinite: leading minor 3 fails).
std::vector<double> RandomMatrix(int rows, int cols, std::mt19937& rng);
std::vector<double> WellConditioned(int n, std::mt19937& rng);
std::vector<double> DominantSpd(int n, std::mt19937& rng);
std::vector<double> SymmetricIndefinite(int n, std::mt19937& rng);

}  // namespace linalgd::test_ref

#endif  // LINALGD_TESTS_TESTING_TEST_REFERENCE_H_
