#!/usr/bin/env python3
"""unpack-kernel.py VMLINUZ VMLINUX: the ELF kernel inside a bzImage's XZ payload.

A KVM that runs a stock kernel's ring-0 code very slowly (nested) spends minutes in the
kernel's own decompressor; QEMU boots the unpacked ELF by its PVH entry instead. Exit 1
when the payload is not XZ or not an ELF (the caller then boots VMLINUZ).
"""
import lzma
import sys


def main(src: str, dst: str) -> int:
    data = open(src, "rb").read()
    start = data.find(b"\xfd7zXZ\x00")
    if start < 0:
        return 1
    elf = lzma.LZMADecompressor().decompress(data[start:])
    if elf[:4] != b"\x7fELF":
        return 1
    with open(dst, "wb") as f:
        f.write(elf)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
