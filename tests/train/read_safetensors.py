#!/usr/bin/env python3
"""An independent safetensors reader (only struct, json and numpy): prints
one line per tensor, "name shape sum", so a test can compare with Strata.
Usage: read_safetensors.py FILE"""
import json
import struct
import sys

import numpy as np

with open(sys.argv[1], "rb") as f:
    blob = f.read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
meta = header.pop("__metadata__", {})
for name, spec in sorted(header.items()):
    begin, end = spec["data_offsets"]
    dtype = {"F32": "<f4", "I32": "<i4"}[spec["dtype"]]
    array = np.frombuffer(data[begin:end], dtype=dtype).reshape(spec["shape"])
    print(f"{name} {'x'.join(map(str, array.shape))} {float(array.astype(np.float64).sum()):.9g}")
print(f"__metadata__ {json.dumps(meta, sort_keys=True)}")
