#include "tools/cli/sparse_solve_command.h"

#include <cstdint>
#include <iostream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "linalgd/matrix_market.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

CLI::App* AddSparseSolveCommand(CLI::App& app, SparseSolveFlags& f) {
  CLI::App* cmd =
      app.add_subcommand("sparse-solve", "solve A X = B for a sparse A (Matrix Market)");
  cmd->add_option("A", f.a, "A.mtx (coordinate real/integer/pattern, general/symmetric)")
      ->required();
  cmd->add_option("B", f.b, "B.npy ([n] is read as [n,1]); its dtype (f32/f64) is A's")->required();
  cmd->add_option("-o,--out", f.out, "output X.npy")->required();
  cmd->add_option("--method", f.method, "auto|cholesky|lu|qr|cg|bicgstab|gmres");
  cmd->add_option("--preconditioner", f.preconditioner, "none|jacobi|ilu0|ic0 (iterative methods)");
  cmd->add_option("--tol", f.tolerance, "iterative: relative residual target; 0: dtype default");
  cmd->add_option("--max-iter", f.max_iterations, "iterative: iteration limit; 0: max(1000, n)");
  cmd->add_flag(
      "--no-fallback", f.no_fallback,
      "fail (FAILED_PRECONDITION) instead of falling back (non-SPD, singular, no convergence)");
  cmd->add_flag("--allow-non-finite", f.allow_non_finite, "accept NaN/Inf inputs");
  cmd->add_option("--max-rows", f.max_rows,
                  "largest row count A.mtx may declare: the reader allocates the row offsets from "
                  "the size line before reading the entries")
      ->capture_default_str();
  return cmd;
}

namespace {

absl::Status FillOptions(const SparseSolveFlags& flags, client::SparseSolveArgs& args) {
  absl::StatusOr<client::SparseMethod> method = client::ParseSparseMethod(flags.method);
  if (!method.ok()) return method.status();
  absl::StatusOr<client::Preconditioner> pre = client::ParsePreconditioner(flags.preconditioner);
  if (!pre.ok()) return pre.status();
  args.method = *method;
  args.preconditioner = *pre;
  args.tolerance = flags.tolerance;
  args.max_iterations = flags.max_iterations;
  args.no_fallback = flags.no_fallback;
  args.allow_non_finite = flags.allow_non_finite;
  // CSR indices are 32-bit: at most 2^31 - 2 rows.
  constexpr int64_t kMaxRows = int64_t{std::numeric_limits<int32_t>::max()} - 1;
  if (flags.max_rows < 1 || flags.max_rows > kMaxRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-rows must be in [1, ", kMaxRows, "], got ", flags.max_rows));
  }
  return absl::OkStatus();
}

void PrintSummary(const Output& out, const client::SparseSolveResult& r,
                  const SparseSolveFlags& flags, int64_t total_ns) {
  const client::ExecutionInfo& info = r.info;
  if (out.json()) {
    Json json;
    json["x_file"] = flags.out;
    json["x"] = TensorJson(r.x);
    json["method_used"] = std::string(client::SparseMethodName(r.method_used));
    json["preconditioner_used"] = std::string(client::PreconditionerName(r.preconditioner_used));
    json["iterations"] = r.iterations;
    json["residual"] = r.residual;
    json["dense_path"] = r.dense_path;
    json["fallback"] = r.fallback;
    json["info"] = info;
    json["total_time_ns"] = total_ns;
    return out.PrintJson(json);
  }
  std::cout << absl::StrFormat(
      "%s -> %s method=%s preconditioner=%s iterations=%d residual=%.3e%s fallback=%s "
      "backend=%s queue=%s run=%s total=%s\n",
      r.x.DebugString(), flags.out, client::SparseMethodName(r.method_used),
      client::PreconditionerName(r.preconditioner_used), r.iterations, r.residual,
      r.dense_path ? " dense_path" : "", r.fallback.empty() ? "none" : "\"" + r.fallback + "\"",
      info.backend, FormatNanos(info.queue_time_ns), FormatNanos(info.run_time_ns),
      FormatNanos(total_ns));
}

}  // namespace

int RunSparseSolve(Client& client, const client::CallOptions& call, const Output& out,
                   const SparseSolveFlags& flags) {
  client::SparseSolveArgs args;
  if (absl::Status s = FillOptions(flags, args); !s.ok()) return out.LocalError(s, kExitUsage);
  absl::StatusOr<client::Tensor> b = ReadTensor(flags.b);
  if (!b.ok()) return out.LocalError(b.status(), kExitFileError);
  absl::StatusOr<client::CsrMatrix> a =
      client::ReadMatrixMarket(flags.a, b->dtype(), flags.max_rows);
  if (!a.ok()) return out.LocalError(a.status(), kExitFileError);
  const bool b_vector = b->rank() == 1;
  if (b_vector) (void)b->Reshape({b->shape()[0], 1});
  args.a = *std::move(a);
  args.b = *std::move(b);
  if (absl::Status s = CheckOutputPath(flags.out); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }

  const absl::Time start = absl::Now();
  absl::StatusOr<client::SparseSolveResult> result = client.SparseSolve(std::move(args), call);
  const int64_t total_ns = absl::ToInt64Nanoseconds(absl::Now() - start);
  if (!result.ok()) return out.ServerError(result.status());
  client::Tensor& x = result->x;
  if (b_vector && x.rank() == 2 && x.shape()[1] == 1) (void)x.Reshape({x.shape()[0]});
  if (absl::Status s = WriteTensor(flags.out, x); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  PrintSummary(out, *result, flags, total_ns);
  return kExitOk;
}

}  // namespace linalgd::cli
