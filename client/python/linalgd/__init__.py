"""Python client of linalgd, the GPU linear-algebra gRPC service.

    import numpy as np, linalgd
    with linalgd.Client("localhost:50051") as c:
        y = c.matmul(np.ones((4, 3), np.float32), np.ones((3, 2), np.float32))
        x = c.solve(np.eye(3), np.arange(3.0))
        w = c.put(np.eye(3))                  # a RemoteTensor: stays on the server
        h = c.matmul(np.ones((2, 3)), w, keep=True)
        with c.factorize(np.eye(3) * 2) as f:  # a Factor, released at the end
            y = f.solve(np.ones(3))
"""
from .client import Client, DEFAULT_TARGET
from .enums import ComputeMode, DType, Epilogue, SolveMethod
from .errors import (
    Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded, FailedPrecondition,
    Internal, InvalidArgument, LinalgdError, NotFound, OutOfRange, PermissionDenied,
    ReplicaGone, ResourceExhausted, TransferWorkerError, Unauthenticated, Unavailable,
    Unimplemented, Unknown, error_class)
from .results import Device, ExecutionInfo, Limits, MatmulResult, ServerInfo, SolveResult
from .remote import Factor, RemoteTensor
from ._malloc import tune_malloc
from ._replicas import ReplicaState
from .retry import RetryPolicy
from .sparse import Preconditioner, SparseMethod, SparseSolveResult

__version__ = "0.1.0"

__all__ = [
    "Client", "DEFAULT_TARGET", "ComputeMode", "DType", "Epilogue", "SolveMethod",
    "LinalgdError", "Aborted", "AlreadyExists", "Cancelled", "DataLoss", "DeadlineExceeded",
    "FailedPrecondition", "Internal", "InvalidArgument", "NotFound", "OutOfRange",
    "PermissionDenied", "ReplicaGone", "ResourceExhausted", "Unauthenticated", "Unavailable",
    "Unimplemented",
    "Unknown", "error_class", "Device", "ExecutionInfo", "Limits", "MatmulResult",
    "ServerInfo", "SolveResult", "RetryPolicy", "__version__",
    "SparseMethod", "Preconditioner", "SparseSolveResult", "RemoteTensor", "Factor",
    "ReplicaState", "TransferWorkerError", "tune_malloc",
]
