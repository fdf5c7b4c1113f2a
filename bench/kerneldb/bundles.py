#!/usr/bin/env python3
"""bundles.py CODE_OBJECT N MIB OUT: writes N compressed offload bundles
(CCOB v2, zlib) back to back, what a linker puts in a .hip_fatbin section,
each holding the gfx90a code object and a host entry of MIB MiB of random
bytes (incompressible, so the file has the size of the data). A library like
librocsparse (111 compressed bundles, 1.3 GB) in shape: listing it grew with
size x bundles while the reader searched the rest of the section for a plain
bundle once per bundle."""
import random
import struct
import sys
import zlib

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
ALIGN = 4096  # clang-offload-bundler aligns entries


def bundle(code, host_bytes):
    entries = [("host-x86_64-unknown-linux-gnu", host_bytes),
               ("hipv4-amdgcn-amd-amdhsa--gfx90a", len(code))]
    header = len(MAGIC) + 8 + sum(24 + len(t) for t, _ in entries)
    offsets, at = [], (header + ALIGN - 1) // ALIGN * ALIGN
    for _, size in entries:
        offsets.append(at)
        at = (at + size + ALIGN - 1) // ALIGN * ALIGN
    out = bytearray(MAGIC + struct.pack("<Q", len(entries)))
    for (triple, size), off in zip(entries, offsets):
        out += struct.pack("<QQQ", off, size, len(triple)) + triple.encode()
    out += bytes(offsets[0] - len(out)) + random.Random(1).randbytes(host_bytes)
    out += bytes(offsets[1] - len(out)) + code
    return bytes(out)


def main():
    code_path, n, mib, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    with open(code_path, "rb") as f:
        code = f.read()
    plain = bundle(code, mib << 20)
    comp = zlib.compress(plain, 1)
    ccob = b"CCOB" + struct.pack("<HHII", 2, 0, 24 + len(comp), len(plain)) + bytes(8) + comp
    ccob += bytes(-len(ccob) % ALIGN)
    with open(out, "wb") as f:
        for _ in range(n):
            f.write(ccob)


if __name__ == "__main__":
    main()
