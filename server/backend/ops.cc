#include "server/backend/ops.h"

namespace linalgd {

bool EpilogueHasBias(Epilogue e) {
  return e == Epilogue::kBias || e == Epilogue::kReluBias || e == Epilogue::kGeluBias;
}

absl::string_view EpilogueName(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "none";
    case Epilogue::kRelu:
      return "relu";
    case Epilogue::kGelu:
      return "gelu";
    case Epilogue::kBias:
      return "bias";
    case Epilogue::kReluBias:
      return "relu_bias";
    case Epilogue::kGeluBias:
      return "gelu_bias";
  }
  return "?";
}

absl::string_view ComputeModeName(ComputeMode m) {
  switch (m) {
    case ComputeMode::kDefault:
      return "default";
    case ComputeMode::kTf32:
      return "tf32";
    case ComputeMode::kFast16F:
      return "fast_16f";
    case ComputeMode::kFast16BF:
      return "fast_16bf";
  }
  return "?";
}

absl::string_view SolveMethodName(SolveMethod m) {
  switch (m) {
    case SolveMethod::kAuto:
      return "auto";
    case SolveMethod::kLu:
      return "lu";
    case SolveMethod::kCholesky:
      return "cholesky";
    case SolveMethod::kQr:
      return "qr";
    case SolveMethod::kLstsq:
      return "lstsq";
  }
  return "?";
}

}  // namespace linalgd
