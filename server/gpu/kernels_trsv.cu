// The sync-free blocked triangular solve (kernels_impl.h TriangularSolve),
// and the permutation of a vector its callers apply getrf's pivots with.
//
// op(T) X = B for kNrhs columns (1 or 2, a template parameter; column-major,
// ld n), in place. Each column's arithmetic is that of a one-column solve
// (the same operations in the same order), so each column's result is
// bitwise the one-column solve's; a CTA reads each factor tile once and
// applies it to every column. Logical indices run in substitution
// order: row l of the logical system is physical row l (forward: op(T) lower)
// or n - 1 - l (backward: op(T) upper), so the logical matrix M is always
// lower triangular and every CTA does forward substitution on its rows.
//
// One CTA per logical block row of kNb rows (32 or 64, a template
// parameter; kernels.h TrsvBlock): it loads and inverts its diagonal block
// (or loads the inverse an earlier solve kept: TrsvOptions::inverses; the
// first blocks' inversion was 13-14 of a sweep's 16 us start on an H100),
// accumulates its tiles left of the diagonal as the x they need is
// published, then x_L = inverse * (b_L - sums), that product spread over
// every warp (each warp kNb / 8 rows, its lanes the terms of each row).
// The chain's link from block L - 1 to L is latency: L's wait for x_{L-1},
// its last tile's products, the row sums, the block's solve, its stores.
//
// Why it cannot deadlock: a CTA takes its block index L from an atomicAdd on
// sync[0] once it is running, so the CTAs with smaller indices are already
// resident; it waits only for those (blocks J < L), which themselves wait
// only for smaller ones, so by induction on L every wait ends, whatever the
// scheduling and however many CTAs fit on the device at once. A launch
// that starts early (TrsvOptions::early_start) changes nothing there: its
// CTAs run only once every CTA of the kernel before it has taken its ticket
// (each lets the next kernel's launch begin right after), so those are all
// resident or done, and the early CTAs wait only for them and for their own
// predecessors.
//
// An early start: a CTA's work that reads neither x nor the previous
// kernel's results (its ticket from its own scratch, the tile (L, L - 1),
// the diagonal block's inversion or the kept inverse's load) runs while the
// kernel before it on the stream ends; it waits for that kernel
// (griddepcontrol.wait: complete, its writes visible) before it reads b or
// writes x, the counts or the flagged copy.
//
// Publication, two ways. The chain's next link: the warps store x_L twice,
// in x and in the flagged copy (each 32-bit word beside a flag in one
// single-copy-atomic 64-bit store, relaxed, gpu scope), and a CTA waiting
// at the chain's front polls the copy of x_J (ld.relaxed.gpu): a flag seen
// is the value in hand, with no fence before it on the writer's side and no
// second load after it on the reader's (the protocol of NCCL's LL).
// The count, for a CTA behind the front: sync[1] ("done") counts the
// blocks whose x is written. Block L raises it only after it has seen done
// >= L, so blocks count in order and done only ever goes L -> L + 1,
// written by block L alone: done > J is block J's flag. After its stores
// the CTA meets (__syncthreads, which orders its threads' memory accesses)
// and thread 0, once done >= L, stores L + 1 with release semantics (gpu
// scope; a release is cumulative, so it covers the other threads' stores
// ordered before it: the pattern of CUTLASS's barrier arrive). A reader
// CTA's thread 0 loads done with acquire semantics and hands the count to
// the other threads through __syncthreads (causality order is transitive
// across the gpu-scope acquire and the CTA barrier); x is then read through
// L2 (ld.global.cg), never from a stale L1 line. Seeing count v covers every
// block below v: block v - 1 acquired v - 1 before it released v. The count
// trails the chain by its own latency, off the critical path.
//
// Non-finite values propagate: nothing is clamped, and a zero on a non-unit
// diagonal has an infinite (complex: NaN) reciprocal.
//
// A first block F > 0 (forward substitution only: the caller's x is zero
// above row F * kNb): the CTAs of tickets L < F write zeros for their rows
// and exit, and ticket 0 raises done to F at once (atomicMax: it never
// lowers a count that block F may already have raised to F + 1). Blocks
// L >= F accumulate tiles J >= F only: with x_J zero, the skipped tiles'
// products would be exact zeros added to +0 sums (finite triangle), so the
// sums, and every x, are bitwise those of the solve from block 0, and
// every wait, release and the deadlock argument above stay as they are
// (block L waits only for blocks F <= J < L, all resident).
#include <cuComplex.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "server/gpu/device_arith.cuh"
#include "server/gpu/kernels_impl.h"

