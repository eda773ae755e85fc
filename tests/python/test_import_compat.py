"""The client imports and works on protobuf runtimes without the message-factory
APIs that protobuf removed (MessageFactory.GetPrototype, gone since Python
protobuf 6.30 / v30) or that Debian's 4.21 lacks (GetMessageClass)."""
import subprocess
import sys
import textwrap

from conftest import CLIENT_DIR

_SCRIPT = textwrap.dedent("""
    import sys
    from google.protobuf import message_factory
    for name in ("GetPrototype", "GetMessages"):
        if hasattr(message_factory.MessageFactory, name):
            delattr(message_factory.MessageFactory, name)
    for name in ("GetMessageClass", "GetMessageClassesForFiles", "GetMessages"):
        if hasattr(message_factory, name):
            delattr(message_factory, name)
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import linalgd
    with linalgd.Client(sys.argv[2], timeout=10) as c:
        print(c.health())
        y = c.matmul(np.eye(2, dtype=np.float32), np.full((2, 3), 2.0, np.float32))
        print(float(y.sum()))
""")


def test_imports_and_works_without_message_factory_apis(server):
    out = subprocess.run([sys.executable, "-c", _SCRIPT, CLIENT_DIR, server.target],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["SERVING", "12.0"]


def test_health_messages_are_generated():
    from linalgd import _health
    assert _health.HealthCheckRequest.DESCRIPTOR.full_name == "grpc.health.v1.HealthCheckRequest"
    assert _health.HealthCheckRequest.DESCRIPTOR.file.name == "grpc/health/v1/health.proto"
    assert _health.status_name(1) == "SERVING"
    assert _health.status_name(3) == "SERVICE_UNKNOWN"
    assert _health.status_name(9) == "STATUS_9"
