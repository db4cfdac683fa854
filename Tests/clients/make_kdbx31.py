"""Writes a KDBX 3.1 database (AES-256, AES-KDF, gzip) holding the KeePass XML on standard input,
its password the first argument, to standard output.

keepassxc-cli 2.7 creates KDBX 4 databases only, and a KDBX 3.1 database's XML export is the one
that holds its attachments' bytes: this writes the older format from its description (KeePass's
KdbxFile: the outer header's fields, the AES-KDF transform, the hashed block stream), so that the
real keepassxc-cli opens and exports it. Values are written unprotected (no inner stream cipher),
which KeePass allows.
"""
import gzip
import hashlib
import os
import struct
import sys

from Cryptodome.Cipher import AES


def kdbx31(xml: bytes, password: bytes, rounds: int = 1000) -> bytes:
    master_seed, transform_seed, iv, stream_key, start = (os.urandom(n) for n in (32, 32, 16, 32, 32))

    def field(number: int, data: bytes) -> bytes:
        return struct.pack("<BH", number, len(data)) + data

    header = struct.pack("<III", 0x9AA2D903, 0xB54BFB67, 0x00030001)
    header += field(2, bytes.fromhex("31c1f2e6bf714350be5805216afc5aff"))  # AES-256
    header += field(3, struct.pack("<I", 1))  # gzip
    header += field(4, master_seed) + field(5, transform_seed) + field(6, struct.pack("<Q", rounds))
    header += field(7, iv) + field(8, stream_key) + field(9, start)
    header += field(10, struct.pack("<I", 2)) + field(0, b"\r\n\r\n")  # Salsa20 (unused)
    key = hashlib.sha256(hashlib.sha256(password).digest()).digest()
    transform = AES.new(transform_seed, AES.MODE_ECB)
    for _ in range(rounds):
        key = transform.encrypt(key)
    master = hashlib.sha256(master_seed + hashlib.sha256(key).digest()).digest()
    body = gzip.compress(xml)
    blocks = struct.pack("<I", 0) + hashlib.sha256(body).digest() + struct.pack("<I", len(body)) + body
    blocks += struct.pack("<I", 1) + bytes(32) + struct.pack("<I", 0)
    plain = start + blocks
    pad = 16 - len(plain) % 16
    return header + AES.new(master, AES.MODE_CBC, iv).encrypt(plain + bytes([pad]) * pad)


if __name__ == "__main__":
    sys.stdout.buffer.write(kdbx31(sys.stdin.buffer.read(), sys.argv[1].encode()))
