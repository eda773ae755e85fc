"""The generated protobuf and gRPC modules (linalgd._proto, build output).

In a source checkout the stubs are (re)generated on import when they are
missing or older than proto/ (see ../generate_protos.py); an installed package
carries them in its wheel and has no generator next to it.
"""
import importlib.util
import os


def _generate_in_checkout():
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(os.path.dirname(here), "generate_protos.py")
    if not os.path.exists(script):
        return
    spec = importlib.util.spec_from_file_location("_linalgd_generate_protos", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        module.generate(quiet=True)
    except FileNotFoundError:
        pass  # no proto/ next to it: use whatever stubs exist


_generate_in_checkout()
try:
    from ._proto.v1 import linalgd_pb2 as pb  # noqa: E402
    from ._proto.v1 import linalgd_pb2_grpc as pb_grpc  # noqa: E402
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError(
        "linalgd's generated stubs are missing: install the package with pip (its build "
        "generates them) or run client/python/generate_protos.py") from e

__all__ = ["pb", "pb_grpc"]
