#!/usr/bin/env python3
"""An independent reader of peerpath-enc/1 (docs/encryption-format.md), written
from the format's description with Python's `cryptography` (OpenSSL's AES-GCM and
HKDF), not from peerpath's code: the tests decrypt peerpath's files with it.

    scripts/ppenc-reference.py KEYFILE FILE.ppenc > PLAIN
Exit 0 and the plaintext on stdout, or exit 1 with the reason on stderr."""
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def hkdf(key, salt, info, n):
    return HKDF(algorithm=hashes.SHA256(), length=n, salt=salt, info=info).derive(key)


def main(keyfile, path):
    raw = open(keyfile, "rb").read()
    # 32 bytes that are all text are likely no key (a short hex key, a passphrase): peerpath
    # refuses them for new data and reads old data with them as raw bytes, saying so; so does this.
    if len(raw) == 32 and all(32 <= b < 127 or b in b"\t\n\r\x0c" for b in raw):
        print("warning: a 32-byte key file of text, taken as 32 raw key bytes", file=sys.stderr)
    key = raw if len(raw) == 32 else bytes.fromhex(raw.decode().strip())
    data = open(path, "rb").read()
    h = data[:72]
    if len(h) < 72 or h[:8] != b"PPENCv1\0" or h[8] != 1 or h[9:12] != b"\0\0\0":
        sys.exit("not a peerpath-enc/1 AES-256-GCM file")
    block, plain = struct.unpack("<IQ", h[12:24])
    file_id = h[24:40]
    if hkdf(key, b"peerpath-enc/1", b"peerpath-enc/1 key check", 16) != h[40:56]:
        sys.exit("wrong key")
    gcm = AESGCM(hkdf(key, file_id, b"peerpath-enc/1 aes-256-gcm", 32))
    nonce = lambda i: file_id[:4] + struct.pack(">Q", i)
    gcm.decrypt(nonce(2**64 - 1), h[56:72], h[:56])  # the header's tag over bytes 0-55
    blocks = max(1, -(-plain // block))
    at, out = 72, sys.stdout.buffer
    for i in range(blocks):
        n = min(block, plain - i * block) + 16
        aad = b"peerpath-enc/1" + file_id + struct.pack(">Q", i)
        out.write(gcm.decrypt(nonce(i), data[at:at + n], aad))
        at += n
    if at != len(data):
        sys.exit("length does not match the header")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
