"""Build hook: generates linalgd/_proto from ../../proto before packaging.

It runs when setup.py is loaded (metadata, wheel and editable builds all list
linalgd._proto) and again in build_py, regenerating only if proto/ changed.

All metadata lives in pyproject.toml. Set LINALGD_PROTO_DIR when building from
a copy of client/python that is not inside the repository.
"""
import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _generate():
    spec = importlib.util.spec_from_file_location(
        "generate_protos", os.path.join(HERE, "generate_protos.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate()


class BuildPyWithProtos(build_py):
    def run(self):
        _generate()
        super().run()


_generate()
setup(cmdclass={"build_py": BuildPyWithProtos})
