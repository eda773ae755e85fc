#!/usr/bin/python3
"""A torch linear layer whose forward and backward matmuls run on linalgd, checked
against torch's own gradients.

RemoteLinear (a torch.autograd.Function) computes act(x @ W^T + b):
  forward:  one Matmul with the fused RELU_BIAS or GELU_BIAS epilogue (GELU's
            derivative needs the pre-activation z as well, so for GELU a second
            Matmul with the BIAS epilogue returns z);
  backward: grad_z = grad_y * act'(z), then three server Matmuls:
            grad_input = grad_z @ W, grad_weight = grad_z^T @ x,
            grad_bias = ones @ grad_z (the sum over the batch).
Checks: torch.autograd.gradcheck in float64 on small sizes (both activations),
and outputs and gradients against nn.Linear + relu / gelu(tanh) in float32.
Tensors on a CUDA device (--device cuda) are copied to the host once and the
results come back on that device. The exit status is 1 on a mismatch.

    examples/torch_autograd_linear.py --target localhost:50051
"""
import argparse
import os
import sys

import torch

try:
    import linalgd
except ImportError:  # a source checkout without `pip install ./client/python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "client", "python"))
    import linalgd

_EPILOGUE = {"relu": "relu_bias", "gelu": "gelu_bias"}


def _activation_grad(activation, z, y):
    """d act / d z at z (y = act(z))."""
    if activation == "relu":
        return (y > 0).to(z.dtype)
    c = (2.0 / torch.pi) ** 0.5  # tanh approximation, as the server's GELU
    t = torch.tanh(c * (z + 0.044715 * z ** 3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * c * (1 + 3 * 0.044715 * z * z)


class RemoteLinear(torch.autograd.Function):
    """act(x @ weight^T + bias) with every matmul on the server.

    x: [..., in]; weight: [out, in] (as nn.Linear); bias: [out];
    activation: "relu" or "gelu" (tanh approximation).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, client, activation):
        y = client.matmul(x, weight, bias=bias, transpose_b=True,
                          epilogue=_EPILOGUE[activation])
        z = (client.matmul(x, weight, bias=bias, transpose_b=True, epilogue="bias")
             if activation == "gelu" else y)
        ctx.client, ctx.activation = client, activation
        ctx.save_for_backward(x, weight, z, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, z, y = ctx.saved_tensors
        c = ctx.client
        grad_z = (grad_y * _activation_grad(ctx.activation, z, y)).contiguous()
        grad_z2 = grad_z.reshape(-1, grad_z.shape[-1])  # [N, out]
        grad_input = c.matmul(grad_z, weight)  # [..., out] @ [out, in]
        grad_weight = c.matmul(grad_z2, x.reshape(-1, x.shape[-1]), transpose_a=True)
        grad_bias = c.matmul(torch.ones(grad_z2.shape[0], dtype=grad_z.dtype,
                                        device=grad_z.device), grad_z2)
        return grad_input, grad_weight, grad_bias, None, None


def remote_linear(client, x, weight, bias, activation="relu"):
    return RemoteLinear.apply(x, weight, bias, client, activation)


def check_gradcheck(client, device):
    """gradcheck in float64: finite differences of forward against backward."""
    ok = True
    gen = torch.Generator().manual_seed(3)
    for activation in ("relu", "gelu"):
        x = torch.randn(2, 3, 5, dtype=torch.float64, generator=gen).to(device)
        w = torch.randn(4, 5, dtype=torch.float64, generator=gen).to(device)
        b = torch.randn(4, dtype=torch.float64, generator=gen).to(device)
        for t in (x, w, b):
            t.requires_grad_(True)
        good = torch.autograd.gradcheck(
            lambda x, w, b, a=activation: remote_linear(client, x, w, b, a), (x, w, b),
            eps=1e-6, atol=1e-6, raise_exception=False)
        print(f"gradcheck {activation} float64 [2, 3, 5] -> [2, 3, 4]: "
              f"{'passed' if good else 'FAILED'}")
        ok &= good
    return ok


def check_against_nn_linear(client, device, args):
    """Outputs and gradients of RemoteLinear vs nn.Linear + activation, float32."""
    torch.manual_seed(4)
    ok = True
    layer = torch.nn.Linear(args.in_features, args.out_features).to(device)
    x = torch.randn(args.batch, args.seq, args.in_features, device=device)
    for activation, act in (("relu", torch.relu),
                            ("gelu", lambda z: torch.nn.functional.gelu(z, approximate="tanh"))):
        layer.zero_grad()
        x_ref = x.clone().requires_grad_(True)
        y_ref = act(layer(x_ref))
        y_ref.square().sum().backward()
        x_remote = x.clone().requires_grad_(True)
        w = layer.weight.detach().clone().requires_grad_(True)
        b = layer.bias.detach().clone().requires_grad_(True)
        y = remote_linear(client, x_remote, w, b, activation)
        y.square().sum().backward()
        errs = {name: float((got - want).abs().max() / (want.abs().max() + 1e-12))
                for name, got, want in (("out", y, y_ref),
                                        ("grad_input", x_remote.grad, x_ref.grad),
                                        ("grad_weight", w.grad, layer.weight.grad),
                                        ("grad_bias", b.grad, layer.bias.grad))}
        good = y.device == x.device and max(errs.values()) < 1e-5
        print(f"{activation}: vs nn.Linear on {y.device}: " +
              " ".join(f"{k}={v:.1e}" for k, v in errs.items()))
        ok &= good
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="localhost:50051")
    p.add_argument("--device", default="cpu", help="where the tensors live: cpu or cuda")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--in-features", type=int, default=64)
    p.add_argument("--out-features", type=int, default=32)
    args = p.parse_args(argv)
    device = torch.device(args.device)
    with linalgd.Client(args.target, timeout=60) as client:
        ok = check_gradcheck(client, device)
        ok &= check_against_nn_linear(client, device, args)
        r = client.matmul(torch.ones(2, 3, device=device), torch.ones(3, 4, device=device),
                          return_info=True)
        print(f"backend={r.info.backend}")
    print(f"{'ok' if ok else 'MISMATCH'}: autograd linear layer matches torch")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
