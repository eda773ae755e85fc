"""The type hints the package ships (py.typed) hold and reach callers: every
operation is a declared method of both clients, mypy finds no error in the
package, and a caller's program is checked against the methods' parameters and
results (mypy from Debian's `mypy` package; skipped where it is missing)."""
import asyncio
import inspect
import os
import subprocess
import sys
import textwrap

import pytest

import linalgd
import linalgd.aio
from linalgd import _ops
from conftest import CLIENT_DIR


@pytest.mark.parametrize("client", [linalgd.Client, linalgd.aio.Client])
def test_every_operation_is_a_method_with_its_signature(client):
    for name in _ops.METHODS:
        op = getattr(_ops, name)
        method = client.__dict__.get(name)
        assert method is not None, f"{client.__module__}.Client lacks {name}"
        assert method.__doc__ == op.__doc__
        op_params = list(inspect.signature(op).parameters.values())[1:]  # less `client`
        assert list(inspect.signature(method).parameters.values())[1:] == op_params, name
        assert asyncio.iscoroutinefunction(method) == (client is linalgd.aio.Client), name


def _mypy_available():
    return subprocess.run([sys.executable, "-c", "import mypy"],
                          capture_output=True).returncode == 0


needs_mypy = pytest.mark.skipif(not _mypy_available(), reason="mypy is not installed")


def _mypy(tmp_path, *targets):
    """mypy with the package's configuration (pyproject.toml): (exit code, output)."""
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", os.path.join(CLIENT_DIR, "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy_cache"), "--no-error-summary", *targets],
        capture_output=True, text=True, cwd=CLIENT_DIR,
        env={**os.environ, "MYPYPATH": CLIENT_DIR})
    return run.returncode, run.stdout + run.stderr


@needs_mypy
def test_the_package_type_checks(tmp_path):
    code, out = _mypy(tmp_path, "linalgd")
    assert code == 0, out


# A caller's program: what it gets back is typed, and what it gets wrong is
# reported (each `# error:` line must be, and no other line).
CALLER = textwrap.dedent('''
    import numpy as np
    import linalgd
    import linalgd.aio
    from linalgd.results import ServerInfo
    from linalgd.store import TensorInfo
    from typing import List

    def sync_caller() -> None:
        with linalgd.Client("127.0.0.1:1") as c:
            a = np.eye(4)
            c.matmul(a, a, transpose_a=True, epilogue="relu")
            t: linalgd.RemoteTensor = c.put(a)
            info: ServerInfo = c.server_info()
            tensors: List[TensorInfo] = c.list_tensors()
            f: linalgd.Factor = c.factorize(a)
            f.solve(np.ones(4))
            t.delete()
            c.matmul(a, a, transpose_q=True)  # error: call-arg
            n: int = c.health()  # error: assignment
            c.put(a).nonexistent  # error: attr-defined

    async def async_caller() -> None:
        async with linalgd.aio.Client("127.0.0.1:1") as c:
            t = await c.put(np.eye(3))
            await t.delete()
            status: str = await c.health()
            f = await c.factorize(np.eye(3))
            await f.release()
            c.server_info().version  # error: attr-defined
''')


@needs_mypy
def test_a_callers_program_is_checked_against_the_methods(tmp_path):
    program = tmp_path / "caller.py"
    program.write_text(CALLER)
    code, out = _mypy(tmp_path, str(program))
    expected = {i + 1: line.split("# error: ")[1]
                for i, line in enumerate(CALLER.splitlines()) if "# error: " in line}
    reported = {}
    for line in out.splitlines():
        if line.startswith(str(program)) and ": error: " in line:
            number = int(line.split(":")[1])
            reported[number] = line.rsplit("[", 1)[-1].rstrip("]")
    assert code == 1, out
    assert reported == expected, out
