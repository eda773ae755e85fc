#!/usr/bin/python3
"""Generates the gRPC stubs of linalgd from proto/ into linalgd/_proto/.

The stubs are build output (git-ignored), never edited by hand. Layout:

    proto/linalgd/v1/foo.proto      ->  linalgd/_proto/v1/foo_pb2.py, foo_pb2_grpc.py
    proto/grpc/health/v1/health.proto -> linalgd/_proto/health_v1/health_pb2.py, ...

protoc writes ``from linalgd.v1 import foo_pb2``; that absolute import would
collide with this package's own name, so it is rewritten to ``from . import``.

Tools, in order: ``protoc`` with ``grpc_python_plugin`` (Debian's
protobuf-compiler and protobuf-compiler-grpc), else ``grpc_tools.protoc``
(python3-grpc-tools). Override with $PROTOC and $GRPC_PYTHON_PLUGIN
(PROTOC=grpc_tools forces grpc_tools.protoc).

Called by setup.py's build_py, by the test suite, and on first import from a
source checkout. Regenerates only when a .proto is newer than the stamp.

Usage: generate_protos.py [--proto-dir DIR] [--force]
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(HERE, "linalgd")
OUT_DIR = os.path.join(PACKAGE_DIR, "_proto")
STAMP = os.path.join(OUT_DIR, ".stamp")
# Proto packages generated, as (proto subdir, output subpackage).
API_VERSIONS = (("linalgd/v1", "v1"), ("grpc/health/v1", "health_v1"))


def default_proto_dir():
    """proto/ of the repository: $LINALGD_PROTO_DIR or ../../proto."""
    env = os.environ.get("LINALGD_PROTO_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.abspath(os.path.join(HERE, "..", "..", "proto"))


def _proto_files(proto_dir):
    files = []
    for subdir, _ in API_VERSIONS:
        d = os.path.join(proto_dir, subdir)
        if not os.path.isdir(d):
            raise FileNotFoundError(f"no proto directory {d}")
        files += sorted(os.path.join(subdir, f) for f in os.listdir(d) if f.endswith(".proto"))
    return files


def _digest(proto_dir, files):
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode())
        with open(os.path.join(proto_dir, rel), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _protoc_command(proto_dir, out, files):
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    plugin = os.environ.get("GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
    if protoc and plugin and protoc != "grpc_tools":
        return [protoc, f"-I{proto_dir}", f"--python_out={out}", f"--grpc_out={out}",
                f"--plugin=protoc-gen-grpc={plugin}", *files]
    try:
        import grpc_tools.protoc  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "cannot generate the linalgd stubs: install protobuf-compiler and "
            "protobuf-compiler-grpc (protoc, grpc_python_plugin) or python3-grpc-tools")
    return [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_dir}",
            f"--python_out={out}", f"--grpc_python_out={out}", *files]


def _rewrite(text, proto_pkg, subpkg):
    """Makes protoc's absolute imports of proto_pkg relative to the subpackage."""
    dotted = proto_pkg.replace("/", ".")
    text = re.sub(rf"^from {re.escape(dotted)} import ", "from . import ", text, flags=re.M)
    # The module name recorded for the generated classes (pickling, repr).
    return re.sub(rf"'{re.escape(dotted)}\.(\w+_pb2)'", rf"'linalgd._proto.{subpkg}.\1'", text)


def generate(proto_dir=None, force=False, quiet=False):
    """Generates the stubs if missing or stale. Returns the output directory."""
    proto_dir = proto_dir or default_proto_dir()
    if not os.path.isdir(proto_dir):
        if os.path.exists(STAMP):
            return OUT_DIR  # installed or copied without proto/: keep what is there
        raise FileNotFoundError(f"no proto directory {proto_dir}; set LINALGD_PROTO_DIR")
    files = _proto_files(proto_dir)
    digest = _digest(proto_dir, files)
    if not force and os.path.exists(STAMP):
        with open(STAMP) as f:
            if f.read().strip() == digest:
                return OUT_DIR
    with tempfile.TemporaryDirectory() as tmp:
        cmd = _protoc_command(proto_dir, tmp, files)
        try:
            subprocess.run(cmd, check=True)
        except subprocess.CalledProcessError as e:
            hint = ""
            if "grpc_tools.protoc" in cmd:
                hint = (" (python3-grpc-tools on Debian 12 bundles libprotoc 3.5, which rejects"
                        " proto3 'optional'; install protobuf-compiler and protobuf-compiler-grpc)")
            raise RuntimeError(f"stub generation failed: {' '.join(cmd)}{hint}") from e
        staging = tempfile.mkdtemp(prefix="._proto.", dir=PACKAGE_DIR)
        try:
            _write_package(tmp, staging)
            with open(os.path.join(staging, ".stamp"), "w") as f:
                f.write(digest + "\n")
            # Replace the whole directory so a removed .proto leaves no stale module.
            old = OUT_DIR + f".old.{os.getpid()}"
            if os.path.exists(OUT_DIR):
                os.rename(OUT_DIR, old)
            os.rename(staging, OUT_DIR)
            shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    if not quiet:
        print(f"generated linalgd stubs from {proto_dir} into {OUT_DIR}", file=sys.stderr)
    return OUT_DIR


def _write_package(generated, staging):
    header = "# Generated by client/python/generate_protos.py. DO NOT EDIT; not committed.\n"
    with open(os.path.join(staging, "__init__.py"), "w") as f:
        f.write(header)
    for proto_pkg, subpkg in API_VERSIONS:
        src = os.path.join(generated, proto_pkg)
        dst = os.path.join(staging, subpkg)
        os.makedirs(dst)
        with open(os.path.join(dst, "__init__.py"), "w") as f:
            f.write(header)
        for name in sorted(os.listdir(src)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(src, name)) as f:
                text = _rewrite(f.read(), proto_pkg, subpkg)
            with open(os.path.join(dst, name), "w") as f:
                f.write(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--proto-dir", default=None)
    p.add_argument("--force", action="store_true")
    args = p.parse_args(argv)
    generate(args.proto_dir, force=args.force)


if __name__ == "__main__":
    main()