namespace linalgd::gpu::impl {
namespace {

// Rows per CTA, kNb: 32 or 64 (TrsvBlock). 256 threads (8 warps) either
// way; lane l of a warp owns rows l + 32 p, p < kRows = kNb / 32, of the
// diagonal block when it is inverted (warp shuffles only) and their
// residuals when the block is solved (SolveRows: warp w rows w + 8 i), and
// a kNb x kNb tile is spread over the 256 threads, kPerThread elements each
// (32: 4; 64: 16). 64 halves the chain of blocks, whose cost per block is
// mostly fixed latency (x_J's way from its block through L2), for
// a 2x longer block solve on the chain and half the CTAs streaming the
// triangle.
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
template <int kNb>
struct Shape {
  static_assert(kNb == 32 || kNb == 64, "block rows: 32 or 64");
  static constexpr int kRows = kNb / 32;                   // rows per lane
  static constexpr int kPerThread = kNb * kNb / kThreads;  // tile elements per thread
  static constexpr int kCols = kNb / kWarps;               // inverse columns (rows) per warp
  static constexpr int kTri = kNb * (kNb + 1) / 2;         // packed lower triangle
};

// Packed lower-triangle index of (r, k), k <= r: rows one after another.
// For a fixed k the lanes' rows r = lane + 32 p hit distinct banks (the
// triangular numbers of 0..2^m - 1 are distinct mod 2^m).
__device__ __forceinline__ int Tri(int r, int k) { return r * (r + 1) / 2 + k; }

// K sums over the warp's lanes at once (K a power of two <= 32; a fixed
// order): returns, in lane l, the sum over the lanes of v[l / (32 / K)].
// Each halving step swaps half of the values still held with the partner
// lane (lanes with the mask's bit set keep the upper half), so the K sums
// take K - 1 + log2(32 / K) shuffles where K butterflies would take 5 K.
template <typename T, int K>
__device__ __forceinline__ T RowsSum(T (&v)[K], int lane) {
  static_assert(K >= 1 && K <= 32 && (K & (K - 1)) == 0, "K: a power of two <= 32");
#pragma unroll
  for (int half = K / 2, m = 16; half >= 1; half /= 2, m /= 2) {
    const bool upper = (lane & m) != 0;
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const T send = upper ? v[i] : v[i + half];
      const T keep = upper ? v[i + half] : v[i];
      v[i] = Add(keep, ShflXor(send, m));
    }
  }
  T sum = v[0];
#pragma unroll
  for (int m = 16 / K; m >= 1; m /= 2) sum = Add(sum, ShflXor(sum, m));
  return sum;
}

__device__ __forceinline__ unsigned LoadAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void StoreRelease(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The flagged copy of x (the scratch past the counters): each 32-bit word
// of an element is stored beside kFlag in one 64-bit word, so a reader that
// sees the flag has the value in the same (single-copy atomic) access, with
// no fence on the writer's side and no second load on the reader's. The
// copy is zeroed before each launch (by the launch, or by the caller:
// TrsvOptions::scratch_zeroed), so a flag is only ever this launch's.
constexpr uint32_t kFlag = 1;
template <typename T>
constexpr int kWords = static_cast<int>(sizeof(T) / 4);

__device__ __forceinline__ void StoreFlagged(uint64_t* p, uint32_t word) {
  const uint64_t v = (uint64_t{kFlag} << 32) | word;
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t LoadRelaxed(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Programmatic dependent launch (sm_90 and up; no-ops before, and where the
// launch did not ask for it): this CTA lets the stream's next kernel begin
// its launch, and waits for the kernels before it to complete, their
// writes visible.
__device__ __forceinline__ void LetNextKernelStart() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void WaitForPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The device's nanosecond clock.
__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A bound on one wait: a block's predecessor publishes within microseconds,
// so a wait this long means a broken invariant; the kernel traps (a sticky
// launch failure, which fences the device) rather than hang its caller.
constexpr uint64_t kMaxWaitNs = uint64_t{20} * 1000 * 1000 * 1000;

// One pause of a poll loop `ahead` blocks from what it waits for: none
// within two blocks (polls back to back), else 128 ns per block (at most 2
// us), so hundreds of waiting CTAs do not crowd one L2 line; and a trap
// once the wait, begun at `start`, has passed kMaxWaitNs (checked every
// 1024 polls).
__device__ __forceinline__ void PollPause(unsigned ahead, unsigned polls, uint64_t start) {
  if (ahead > 2) __nanosleep(ahead < 16 ? 128 * ahead : 2048);
  if (polls % 1024 == 0 && GlobalTimerNs() - start > kMaxWaitNs) __trap();
}

// Spins until *done >= need (acquire) and returns the count seen; one
// thread. `own` is the caller's block: the pauses (PollPause) count the
// blocks from the count to `own`. REQUIRES: need <= own.
__device__ unsigned PollCount(const unsigned* done, unsigned need, unsigned own) {
  const uint64_t start = GlobalTimerNs();
  unsigned v = LoadAcquire(done);
  for (unsigned polls = 1; v < need; ++polls) {
    PollPause(own - v, polls, start);  // own - v >= 1: v < need <= own
    v = LoadAcquire(done);
  }
  return v;
}
// PollCount for the CTA: the count seen, the same in every thread. Thread 0
// alone polls, so one CTA is one poller however many warps wait, and the
// barrier hands what it acquired on to the others. Called by every thread of
// the CTA (CTA-uniform control flow).
__device__ unsigned WaitPublished(const unsigned* done, unsigned need, unsigned own,
                                  unsigned* seen) {
  if (threadIdx.x == 0) *seen = PollCount(done, need, own);
  __syncthreads();
  const unsigned v = *seen;
  __syncthreads();  // every thread has read *seen before thread 0 writes it again
  return v;
}

// The flagged copy of x's columns: element i of column c at words
// (c * n + i) * kWords<T> onward (physical rows, as x).
template <typename T>
struct Flagged {
  uint64_t* words;
  int64_t n;

  __device__ uint64_t* At(int c, int64_t i) const { return words + (c * n + i) * kWords<T>; }
  __device__ void Store(int c, int64_t i, T v) const {
    uint32_t w[kWords<T>];
    memcpy(w, &v, sizeof(T));
    uint64_t* p = At(c, i);
#pragma unroll
    for (int q = 0; q < kWords<T>; ++q) StoreFlagged(p + q, w[q]);
  }
  // Whether element i of column c is published; if so, its value in *v.
  __device__ bool TryLoad(int c, int64_t i, T* v) const {
    uint32_t w[kWords<T>];
    bool ok = true;
    const uint64_t* p = At(c, i);
#pragma unroll
    for (int q = 0; q < kWords<T>; ++q) {
      const uint64_t u = LoadRelaxed(p + q);
      w[q] = static_cast<uint32_t>(u);
      ok = ok && (u >> 32) == kFlag;
    }
    if (ok) memcpy(v, w, sizeof(T));
    return ok;
  }
};

// TrsvOptions::trace's stamps (kernels_impl.h TrsvStamp) by thread 0 of
// block L: the device's nanosecond clock and the SM's cycle count. A
// template parameter, so the kernels that do not trace carry no trace code
// (a null check per stamp cost an untraced sweep 2-3%).
template <bool kOn>
struct Tracer {
  uint64_t* trace;
  __device__ __forceinline__ void operator()(int64_t L, int k) const {
    if constexpr (kOn) {
      if (threadIdx.x != 0) return;
      uint64_t c;
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
      trace[(L * kTrsvStamps + k) * 2] = GlobalTimerNs();
      trace[(L * kTrsvStamps + k) * 2 + 1] = c;
    }
  }
};

// Where the logical system's pieces are in memory.
template <typename T, bool kTrans>
struct Triangle {
  const T* a;
  int64_t n, ld;
  bool forward, conj;

  __device__ int64_t Phys(int64_t l) const { return forward ? l : n - 1 - l; }
  // M(li, lj) = op(T)(Phys(li), Phys(lj)). Consecutive addresses: li for op
  // N, lj for op T / C (so threads map lanes to that index).
  __device__ T At(int64_t li, int64_t lj) const {
    const int64_t pi = Phys(li), pj = Phys(lj);
    const T v = kTrans ? __ldg(a + pj + pi * ld) : __ldg(a + pi + pj * ld);
    return conj ? Conj(v) : v;
  }
};

// Slot q of a thread's elements of a tile: tile row r, column k. The index
// along memory (r for op N, k for op T / C) is lane + 32 * (q % kRows), the
// other warp + kWarps * (q / kRows), so a warp's loads are coalesced.
template <int kNb, bool kTrans>
__device__ __forceinline__ void SlotOf(int q, int lane, int warp, int& r, int& k) {
  const int along = lane + 32 * (q % Shape<kNb>::kRows);
  const int across = warp + kWarps * (q / Shape<kNb>::kRows);
  r = kTrans ? across : along;
  k = kTrans ? along : across;
}

// This thread's elements of tile (L, J): slot q is logical (row0 + r, j0 +
// k) (SlotOf); rows past nb are zero.
template <typename T, int kNb, bool kTrans>
__device__ __forceinline__ void LoadTile(const Triangle<T, kTrans>& m, int64_t row0, int nb,
                                         int64_t j0, int lane, int warp,
                                         T (&t)[Shape<kNb>::kPerThread]) {
#pragma unroll
  for (int q = 0; q < Shape<kNb>::kPerThread; ++q) {
    int r, k;
    SlotOf<kNb, kTrans>(q, lane, warp, r, k);
    t[q] = r < nb ? m.At(row0 + r, j0 + k) : ZeroOf<T>();
  }
}

// acc[c][q] += t[q] * x_at(c, k), k the tile column of slot q: column c's
// element k of the block x comes from.
template <typename T, int kNb, int kNrhs, bool kTrans, typename XAt>
__device__ __forceinline__ void AccumulateFrom(const XAt& x_at, int lane, int warp,
                                               const T (&t)[Shape<kNb>::kPerThread],
                                               T (&acc)[kNrhs][Shape<kNb>::kPerThread]) {
#pragma unroll
  for (int q = 0; q < Shape<kNb>::kPerThread; ++q) {
    int r, k;
    SlotOf<kNb, kTrans>(q, lane, warp, r, k);
#pragma unroll
    for (int c = 0; c < kNrhs; ++c) acc[c][q] = MulAdd(acc[c][q], t[q], x_at(c, k));
  }
}

// AccumulateFrom x (column c at x + c * n), the published block starting at
// j0, read through L2.
template <typename T, int kNb, int kNrhs, bool kTrans>
__device__ __forceinline__ void Accumulate(const Triangle<T, kTrans>& m, const T* x, int64_t j0,
                                           int lane, int warp, const T (&t)[Shape<kNb>::kPerThread],
                                           T (&acc)[kNrhs][Shape<kNb>::kPerThread]) {
  AccumulateFrom<T, kNb, kNrhs, kTrans>(
      [&](int c, int k) { return __ldcg(x + c * m.n + m.Phys(j0 + k)); }, lane, warp, t, acc);
}

// AccumulateFrom x_J in shared memory (xs[c][k]: column c, row j0 + k): the
// same products in the same order.
template <typename T, int kNb, int kNrhs, bool kTrans>
__device__ __forceinline__ void AccumulateShared(const T (*xs)[kNb], int lane, int warp,
                                                 const T (&t)[Shape<kNb>::kPerThread],
                                                 T (&acc)[kNrhs][Shape<kNb>::kPerThread]) {
  AccumulateFrom<T, kNb, kNrhs, kTrans>([&](int c, int k) { return xs[c][k]; }, lane, warp, t, acc);
}

// xs <- x_J (every column, kNb rows: J < L is a full block) from the
// flagged copy, each element polled by its own thread until its flags are
// set. Returns whether every element was there at the first look (this CTA
// is behind the chain's front), the same in every thread. Pauses as
// PollCount's (PollPause), by the blocks from J to L. Every thread of the
// CTA.
template <typename T, int kNb, int kNrhs, bool kTrans, typename Tr>
__device__ bool WaitFlagged(const Triangle<T, kTrans>& m, const Flagged<T>& f, int64_t J, int64_t L,
                            T (*xs)[kNb], const Tr& stamp) {
  if (J + 1 == L) stamp(L, kTrsvStampLastWait);
  bool first_look = true;
  const int e = threadIdx.x;
  if (e < kNrhs * kNb) {
    const int c = e / kNb, k = e % kNb;
    const int64_t i = m.Phys(J * kNb + k);
    const unsigned ahead = static_cast<unsigned>(L - J);  // >= 1
    T v;
    if (!f.TryLoad(c, i, &v)) {
      first_look = false;
      const uint64_t start = GlobalTimerNs();
      for (unsigned polls = 1;; ++polls) {
        PollPause(ahead, polls, start);
        if (f.TryLoad(c, i, &v)) break;
      }
    }
    xs[c][k] = v;
  }
  const bool behind = __syncthreads_and(first_look) != 0;  // xs is complete
  if (J + 1 == L) stamp(L, kTrsvStampLastSeen);
  return behind;
}

// Whether a CTA loads its tile (L, L - 1) at its start and holds it in
// registers (`last`) until x_{L - 1} arrives: that tile's products are on the
// chain's critical path, and loaded just before the wait (as the other
// tiles are) its trip to HBM was not always over when x_{L - 1} came. Not
// for complex<double>, whose 16 more elements of 16 bytes would spill.
template <typename T>
constexpr bool kHoldLast = sizeof(T) <= 8;

// acc += this block row's tiles first <= J < L, each once its x is
// published (in J order for every sum, however the tiles are grouped);
// tile L - 1 at the front from `last` where kHoldLast<T>.
// Every warp runs the same sequence of J and `known`, so the waits are
// CTA-uniform.
// At the chain's front (J not yet counted as published) x_J comes from its
// flagged copy (WaitFlagged), one tile at a time, into xs[J % 2] (two
// buffers: a warp passes tile J's barrier only once every warp has finished
// tile J - 1's reads, so tile J + 1's writes never meet them); behind the
// front, the count says which blocks' x may be read from x itself, and
// tiles go in groups.
template <typename T, int kNb, int kNrhs, bool kTrans, typename Tr>
__device__ void OffDiagonal(const Triangle<T, kTrans>& m, const Flagged<T>& f, const T* x,
                            const unsigned* done, unsigned* seen, int64_t first, int64_t L,
                            int64_t row0, int nb, int lane, int warp, T (*xs)[kNrhs][kNb],
                            const Tr& stamp, const T (&last)[Shape<kNb>::kPerThread],
                            T (&acc)[kNrhs][Shape<kNb>::kPerThread]) {
  constexpr int kPer = Shape<kNb>::kPerThread;
  // Tiles per step once they are all published: their loads are issued
  // together, so a warp keeps several tiles in flight (fewer for the 16-byte
  // complex<double>, the 4x larger tiles of kNb 64 and two columns' sums, to
  // bound registers).
  constexpr int kTiles = (sizeof(T) >= 16 ? 2 : 4) * 32 / kNb / kNrhs;
  constexpr int kGroup = kTiles > 1 ? kTiles : 1;
  // Blocks the count has shown published (x readable) or known zero
  // (CTA-uniform).
  int64_t known = first;
  int64_t J = first;
  while (J < L) {
    if (known <= J) {  // the chain's front: load the tile, then wait for x_J
      T t[kPer];
      if (kHoldLast<T> && J + 1 == L) {
#pragma unroll
        for (int q = 0; q < kPer; ++q) t[q] = last[q];
      } else {
        LoadTile<T, kNb>(m, row0, nb, J * kNb, lane, warp, t);
      }
      const bool behind = WaitFlagged<T, kNb, kNrhs>(m, f, J, L, xs[J % 2], stamp);
      AccumulateShared<T, kNb, kNrhs, kTrans>(xs[J % 2], lane, warp, t, acc);
      ++J;
      // Behind the front: the count tells how many tiles may go in groups.
      if (behind && J + 1 < L) known = WaitPublished(done, 0, static_cast<unsigned>(L), seen);
      continue;
    }
    const int64_t avail = known < L ? known : L;
    if (J + kGroup <= avail) {
      T t[kGroup][kPer];
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        LoadTile<T, kNb>(m, row0, nb, (J + g) * kNb, lane, warp, t[g]);
      }
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        Accumulate<T, kNb, kNrhs>(m, x, (J + g) * kNb, lane, warp, t[g], acc);
      }
      J += kGroup;
    } else {
      T t[kPer];
      LoadTile<T, kNb>(m, row0, nb, J * kNb, lane, warp, t);
      Accumulate<T, kNb, kNrhs>(m, x, J * kNb, lane, warp, t, acc);
      ++J;
    }
  }
}

// tri = M's diagonal block strictly below its diagonal, packed (Tri; rows
// past nb zero), loaded along memory; rdiag[r] = 1 / M(r, r) (1 when unit
// or r >= nb). Every thread of the CTA. Each thread issues all its loads
// before it stores any: the first blocks load theirs on the chain's critical
// path, where a loop that waited for each load in turn (16 at 64 rows, each
// a trip to HBM) made a sweep 2-12% slower on an H100.
template <typename T, int kNb, bool kTrans>
__device__ void LoadDiagonalBlock(const Triangle<T, kTrans>& m, int64_t row0, int nb, bool unit,
                                  T* tri, T* rdiag) {
  constexpr int kLoads = kNb * kNb / kThreads;
  const int t = static_cast<int>(threadIdx.x);
  static_assert(kLoads * kThreads == kNb * kNb, "whole loads per thread");
  T v[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int e = t + i * kThreads;
    const int fast = e % kNb, slow = e / kNb;  // fast: the index along memory
    const int r = kTrans ? slow : fast, k = kTrans ? fast : slow;
    v[i] = k < r && r < nb ? m.At(row0 + r, row0 + k) : ZeroOf<T>();
  }
  T d = One(static_cast<T*>(nullptr));
  if (t < kNb && t < nb && !unit) d = m.At(row0 + t, row0 + t);
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const int e = t + i * kThreads;
    const int fast = e % kNb, slow = e / kNb;
    const int r = kTrans ? slow : fast, k = kTrans ? fast : slow;
    if (k < r) tri[Tri(r, k)] = v[i];
  }
  if (t < kNb) {
    const T one = One(static_cast<T*>(nullptr));
    rdiag[t] = t < nb && !unit ? Div(one, d) : one;
  }
}

// tri <- the inverse of the diagonal block (tri's strictly lower part
// below, 1 / rdiag on the diagonal), lower, packed: forward substitution on
// the unit vectors, warp w taking columns w + kWarps * c, lane l rows l + 32
// p, in registers; then a barrier (every warp has read tri's block) and the
// inverse over it. It runs while the CTA waits for its predecessors, so the
// block's own solve on the chain's critical path is a product
// (SolveRows), not kNb dependent steps. A NaN or Inf in the block reaches
// the inverse's entries at and below its row, as substitution would reach
// those unknowns. REQUIRES: tri and rdiag complete; every thread of the CTA.
template <typename T, int kNb>
__device__ void InvertDiagonalBlock(const T* rdiag, bool unit, int lane, int warp, T* tri) {
  using S = Shape<kNb>;
  const T one = One(static_cast<T*>(nullptr));
  T rd[S::kRows];
  T y[S::kCols][S::kRows];  // column warp + kWarps * c, row lane + 32 * p
#pragma unroll
  for (int p = 0; p < S::kRows; ++p) {
    rd[p] = rdiag[lane + 32 * p];
#pragma unroll
    for (int c = 0; c < S::kCols; ++c) {
      y[c][p] = lane + 32 * p == warp + kWarps * c ? one : ZeroOf<T>();
    }
  }
  // Row k = 32 pk + lk: lane lk's slot pk. The loop over lk is not
  // unrolled: unrolled over all kNb rows this was most of the kernel's code
  // (about 130 KB of it at 64 rows of doubles), which the first blocks,
  // whose inversion is on the chain's critical path, fetched cold.
#pragma unroll
  for (int pk = 0; pk < S::kRows; ++pk) {
#pragma unroll 1
    for (int lk = 0; lk < 32; ++lk) {
      const int k = 32 * pk + lk;
#pragma unroll
      for (int c = 0; c < S::kCols; ++c) {
        if (lane == lk && !unit) y[c][pk] = Mul(y[c][pk], rd[pk]);
        const T yk = Shfl(y[c][pk], lk);
#pragma unroll
        for (int p = 0; p < S::kRows; ++p) {
          const int r = lane + 32 * p;
          if (r > k) y[c][p] = MulSub(y[c][p], tri[Tri(r, k)], yk);
        }
      }
    }
  }
  __syncthreads();  // every warp has read the block: the inverse replaces it
#pragma unroll
  for (int c = 0; c < S::kCols; ++c) {
#pragma unroll
    for (int p = 0; p < S::kRows; ++p) {
      const int r = lane + 32 * p, col = warp + kWarps * c;
      if (col <= r) tri[Tri(r, col)] = y[c][p];
    }
  }
}

// dst[e] = src[e] for the kTri elements of a packed inverse (tri <-> a
// block's entry of TrsvOptions::inverses), the loads all issued before the
// stores. Every thread of the CTA.
template <typename T, int kNb>
__device__ __forceinline__ void CopyInverse(const T* src, T* dst) {
  constexpr int kPer = (Shape<kNb>::kTri + kThreads - 1) / kThreads;
  T v[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = static_cast<int>(threadIdx.x) + i * kThreads;
    if (e < Shape<kNb>::kTri) v[i] = src[e];
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = static_cast<int>(threadIdx.x) + i * kThreads;
    if (e < Shape<kNb>::kTri) dst[e] = v[i];
  }
}

// The block's solve, x_r = sum over c <= r, c < nb of inv(r, c) * s_c for
// each column, spread over the CTA: warp w takes rows w + kWarps * i (i <
// kCols), lane l the terms c = l + 32 p (its own s slots, so no s moves),
// and RowsSum adds each row's terms over the lanes. Returns, per column j,
// row RowOf(lane, warp)'s x in every lane (written by the lanes where
// Writes(lane)). Terms above the diagonal are skipped, not multiplied by
// zero, so a non-finite s_c reaches only the rows it should. Warp-uniform
// (nb is the same in every lane); on the chain's critical path, so every
// warp takes a share (one warp alone would run kNb steps of shuffles).
template <int kNb>
__device__ __forceinline__ int RowOf(int lane, int warp) {
  return warp + kWarps * (lane / (32 / Shape<kNb>::kCols));
}
template <int kNb>
__device__ __forceinline__ bool Writes(int lane) {
  return lane % (32 / Shape<kNb>::kCols) == 0;
}
template <typename T, int kNb, int kNrhs>
__device__ void SolveRows(const T* inv, const T (&s)[kNrhs][Shape<kNb>::kRows], int nb, int lane,
                          int warp, T (&xr)[kNrhs]) {
  using S = Shape<kNb>;
#pragma unroll
  for (int j = 0; j < kNrhs; ++j) {
    T terms[S::kCols];
#pragma unroll
    for (int i = 0; i < S::kCols; ++i) {
      const int r = warp + kWarps * i;
      terms[i] = ZeroOf<T>();
#pragma unroll
      for (int p = 0; p < S::kRows; ++p) {
        const int c = lane + 32 * p;
        if (c <= r && c < nb) terms[i] = MulAdd(terms[i], inv[Tri(r, c)], s[j][p]);
      }
    }
    xr[j] = RowsSum<T, S::kCols>(terms, lane);
  }
}

// partial = the per-thread sums of acc gathered per row (op T / C: summed
// over the lanes, row r at partial[0][r]; op N: per warp, partial[w][r]).
template <typename T, int kNb, bool kTrans>
__device__ void GatherRowSums(const T (&acc)[Shape<kNb>::kPerThread], int lane, int warp,
                              T (*partial)[kNb]) {
  using S = Shape<kNb>;
  if (kTrans) {  // slots g * kRows + p are row warp + kWarps * g, summed over the lanes
    T sums[S::kCols];
#pragma unroll
    for (int g = 0; g < S::kCols; ++g) {
      sums[g] = acc[g * S::kRows];
#pragma unroll
      for (int p = 1; p < S::kRows; ++p) sums[g] = Add(sums[g], acc[g * S::kRows + p]);
    }
    const T sum = RowsSum<T, S::kCols>(sums, lane);  // row RowOf(lane, warp)'s
    if (Writes<kNb>(lane)) partial[0][RowOf<kNb>(lane, warp)] = sum;
  } else {  // slots g * kRows + p are row lane + 32 * p
#pragma unroll
    for (int p = 0; p < S::kRows; ++p) {
      T s = acc[p];
#pragma unroll
      for (int g = 1; g < S::kCols; ++g) s = Add(s, acc[g * S::kRows + p]);
      partial[warp][lane + 32 * p] = s;
    }
  }
}

// Row r's sum from GatherRowSums. REQUIRES: partial complete.
template <typename T, int kNb, bool kTrans>
__device__ T RowSum(const T (*partial)[kNb], int r) {
  if (kTrans) return partial[0][r];
  T sum = partial[0][r];
  for (int w = 1; w < kWarps; ++w) sum = Add(sum, partial[w][r]);
  return sum;
}

// Rows of partial sums per column: op N gathers one row per warp, op T / C
// one summed over the lanes.
template <bool kTrans>
constexpr int kPartialRows = kTrans ? 1 : kWarps;

// The rows of block row0 (nb of them) set to zero in every column: a block
// before the first one that the caller's x has nonzero values in. Every
// thread of the CTA.
template <typename T, int kNrhs, bool kTrans>
__device__ void WriteZeroRows(const Triangle<T, kTrans>& m, T* x, int64_t row0, int nb) {
  for (int e = threadIdx.x; e < kNrhs * nb; e += kThreads) {
    x[(e / nb) * m.n + m.Phys(row0 + e % nb)] = ZeroOf<T>();
  }
}

// s[j][p] = b[j][p] - (row lane + 32 p's sum of acc[j]) in every warp, for
// each column j. Every thread of the CTA; its barrier also publishes the
// inverse InvertDiagonalBlock wrote.
template <typename T, int kNb, bool kTrans, int kNrhs>
__device__ void BlockResiduals(const T (&acc)[kNrhs][Shape<kNb>::kPerThread],
                               const T (&b)[kNrhs][Shape<kNb>::kRows], int lane, int warp,
                               T (*partial)[kPartialRows<kTrans>][kNb],
                               T (&s)[kNrhs][Shape<kNb>::kRows]) {
#pragma unroll
  for (int j = 0; j < kNrhs; ++j) GatherRowSums<T, kNb, kTrans>(acc[j], lane, warp, partial[j]);
  __syncthreads();  // partial and the inverse are complete
#pragma unroll
  for (int j = 0; j < kNrhs; ++j) {
#pragma unroll
    for (int p = 0; p < Shape<kNb>::kRows; ++p) {
      s[j][p] = Sub(b[j][p], RowSum<T, kNb, kTrans>(partial[j], lane + 32 * p));
    }
  }
}

// A block before the first one the caller's x has nonzero values in:
// its rows of x set to zero, and block 0 raises the count to `first` (the
// header's "A first block F > 0").
template <typename T, int kNrhs, bool kTrans>
__device__ void ZeroBlock(const Triangle<T, kTrans>& m, T* x, unsigned* sync, int64_t first,
                          int64_t L, int64_t row0, int nb) {
  if (L == 0 && threadIdx.x == 0) atomicMax(sync + 1, static_cast<unsigned>(first));
  WriteZeroRows<T, kNrhs>(m, x, row0, nb);
}

// first: the first block the caller's x has nonzero values in (forward
// substitution), else 0. early: launched to start early (the header's "An
// early start"): b is read after the wait, not before the inversion.
template <typename T, int kNb, bool kTrans, int kNrhs, bool kTrace>
__global__ void __launch_bounds__(kThreads)
    TrsvKernel(Triangle<T, kTrans> m, bool unit, T* x, unsigned* sync, Flagged<T> f, int64_t first,
               Tracer<kTrace> stamp, T* inverses, bool inverses_filled, bool early) {
  using S = Shape<kNb>;
  // M's diagonal block strictly below its diagonal, then its inverse (lower;
  // packed, Tri): at kNb 64 two unpacked blocks of complex<double> would
  // pass the 48 KiB of static shared memory.
  __shared__ T tri[S::kTri];
  __shared__ T partial[kNrhs][kPartialRows<kTrans>][kNb];  // row sums (GatherRowSums)
  __shared__ T rdiag[kNb];                                 // 1 / its diagonal
  __shared__ T xs[2][kNrhs][kNb];  // x_J from the flagged copy (OffDiagonal)
  __shared__ unsigned ticket, seen;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) ticket = atomicAdd(sync, 1u);
  __syncthreads();
  LetNextKernelStart();  // this CTA has its ticket (the header's deadlock argument)
  const int64_t L = ticket;
  stamp(L, kTrsvStampStart);
  const int64_t row0 = L * kNb;
  const int nb = static_cast<int>(m.n - row0 < kNb ? m.n - row0 : kNb);
  // This block's entry of the kept inverses (TrsvOptions::inverses), if any.
  T* const kept = inverses == nullptr ? nullptr : inverses + L * S::kTri;
  const bool zero = L < first, storing = kept != nullptr && !inverses_filled;
  // x is zero here: so is the solution. A block that stores its inverse
  // too (below, for a later solve that starts before it: off the chain,
  // which does not wait for it) writes its zeros first unless it started
  // early, when they wait for the previous kernel, after the inversion.
  if (zero && !(early && storing)) {
    WaitForPreviousKernel();
    ZeroBlock<T, kNrhs>(m, x, sync, first, L, row0, nb);
    if (!storing) return;
  }
  T b[kNrhs][S::kRows];  // every warp, lane l, slot p: b of row l + 32 p
  auto load_b = [&] {
#pragma unroll
    for (int j = 0; j < kNrhs; ++j) {
#pragma unroll
      for (int p = 0; p < S::kRows; ++p) {
        const int r = lane + 32 * p;
        b[j][p] = r < nb && !zero ? __ldcg(x + j * m.n + m.Phys(row0 + r)) : ZeroOf<T>();
      }
    }
  };
  if (!early) load_b();   // the loads overlap the inversion
  T last[S::kPerThread];  // tile (L, L - 1) where kHoldLast<T>; its loads overlap the inversion
  if (kHoldLast<T> && L > first) LoadTile<T, kNb>(m, row0, nb, (L - 1) * kNb, lane, warp, last);
  if (kept != nullptr && inverses_filled) {
    CopyInverse<T, kNb>(kept, tri);  // published by BlockResiduals' barrier
  } else {
    LoadDiagonalBlock<T, kNb>(m, row0, nb, unit, tri, rdiag);
    __syncthreads();  // tri and rdiag are complete
    InvertDiagonalBlock<T, kNb>(rdiag, unit, lane, warp, tri);
    if (kept != nullptr) {
      __syncthreads();  // the inverse is complete
      CopyInverse<T, kNb>(tri, kept);
    }
  }
  if (early) {
    WaitForPreviousKernel();  // x and this launch's counts are ours from here
    if (zero) {
      ZeroBlock<T, kNrhs>(m, x, sync, first, L, row0, nb);
      return;
    }
    load_b();
  } else if (zero) {
    return;
  }
  T acc[kNrhs][S::kPerThread];
#pragma unroll
  for (int j = 0; j < kNrhs; ++j) {
#pragma unroll
    for (int q = 0; q < S::kPerThread; ++q) acc[j][q] = ZeroOf<T>();
  }
  OffDiagonal<T, kNb, kNrhs>(m, f, x, sync + 1, &seen, first, L, row0, nb, lane, warp, xs, stamp,
                             last, acc);
  stamp(L, kTrsvStampSums);
  T s[kNrhs][S::kRows];
  BlockResiduals<T, kNb, kTrans, kNrhs>(acc, b, lane, warp, partial, s);
  stamp(L, kTrsvStampResiduals);
  T xr[kNrhs];
  SolveRows<T, kNb, kNrhs>(tri, s, nb, lane, warp, xr);
  stamp(L, kTrsvStampSolved);
  const int r = RowOf<kNb>(lane, warp);
  if (Writes<kNb>(lane) && r < nb) {
    const int64_t i = m.Phys(row0 + r);
#pragma unroll
    for (int j = 0; j < kNrhs; ++j) {
      f.Store(j, i, xr[j]);  // the chain's next link reads this copy
      x[j * m.n + i] = xr[j];
    }
  }
  // The count, off the chain's critical path: every warp's stores of x
  // precede thread 0's release (one fence, in the release; the pattern of
  // CUTLASS's barrier arrive), which waits for the count to reach L so the
  // count still goes up by one, in block order.
  __syncthreads();
  if (threadIdx.x == 0) {
    stamp(L, kTrsvStampStored);
    PollCount(sync + 1, static_cast<unsigned>(L), static_cast<unsigned>(L));
    StoreRelease(sync + 1, static_cast<unsigned>(L + 1));
    stamp(L, kTrsvStampCounted);
  }
}

// dst[i] = src[perm[i]], or dst[perm[i]] = src[i] when inverse; T: an
// unsigned type of the element's size (the values are only moved).
template <typename T>
__global__ void PermuteKernel(const int64_t* perm, bool inverse, const T* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if (inverse) {
      dst[perm[i]] = src[i];
    } else {
      dst[i] = src[perm[i]];
    }
  }
}

