#include "tools/cli/matmul_command.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {
namespace {

// Reads a file operand into `slot`, or sets `id` for an @ID operand.
absl::Status ReadOperand(const std::string& operand, client::Tensor& slot, std::string& id) {
  id = ResidentId(operand);
  if (!id.empty()) return absl::OkStatus();
  absl::StatusOr<client::Tensor> t = ReadTensor(operand);
  if (!t.ok()) return t.status();
  slot = *std::move(t);
  return absl::OkStatus();
}

// Reads the operand files into `args`; rank-1 file A and B become matrices.
absl::Status ReadOperands(const MatmulFlags& flags, client::MatmulArgs& args, bool& a_vector,
                          bool& b_vector) {
  if (absl::Status s = ReadOperand(flags.a, args.a, args.a_resident_id); !s.ok()) return s;
  if (absl::Status s = ReadOperand(flags.b, args.b, args.b_resident_id); !s.ok()) return s;
  a_vector = args.a_resident_id.empty() && args.a.rank() == 1;
  b_vector = args.b_resident_id.empty() && args.b.rank() == 1;
  if (a_vector) (void)args.a.Reshape({1, args.a.shape()[0]});
  if (b_vector) (void)args.b.Reshape({args.b.shape()[0], 1});
  const std::pair<const std::string*, std::pair<absl::optional<client::Tensor>*, std::string*>>
      extras[] = {{&flags.c, {&args.c, &args.c_resident_id}},
                  {&flags.bias, {&args.bias, &args.bias_resident_id}}};
  for (const auto& [path, slot] : extras) {
    if (path->empty()) continue;
    client::Tensor t;
    if (absl::Status s = ReadOperand(*path, t, *slot.second); !s.ok()) return s;
    if (slot.second->empty()) *slot.first = std::move(t);
  }
  return absl::OkStatus();
}

// Sets the non-file fields of `args`; INVALID_ARGUMENT for an unknown name.
absl::Status ApplyFlags(const MatmulFlags& flags, const CLI::App& command,
                        client::MatmulArgs& args) {
  args.transpose_a = flags.transpose_a;
  args.transpose_b = flags.transpose_b;
  if (command.count("--alpha") > 0) args.alpha = flags.alpha;
  if (command.count("--beta") > 0) args.beta = flags.beta;
  args.alpha_imag = flags.alpha_imag;
  args.beta_imag = flags.beta_imag;
  absl::StatusOr<client::Epilogue> epilogue = client::ParseEpilogue(flags.epilogue);
  if (!epilogue.ok()) return epilogue.status();
  args.epilogue = *epilogue;
  absl::StatusOr<client::ComputeMode> mode = client::ParseComputeMode(flags.compute);
  if (!mode.ok()) return mode.status();
  args.compute_mode = *mode;
  if (!flags.out_dtype.empty()) {
    absl::StatusOr<client::DType> dtype = client::ParseDType(flags.out_dtype);
    if (!dtype.ok()) return dtype.status();
    args.output_dtype = *dtype;
  }
  args.allow_non_finite = flags.allow_non_finite;
  return absl::OkStatus();
}

// Drops the dimensions that BuildArgs added for rank-1 operands.
void SqueezeVectors(client::Tensor& out, bool a_vector, bool b_vector) {
  std::vector<int64_t> shape = out.shape();
  if (b_vector && !shape.empty()) shape.pop_back();
  if (a_vector && !shape.empty()) shape.erase(shape.end() - (b_vector ? 1 : 2));
  (void)out.Reshape(std::move(shape));
}

}  // namespace

