// CsrMatrix, sparse enum names and the SparseSolve proto conversions.
#include "linalgd/sparse.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/src/convert.h"
#include "client/src/sparse_convert.h"

namespace linalgd::client {
namespace {

constexpr std::array<std::pair<SparseMethod, absl::string_view>, 7> kMethods = {{
    {SparseMethod::kAuto, "auto"},
    {SparseMethod::kCholesky, "cholesky"},
    {SparseMethod::kLu, "lu"},
    {SparseMethod::kQr, "qr"},
    {SparseMethod::kCg, "cg"},
    {SparseMethod::kBicgstab, "bicgstab"},
    {SparseMethod::kGmres, "gmres"},
}};
constexpr std::array<std::pair<Preconditioner, absl::string_view>, 4> kPreconditioners = {{
    {Preconditioner::kNone, "none"},
    {Preconditioner::kJacobi, "jacobi"},
    {Preconditioner::kIlu0, "ilu0"},
    {Preconditioner::kIc0, "ic0"},
}};

template <typename Table, typename E>
absl::string_view NameIn(const Table& table, E e) {
  for (const auto& [v, name] : table) {
    if (v == e) return name;
  }
  return "unknown";
}

template <typename Table>
auto ParseIn(const Table& table, absl::string_view what, absl::string_view name)
    -> absl::StatusOr<typename Table::value_type::first_type> {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ", what, " '", name, "' (expected one of: ",
      absl::StrJoin(table, ", ",
                    [](std::string* out, const auto& p) { absl::StrAppend(out, p.second); }),
      ")"));
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

absl::StatusOr<CsrMatrix> CsrMatrix::FromArrays(int64_t rows, int64_t cols,
                                                std::vector<int32_t> row_offsets,
                                                std::vector<int32_t> col_indices,
                                                const std::vector<double>& values) {
  if (static_cast<int64_t>(row_offsets.size()) != rows + 1) {
    return absl::InvalidArgumentError(absl::StrCat("row_offsets has ", row_offsets.size(),
                                                   " entries, expected rows + 1 = ", rows + 1));
  }
  if (col_indices.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("col_indices has ", col_indices.size(), " entries, values ", values.size()));
  }
  CsrMatrix m;
  m.rows = rows;
  m.cols = cols;
  auto v = Tensor::FromVector<double>({static_cast<int64_t>(values.size())},
                                      absl::MakeConstSpan(values));
  if (!v.ok()) return v.status();
  m.row_offsets = std::move(row_offsets);
  m.col_indices = std::move(col_indices);
  m.values = std::move(*v);
  return m;
}

absl::string_view SparseMethodName(SparseMethod m) { return NameIn(kMethods, m); }
absl::StatusOr<SparseMethod> ParseSparseMethod(absl::string_view name) {
  return ParseIn(kMethods, "sparse method", name);
}
absl::string_view PreconditionerName(Preconditioner p) { return NameIn(kPreconditioners, p); }
absl::StatusOr<Preconditioner> ParsePreconditioner(absl::string_view name) {
  return ParseIn(kPreconditioners, "preconditioner", name);
}

namespace internal {

v1::SparseSolveRequest ToProto(SparseSolveArgs args) {
  v1::SparseSolveRequest r;
  v1::CsrMatrix* a = r.mutable_a();
  a->set_rows(args.a.rows);
  a->set_cols(args.a.cols);
  a->set_index_type(v1::INDEX_TYPE_INT32);
  a->set_row_offsets(Bytes(args.a.row_offsets));
  a->set_col_indices(Bytes(args.a.col_indices));
  a->set_dtype(ToProto(args.a.values.dtype()));
  a->set_values(args.a.values.ReleaseBytes());
  ToProto(std::move(args.b), r.mutable_b());
  if (args.x0) ToProto(*std::move(args.x0), r.mutable_x0());
  r.set_method(static_cast<v1::SparseMethod>(static_cast<int>(args.method)));
  r.set_preconditioner(static_cast<v1::Preconditioner>(static_cast<int>(args.preconditioner)));
  r.set_tolerance(args.tolerance);
  r.set_max_iterations(args.max_iterations);
  r.set_no_fallback(args.no_fallback);
  r.set_allow_non_finite(args.allow_non_finite);
  r.set_priority(args.priority);
  return r;
}

absl::StatusOr<SparseSolveResult> FromProto(v1::SparseSolveResponse* response) {
  SparseSolveResult out;
  auto x = FromProto(response->mutable_x());
  if (!x.ok()) return x.status();
  out.x = std::move(*x);
  const int m = response->method_used(), p = response->preconditioner_used();
  out.method_used = m >= 0 && m < 7 ? static_cast<SparseMethod>(m) : SparseMethod::kAuto;
  out.preconditioner_used =
      p >= 0 && p < 4 ? static_cast<Preconditioner>(p) : Preconditioner::kNone;
  out.iterations = response->iterations();
  out.residual = response->residual();
  out.fallback = response->fallback();
  out.dense_path = response->dense_path();
  out.info = FromProto(response->info());
  return out;
}

}  // namespace internal
}  // namespace linalgd::client