template <typename T>
cudaError_t LaunchPermute(const int64_t* perm, bool inverse, const void* src, void* dst, int64_t n,
                          cudaStream_t stream) {
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 65535);
  PermuteKernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
      perm, inverse, static_cast<const T*>(src), static_cast<T*>(dst), n);
  return cudaGetLastError();
}

// One TriangularSolve, resolved: forward when op(T) is lower; columns of
// x at x + c * n.
struct TrsvArgs {
  bool forward;
  int op;
  bool unit;
  int64_t n;
  const void* a;
  int64_t ld;
  void* x;
  unsigned* sync;
  int64_t first_nonzero;
  cudaStream_t stream;
  TrsvExtras extras;
};

// Whether the current device takes programmatic dependent launches
// (compute capability 9.0 and up).
bool EarlyStartSupported() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
         major >= 9;
}

// `kernel` on g's stream, grid x kThreads, its start programmatically
// dependent on the stream's previous kernel when `early`.
template <typename Kernel, typename... Args>
cudaError_t Launch(const TrsvArgs& g, unsigned grid, bool early, Kernel kernel, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(kThreads);
  config.stream = g.stream;
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (early) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// Zeroes the block counters (unless the caller did), then launches the
// kNrhs-column kernel (op N when !kTrans, else T or C).
template <typename T, int kNb, bool kTrans, int kNrhs>
cudaError_t LaunchTrsv(const TrsvArgs& g) {
  if (!g.extras.scratch_zeroed) {
    const cudaError_t e =
        cudaMemsetAsync(g.sync, 0, TriangularSolveScratchBytes(sizeof(T), g.n, kNrhs), g.stream);
    if (e != cudaSuccess) return e;
  }
  const bool early = g.extras.early_start && EarlyStartSupported();
  const int64_t blocks = (g.n + kNb - 1) / kNb;
  const int64_t first = g.forward ? std::min(g.first_nonzero / kNb, blocks) : 0;
  const Triangle<T, kTrans> m{static_cast<const T*>(g.a), g.n, g.ld, g.forward, g.op == 2};
  const Flagged<T> f{
      reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(g.sync) + kTriangularSolveCounterBytes),
      g.n};
  const unsigned grid = static_cast<unsigned>(blocks);
  constexpr bool kTraceable =
      kNrhs == 1 && kNb == 64 && (std::is_same_v<T, float> || std::is_same_v<T, double>);
  T* const inverses = static_cast<T*>(g.extras.inverses);
  if constexpr (kTraceable) {
    if (g.extras.trace != nullptr) {
      return Launch(g, grid, early, TrsvKernel<T, kNb, kTrans, kNrhs, true>, m, g.unit,
                    static_cast<T*>(g.x), g.sync, f, first, Tracer<true>{g.extras.trace}, inverses,
                    g.extras.inverses_filled, early);
    }
  }
  return Launch(g, grid, early, TrsvKernel<T, kNb, kTrans, kNrhs, false>, m, g.unit,
                static_cast<T*>(g.x), g.sync, f, first, Tracer<false>{nullptr}, inverses,
                g.extras.inverses_filled, early);
}