CLI::App* AddMatmulCommand(CLI::App& app, MatmulFlags& f) {
  CLI::App* cmd = app.add_subcommand("matmul", "out = epilogue(alpha op(A) op(B) + beta C + bias)");
  cmd->add_option("A", f.a, "A.npy, or @ID of a resident tensor")->required();
  cmd->add_option("B", f.b, "B.npy, or @ID of a resident tensor")->required();
  cmd->add_option("-o,--out", f.out, "output .npy (not with --keep-result)");
  cmd->add_flag("--keep-result", f.keep_result, "keep the product on the server; print its id");
  cmd->add_flag("--trans-a", f.transpose_a, "use A with its last two dims swapped");
  cmd->add_flag("--trans-b", f.transpose_b, "use B with its last two dims swapped");
  cmd->add_option("--alpha", f.alpha, "scale of op(A) op(B) (server default 1)");
  cmd->add_option("--beta", f.beta, "scale of C (server default 1 with --c)");
  cmd->add_option("--alpha-imag", f.alpha_imag, "imaginary part of alpha (complex A, B)");
  cmd->add_option("--beta-imag", f.beta_imag, "imaginary part of beta (complex A, B)");
  cmd->add_option("--c", f.c, "C.npy or @ID, broadcast to the output shape");
  cmd->add_option("--epilogue", f.epilogue, "none|relu|gelu|bias|relu_bias|gelu_bias");
  cmd->add_option("--bias", f.bias, "bias.npy or @ID: [N] or [M,1], for the *bias epilogues");
  cmd->add_option("--compute", f.compute, "default|tf32|fast_16f|fast_16bf");
  cmd->add_option("--out-dtype", f.out_dtype, "f32|f64|f16|bf16|c64|c128 (default: A's dtype)");
  cmd->add_flag("--allow-non-finite", f.allow_non_finite, "accept NaN/Inf inputs");
  return cmd;
}

namespace {

// Prints the result line; `where` is the output file or the kept id.
void PrintResult(const Output& out, const client::MatmulResult& result, const std::string& where,
                 int64_t total_ns) {
  const client::ExecutionInfo& info = result.info;
  if (out.json()) {
    Json json;
    if (result.out_resident_id.empty()) {
      json["out_file"] = where;
      json["out"] = TensorJson(result.out);
    } else {
      json["out_resident_id"] = where;
    }
    json["info"] = info;
    json["total_time_ns"] = total_ns;
    out.PrintJson(json);
    return;
  }
  const std::string shape = result.out_resident_id.empty() ? result.out.DebugString() + " -> " : "";
  std::cout << absl::StrFormat("%s%s backend=%s queue=%s run=%s total=%s%s\n", shape, where,
                               info.backend, FormatNanos(info.queue_time_ns),
                               FormatNanos(info.run_time_ns), FormatNanos(total_ns),
                               info.fallback_reason.empty() ? "" : " note=" + info.fallback_reason);
}

}  // namespace

int RunMatmul(Client& client, const client::CallOptions& call, const Output& out,
              const MatmulFlags& flags, const CLI::App& command) {
  if (flags.keep_result == !flags.out.empty()) {
    return out.LocalError(
        absl::InvalidArgumentError("matmul: give exactly one of -o/--out and --keep-result"),
        kExitUsage);
  }
  client::MatmulArgs args;
  bool a_vector = false, b_vector = false;
  if (absl::Status s = ApplyFlags(flags, command, args); !s.ok()) {
    return out.LocalError(s, kExitUsage);
  }
  if (absl::Status s = ReadOperands(flags, args, a_vector, b_vector); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  if (!flags.out.empty()) {
    if (absl::Status s = CheckOutputPath(flags.out); !s.ok()) {
      return out.LocalError(s, kExitFileError);
    }
  }
  args.keep_result = flags.keep_result;
  const absl::Time start = absl::Now();
  absl::StatusOr<client::MatmulResult> result = client.Matmul(std::move(args), call);
  const int64_t total_ns = absl::ToInt64Nanoseconds(absl::Now() - start);
  if (!result.ok()) return out.ServerError(result.status());
  if (flags.keep_result) {
    PrintResult(out, *result, result->out_resident_id, total_ns);
    return kExitOk;
  }
  SqueezeVectors(result->out, a_vector, b_vector);
  if (absl::Status s = WriteTensor(flags.out, result->out); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  PrintResult(out, *result, flags.out, total_ns);
  return kExitOk;
}

}  // namespace linalgd::cli
