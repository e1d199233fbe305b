"""A CPU stand-in for CANN at the interface of torchair's C extensions.

The real torchair (torch_npu/dynamo/torchair from the torch-npu wheel, extracted by
scripts/fetch_torchair.sh) is pure Python except for three extension modules that need CANN:
core/_torchair, core/_npu_graph_executor and core/_npu_utils. `install()` puts a finder first on
sys.meta_path that answers those three imports with the modules of this package, so torchair
itself runs unmodified: it converts the FX graph to a GE GraphDef, writes its graph txt and FX
dumps, and hands the graph to `TorchNpuGraphBase`, which here plays GE: it applies GE-named
fusion rules (fusion.py) under the switch file torchair passes, reports them in
fusion_result.json, runs the graph with an interpreter of GE ops in torch (ge_ops.py) and writes
GE dump binaries (ge_dump.py).

boot/sitecustomize.py calls `install()` in every Python process that has boot/ on PYTHONPATH
(the model processes the plugin starts, their helpers, and the tests)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_MODULES = {
    "torchair.core._torchair": "cann_stand_in.torchair_ext",
    "torchair.core._npu_graph_executor": "cann_stand_in.npu_graph_executor_ext",
    "torchair.core._npu_utils": "cann_stand_in.npu_utils_ext",
}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in _MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(_MODULES[spec.name])

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
