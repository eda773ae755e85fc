"""Python enums mirroring the proto enums, and lenient parsing of user input.

Each enum is built from the generated descriptor, so values added to the proto
appear here without an edit. Members drop the proto prefix:
Epilogue.RELU_BIAS == pb.EPILOGUE_RELU_BIAS. Wherever the client takes one,
it accepts a member, its int value, or a case-insensitive name with or
without the prefix ("relu_bias", "RELU-BIAS", "EPILOGUE_RELU_BIAS").
"""
import enum

from ._stubs import pb
from .errors import InvalidArgument


def _make(name, descriptor, prefix):
    members = {v.name[len(prefix):] if v.name.startswith(prefix) else v.name: v.number
               for v in descriptor.values}
    cls = enum.IntEnum(name, members, module=__name__)
    cls._proto_prefix = prefix
    cls.__str__ = lambda self: self.name.lower()  # "relu_bias", as parse() accepts
    return cls


DType = _make("DType", pb.DType.DESCRIPTOR, "DTYPE_")
Epilogue = _make("Epilogue", pb.Epilogue.DESCRIPTOR, "EPILOGUE_")
ComputeMode = _make("ComputeMode", pb.ComputeMode.DESCRIPTOR, "COMPUTE_MODE_")
SolveMethod = _make("SolveMethod", pb.SolveMethod.DESCRIPTOR, "SOLVE_METHOD_")
SparseMethod = _make("SparseMethod", pb.SparseMethod.DESCRIPTOR, "SPARSE_METHOD_")
Preconditioner = _make("Preconditioner", pb.Preconditioner.DESCRIPTOR, "PRECONDITIONER_")

_ALIASES = {
    ComputeMode: {"FP16": "FAST_16F", "F16": "FAST_16F", "FAST_F16": "FAST_16F",
                  "BF16": "FAST_16BF", "FAST_BF16": "FAST_16BF", "FULL": "DEFAULT"},
    Epilogue: {"": "NONE"},
}


def parse(cls, value, field):
    """Returns cls's member for value (member, int, str or None -> value 0)."""
    if value is None:
        return cls(0)
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        key = value.strip().upper().replace("-", "_")
        if key.startswith(cls._proto_prefix):
            key = key[len(cls._proto_prefix):]
        key = _ALIASES.get(cls, {}).get(key, key)
        if key in cls.__members__:
            return cls[key]
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    names = ", ".join(m.name.lower() for m in cls)
    raise InvalidArgument(f"{field}: unknown {cls.__name__} {value!r}; expected one of {names}")
