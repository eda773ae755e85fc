#ifndef LINALGD_SERVER_LINALG_SOLVE_CHAIN_H_
#define LINALGD_SERVER_LINALG_SOLVE_CHAIN_H_

#include <optional>

#include "server/backend/ops.h"

namespace linalgd {

// The dense-solve fallback chain every backend follows:
// cholesky -> lu -> lstsq, and qr -> lstsq.

// The method tried after `m` fails; nullopt at the end of the chain.
std::optional<SolveMethod> NextSolveMethod(SolveMethod m);

// Position of `m` in the chain (cholesky 1, lu 2, qr 3, lstsq 4; auto 0): over
// a batch, method_used reports the element that fell furthest.
int SolveChainRank(SolveMethod m);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_SOLVE_CHAIN_H_
