#include "server/linalg/solve_chain.h"

namespace linalgd {

std::optional<SolveMethod> NextSolveMethod(SolveMethod m) {
  switch (m) {
    case SolveMethod::kCholesky:
      return SolveMethod::kLu;
    case SolveMethod::kLu:
    case SolveMethod::kQr:
      return SolveMethod::kLstsq;
    default:
      return std::nullopt;
  }
}

int SolveChainRank(SolveMethod m) {
  switch (m) {
    case SolveMethod::kCholesky:
      return 1;
    case SolveMethod::kLu:
      return 2;
    case SolveMethod::kQr:
      return 3;
    case SolveMethod::kLstsq:
      return 4;
    case SolveMethod::kAuto:
      break;
  }
  return 0;
}

}  // namespace linalgd
