"""grpc.health.v1.Health/Check: the generated messages (proto/grpc/health/v1).

The stubs are generated with linalgd's own (see ../generate_protos.py); the
file is descriptor-identical to grpcio-health-checking's, so both can be
loaded in one process.
"""
from . import _stubs  # noqa: F401  (generates the stubs in a source checkout)
from ._proto.health_v1 import health_pb2

CHECK_METHOD = "/grpc.health.v1.Health/Check"
HealthCheckRequest = health_pb2.HealthCheckRequest
HealthCheckResponse = health_pb2.HealthCheckResponse


def status_name(number):
    """The ServingStatus name of `number`; STATUS_<n> for a value this client does not know."""
    try:
        return HealthCheckResponse.ServingStatus.Name(number)
    except ValueError:
        return f"STATUS_{number}"