// Whether the two-column kernel exists for T at kNb rows and the op: where
// it spilled no registers when chosen (ptxas -v, sm_90: complex<float> and
// complex<double> op N at 32 rows, complex<double> at 64 rows did; later
// changes to the kernel moved small spills, 16-32 bytes, between its
// instances as ptxas chose other register counts). Elsewhere two columns
// are two one-column solves, one after the other.
template <typename T, int kNb, bool kTrans>
constexpr bool kTwoColumnKernel = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                  (kNb == 32 && kTrans) || (std::is_same_v<T, float2> && kNb == 64);

// `nrhs` (1 or 2) columns at kNb rows per block.
template <typename T, int kNb, bool kTrans>
cudaError_t LaunchColumns(const TrsvArgs& g, int nrhs) {
  if (nrhs == 1) return LaunchTrsv<T, kNb, kTrans, 1>(g);
  if constexpr (kTwoColumnKernel<T, kNb, kTrans>) {
    return LaunchTrsv<T, kNb, kTrans, 2>(g);
  } else {
    for (int c = 0; c < nrhs; ++c) {
      TrsvArgs one = g;
      one.x = static_cast<T*>(g.x) + c * g.n;
      if (c > 0) {  // the scratch the first column's launch used: zeroed again, and no early start
        one.extras.scratch_zeroed = false;
        one.extras.early_start = false;
      }
      const cudaError_t e = LaunchTrsv<T, kNb, kTrans, 1>(one);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
}

template <typename T, int kNb>
cudaError_t LaunchOp(const TrsvArgs& g, int nrhs) {
  return g.op == 0 ? LaunchColumns<T, kNb, false>(g, nrhs) : LaunchColumns<T, kNb, true>(g, nrhs);
}

// LaunchOp at block rows nb (32 or 64; checked by the caller).
template <typename T>
cudaError_t LaunchTrsvRows(int nb, const TrsvArgs& g, int nrhs) {
  return nb == 64 ? LaunchOp<T, 64>(g, nrhs) : LaunchOp<T, 32>(g, nrhs);
}

}  // namespace

cudaError_t TrsvResidentCtas(Elem t, int nb, int* ctas) {
  if (nb != 32 && nb != 64) return cudaErrorInvalidValue;
  // The first answer per device (of the first 64), element type and block
  // height, kept: neither the SMs nor a kernel's occupancy change while the
  // process runs, and the occupancy query costs tens of microseconds.
  constexpr int kCachedDevices = 64, kElems = 6;
  static std::atomic<int> cache[kCachedDevices][kElems][2];
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const int elem = static_cast<int>(t);
  std::atomic<int>* kept = device < kCachedDevices && elem >= 0 && elem < kElems
                               ? &cache[device][elem][nb == 64]
                               : nullptr;
  if (kept != nullptr && (*ctas = kept->load(std::memory_order_relaxed)) > 0) return cudaSuccess;
  auto count = [&](auto kernel) {
    int sms = 0, per_sm = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess)
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0);
    *ctas = sms * per_sm;
    if (e == cudaSuccess && kept != nullptr) kept->store(*ctas, std::memory_order_relaxed);
    return e;
  };
  auto by_rows = [&](auto zero) {
    using T = decltype(zero);
    return nb == 64 ? count(TrsvKernel<T, 64, false, 1, false>)
                    : count(TrsvKernel<T, 32, false, 1, false>);
  };
  switch (t) {
    case Elem::kF32:
      return by_rows(float{});
    case Elem::kF64:
      return by_rows(double{});
    case Elem::kC64:
      return by_rows(float2{});
    case Elem::kC128:
      return by_rows(double2{});
    case Elem::kF16:
    case Elem::kBF16:
      return cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}

