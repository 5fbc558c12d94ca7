"""Child of test_linker's fuzz test: feeds random bytes of every code type to
one linker backend (argv[1]: "nvjitlink" or "driver") with a fixed seed
(argv[2]) and prints one JSON line: how many inputs raised which exception.
Any crash or exit of the process is the finding."""
import collections
import json
import random
import sys

from cuda.core import Device, Linker, LinkerOptions, ObjectCode, _linker

backend, seed = sys.argv[1], int(sys.argv[2])
if backend == "nvjitlink":
    _linker._loaded_nvjitlink_version()
    _linker._use_nvjitlink_backend = True
else:
    Device().set_current()
    _linker._lazy_init()
    _linker._use_nvjitlink_backend = False
rng = random.Random(seed)
heads = [b"", b"\x7fELF", b"\x7fELF\x02\x01\x01", b"\x50\xed\x55\xba", b".version 8.0\n.target sm_90\n", b"BC\xc0\xde",
         b"!<arch>\n"]
outcomes = collections.Counter()
for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 150):
    kind = rng.choice(["ptx", "cubin", "fatbin", "ltoir", "object", "library"])
    data = rng.choice(heads) + bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 16, 64, 4096])))
    try:
        linker = Linker(ObjectCode._init(data, kind, name=f"in{i}"), options=LinkerOptions(arch="sm_90"))
        linker.link(rng.choice(["cubin", "ptx"]))
        outcomes["linked"] += 1
    except Exception as e:  # every refusal must be an exception, not a crash
        outcomes[type(e).__name__] += 1
print(json.dumps(dict(outcomes)))
