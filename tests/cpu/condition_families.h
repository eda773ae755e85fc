#ifndef LINALGD_TESTS_CPU_CONDITION_FAMILIES_H_
#define LINALGD_TESTS_CPU_CONDITION_FAMILIES_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"

// Square test systems of known condition, shared by the CPU and GPU
// condition tests. Everything in double, row-major; b = a x0 is consistent.
namespace linalgd::test_ref {

enum class Decision { kSolved, kFallback, kEither };

struct ConditionCase {
  std::string name;  // "svd cond 1e10", "hilbert", "rank 60 product", ...
  int n = 0;
  std::vector<double> a, x0, b;  // b = a x0
  // The exact 1-norm reciprocal condition number of a (as built, before
  // rounding to the test's dtype); 0 for a singular a.
  double rcond1 = 0;
  // The minimum-norm solution of a x = b when a is rank-deficient (empty
  // otherwise: x0 is the solution).
  std::vector<double> min_norm;
};

// U diag(s) V^T with random orthogonal U, V and s geometric from 1 to 1/cond.
ConditionCase SvdFamily(int n, double cond, std::mt19937& rng);
// P Q with P n x r, Q r x n random: rank r.
ConditionCase RankDeficient(int n, int r, std::mt19937& rng);
// A well-conditioned a with row `row` zeroed (an exactly zero pivot).
ConditionCase ExactlySingular(int n, int row, std::mt19937& rng);
ConditionCase Hilbert(int n);
// diag(d) R, R well conditioned, d_i from 1 down to 10^-decades.
ConditionCase Graded(int n, double decades, std::mt19937& rng);

// SVD families of condition 1e2 ... 1e20 (n 32), rank 60 of 64, a zero row
// (n 16), Hilbert n = 8..14, graded rows down to 1e-12 (n 24).
std::vector<ConditionCase> StandardFamilies(std::mt19937& rng);

// ||a||_1 of a row-major n x n matrix: its largest column sum of |a_ij|.
double Norm1(const std::vector<double>& a, int n);
double Eps(DType t);  // machine epsilon of f32 or f64

// Every backend's decision for a case in dtype t with the default
// threshold n * eps: solved when rcond1 is 10x above it, fallback when 10x
// below (or singular), else either (an estimate may land on either side).
Decision ExpectedDecision(const ConditionCase& c, DType t);

// ||x - ref||_2 / ||ref||_2.
double RelError2(const std::vector<double>& x, const std::vector<double>& ref);

}  // namespace linalgd::test_ref

#endif  // LINALGD_TESTS_CPU_CONDITION_FAMILIES_H_
