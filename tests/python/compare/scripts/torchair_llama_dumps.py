"""Writes a TorchAir dump set with the real torchair over the CANN stand-in: the FX npy dump
(golden) and the GE dump + graph txt (mine) of bf16_transformer's Llama-style decoder layer in
float32, one process, the way msit's users make them (get_fx_dump_config, get_ge_dump_config).

    python torchair_llama_dumps.py OUT   # writes OUT/fx_dump and OUT/ge_dump
"""

import importlib.util
import sys
from pathlib import Path

import torch
import torchair

from diagnose_pytorch import get_fx_dump_config, get_ge_dump_config

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "bf16_transformer" / "model.py"

out = sys.argv[1]
sys.path.insert(0, str(EXAMPLE.parent.parent))
spec = importlib.util.spec_from_file_location("llama_layer", EXAMPLE)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
torch.manual_seed(0)
layer = module.DecoderLayer().eval()
x = torch.randn(2, 8, 64)
with torch.no_grad():
    for config in (get_fx_dump_config(dump_path=out), get_ge_dump_config(dump_path=out)):
        torch._dynamo.reset()
        torch.compile(layer, backend=torchair.get_npu_backend(compiler_config=config))(x)
