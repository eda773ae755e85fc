#!/usr/bin/python3
"""A linear layer, relu(x @ W^T + b), as one fused Matmul (RELU_BIAS epilogue) vs numpy.

x: [batch, seq, in] (batch dims broadcast against W), W: [out, in] as in
torch.nn.Linear (so transpose_b), b: [out]. Also checks GELU_BIAS against the
tanh approximation. W and b are uploaded once (put: RemoteTensors) and named by
id in every call, so only x and the output cross the wire. The exit status is 1
on a mismatch.

    examples/linear_layer.py --target localhost:50051
"""
import argparse
import os
import sys

import numpy as np

try:
    import linalgd
except ImportError:  # a source checkout without `pip install ./client/python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "client", "python"))
    import linalgd


def gelu_tanh(z):
    return 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z ** 3)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="localhost:50051")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--in-features", type=int, default=64)
    p.add_argument("--out-features", type=int, default=32)
    args = p.parse_args(argv)

    rng = np.random.default_rng(2)
    x = rng.standard_normal((args.batch, args.seq, args.in_features)).astype(np.float32)
    w = (rng.standard_normal((args.out_features, args.in_features)) /
         np.sqrt(args.in_features)).astype(np.float32)
    b = rng.standard_normal(args.out_features).astype(np.float32)
    pre = x.astype(np.float64) @ w.T.astype(np.float64) + b
    ok = True
    with linalgd.Client(args.target, timeout=30) as client, client.put(w) as w_remote, \
            client.put(b) as b_remote:
        for epilogue, ref in (("relu_bias", np.maximum(pre, 0.0)), ("gelu_bias", gelu_tanh(pre))):
            r = client.matmul(x, w_remote, bias=b_remote, transpose_b=True, epilogue=epilogue,
                              return_info=True)
            err = float(np.abs(r.out - ref).max())
            good = r.out.shape == ref.shape and r.out.dtype == np.float32 and err < 1e-4
            ok &= good
            print(f"{epilogue}: out {r.out.dtype}{list(r.out.shape)} max|out-numpy|={err:.1e} "
                  f"zeros={np.mean(r.out == 0):.2f} backend={r.info.backend} "
                  f"run_time={r.info.run_time * 1e6:.0f}us")
    print(f"{'ok' if ok else 'MISMATCH'}: linear layer matches numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
