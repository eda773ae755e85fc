"""Messages of grpc.health.v1.Health/Check, built at import.

Debian ships no grpcio-health-checking, and the two messages are tiny, so they
are declared here in a private descriptor pool (no clash with a copy that
grpc_health may register in the default pool).
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CHECK_METHOD = "/grpc.health.v1.Health/Check"
STATUS_NAMES = ("UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN")


def _build():
    f = descriptor_pb2.FileDescriptorProto(name="linalgd_client/grpc_health_v1.proto",
                                           package="grpc.health.v1", syntax="proto3")
    req = f.message_type.add(name="HealthCheckRequest")
    req.field.add(name="service", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                  label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    resp = f.message_type.add(name="HealthCheckResponse")
    status = resp.enum_type.add(name="ServingStatus")
    for number, name in enumerate(STATUS_NAMES):
        status.value.add(name=name, number=number)
    resp.field.add(name="status", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_ENUM,
                   type_name=".grpc.health.v1.HealthCheckResponse.ServingStatus",
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    factory = message_factory.MessageFactory(pool)
    get = lambda n: factory.GetPrototype(pool.FindMessageTypeByName(f"grpc.health.v1.{n}"))  # noqa: E731
    return get("HealthCheckRequest"), get("HealthCheckResponse")


HealthCheckRequest, HealthCheckResponse = _build()


def status_name(number):
    return STATUS_NAMES[number] if 0 <= number < len(STATUS_NAMES) else f"STATUS_{number}"
