#!/usr/bin/env python3
"""An independent reader of peerpath's AES-256-XTS images (docs/encryption-format.md,
"AES-256-XTS"), written from the description with Python's `cryptography` (OpenSSL's
XTS and HKDF), not from peerpath's code: the tests decrypt peerpath's images with it.

    scripts/xts-reference.py KEYFILE IMAGE SECTOR_BYTES > PLAIN"""
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def main(keyfile, path, sector):
    raw = open(keyfile, "rb").read()
    key = raw if len(raw) == 32 else bytes.fromhex(raw.decode().strip())
    xts_key = HKDF(algorithm=hashes.SHA256(), length=64, salt=b"peerpath-xts/1", info=b"peerpath-xts/1 aes-256-xts").derive(key)
    data = open(path, "rb").read()
    out = bytearray()
    for at in range(0, len(data), sector):
        tweak = (at // sector).to_bytes(16, "little")
        d = Cipher(algorithms.AES(xts_key), modes.XTS(tweak)).decryptor()
        out += d.update(data[at:at + sector]) + d.finalize()
    sys.stdout.buffer.write(bytes(out))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
