"""The exception hierarchy: one class per gRPC status code.

Every error the client raises is a LinalgdError carrying the status `code`
(a grpc.StatusCode), the server's `message`, the RPC `method` and how many
`attempts` were made. Client-side argument checks raise InvalidArgument too
(which is also a ValueError), so callers handle one hierarchy.
"""
from typing import Any, Optional

import grpc

RETRY_AFTER_KEY = "retry-after-ms"
# Trailing metadata of the server's refusals to store (a tenant's store_bytes
# or max_objects quota, --store-bytes, --store-max-objects): the limit's name.
STORE_REFUSED_KEY = "linalgd-store-refused"
NEVER_FITS_KEY = "linalgd-never-fits"


class LinalgdError(Exception):
    """Base class. `code` is a grpc.StatusCode (None for non-RPC failures)."""

    code: Optional[Any] = None

    def __init__(self, message, *, code=None, method=None, attempts=1,
                 trailing_metadata=(), retry_after=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.method = method
        self.attempts = attempts
        self.trailing_metadata = tuple(trailing_metadata or ())
        self.retry_after = retry_after  # seconds, from the server's retry-after-ms hint

    def __str__(self):
        name = self.code.name if self.code is not None else "ERROR"
        where = f" [{self.method}" + (f", {self.attempts} attempts]" if self.attempts > 1 else "]") \
            if self.method else ""
        return f"{name}: {self.message}{where}"


class Cancelled(LinalgdError):
    code = grpc.StatusCode.CANCELLED


class Unknown(LinalgdError):
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(LinalgdError, ValueError):
    """A request that can never succeed (shapes, dtypes, sizes, NaN policy)."""
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(LinalgdError, TimeoutError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(LinalgdError, KeyError):
    code = grpc.StatusCode.NOT_FOUND

    def __str__(self):  # KeyError would quote the message
        return LinalgdError.__str__(self)


class AlreadyExists(LinalgdError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(LinalgdError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(LinalgdError):
    """A full queue (retried) or a budget the request can never fit."""
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(LinalgdError):
    """E.g. a singular or non-SPD matrix when the caller forbade a fallback."""
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(LinalgdError):
    code = grpc.StatusCode.ABORTED


class OutOfRange(LinalgdError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(LinalgdError, NotImplementedError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(LinalgdError):
    code = grpc.StatusCode.INTERNAL


class Unavailable(LinalgdError, ConnectionError):
    """Server unreachable, draining, or after a fatal device error (retried)."""
    code = grpc.StatusCode.UNAVAILABLE


class ReplicaGone(Unavailable):
    """The replica that holds an id named by the call is unreachable or no
    longer among the target's addresses (a client over several replicas)."""


class TransferWorkerError(Internal):
    """A transfer worker process (Client(transfer_processes=N)) died or stopped
    answering during a part; the worker is replaced on the next transfer."""


class DataLoss(LinalgdError):
    """Also raised when a response is malformed (wrong byte count)."""
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(LinalgdError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE = {cls.code: cls for cls in (
    Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
    PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange,
    Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated)}


def error_class(code):
    """The LinalgdError subclass for a grpc.StatusCode."""
    return _BY_CODE.get(code, LinalgdError)


def retry_after_seconds(metadata):
    """The retry-after-ms hint of trailing metadata, in seconds, or None."""
    for key, value in metadata or ():
        if key == RETRY_AFTER_KEY:
            try:
                ms = float(value.decode() if isinstance(value, bytes) else value)
            except ValueError:
                return None
            return max(ms, 0.0) / 1000.0
    return None


def store_refusal(error):
    """The limit a RESOURCE_EXHAUSTED error says the store refused for
    (linalgd-store-refused: "store_bytes", "max_objects", "--store-bytes",
    "--store-max-objects"), or None for any other error (a full queue,
    max_inflight, a message over a limit)."""
    return _refusal_value(error, STORE_REFUSED_KEY)


def never_fits(error):
    """The limit a RESOURCE_EXHAUSTED error says the request alone passes (linalgd-never-fits:
    "--max-inflight-bytes", "max_queued_bytes"): no retry can serve it. None otherwise."""
    return _refusal_value(error, NEVER_FITS_KEY)


def _refusal_value(error, wanted):
    """The trailing metadata `wanted` of a RESOURCE_EXHAUSTED error, or None."""
    if getattr(error, "code", None) != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    for key, value in getattr(error, "trailing_metadata", ()) or ():
        if key == wanted:
            return value.decode() if isinstance(value, bytes) else value
    return None


def from_rpc_error(err, method=None, attempts=1):
    """Converts a grpc.RpcError (a failed call) into the matching LinalgdError."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message = err.details() if hasattr(err, "details") else str(err)
    metadata = err.trailing_metadata() if hasattr(err, "trailing_metadata") else ()
    cls = error_class(code)
    return cls(message or code.name, code=code, method=method, attempts=attempts,
               trailing_metadata=metadata or (), retry_after=retry_after_seconds(metadata))