cudaError_t Permute(Elem t, const int64_t* perm, bool inverse, const void* src, void* dst,
                    int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (t) {
    case Elem::kF16:
    case Elem::kBF16:
      return LaunchPermute<uint16_t>(perm, inverse, src, dst, n, stream);
    case Elem::kF32:
      return LaunchPermute<uint32_t>(perm, inverse, src, dst, n, stream);
    case Elem::kF64:
    case Elem::kC64:
      return LaunchPermute<uint64_t>(perm, inverse, src, dst, n, stream);
    case Elem::kC128:
      return LaunchPermute<ulonglong2>(perm, inverse, src, dst, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t TriangularSolve(Elem t, bool lower, int op, bool unit, int nb, int nrhs,
                            int64_t first_nonzero, int64_t n, const void* a, int64_t ld, void* x,
                            void* scratch, cudaStream_t stream, const TrsvExtras& extras) {
  if (nb != 32 && nb != 64) return cudaErrorInvalidValue;
  if (nrhs != 1 && nrhs != 2) return cudaErrorInvalidValue;
  if (first_nonzero < 0 || first_nonzero > n) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const bool forward = lower == (op == 0);  // op(T) lower: forward substitution
  const TrsvArgs g{forward,       op,     unit,  n, a, ld, x, static_cast<unsigned*>(scratch),
                   first_nonzero, stream, extras};
  switch (t) {
    case Elem::kF32:
      return LaunchTrsvRows<float>(nb, g, nrhs);
    case Elem::kF64:
      return LaunchTrsvRows<double>(nb, g, nrhs);
    case Elem::kC64:
      return LaunchTrsvRows<float2>(nb, g, nrhs);
    case Elem::kC128:
      return LaunchTrsvRows<double2>(nb, g, nrhs);
    case Elem::kF16:
    case Elem::kBF16:
      return cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}

}  // namespace linalgd::gpu::impl
