#!/usr/bin/env python3
"""An independent reader of peerpath's erasure-coded sets (docs/usage.md, `peerpath ec`),
written from the description, not from peerpath's code, in plain Python: the tests check
peerpath's parity and restore its sets with it.

A set is a manifest (JSON: data_shards k, parity_shards m, unit_bytes, stripes,
source_bytes, source_crc32 (zlib's CRC-32 of the source; absent from older sets), and per
shard its file, its directory where placed, and the CRC-32 of each of its units) and k + m shard files; stripe s is unit s of every shard. Parity is
Reed-Solomon over GF(2^8) (polynomial 0x11d) with ISA-L's Cauchy matrix: row k + i,
column j is the inverse of (k + i) xor j; the data rows are the identity.

    scripts/ec-reference.py decode SET > SOURCE   (SET: the set's directory or a manifest copy)
    scripts/ec-reference.py check SET             (recomputes every parity unit of the intact stripes)"""
import json
import os
import sys
import zlib

EXP = [0] * 512
LOG = [0] * 256
x = 1
for i in range(255):
    EXP[i] = x
    LOG[x] = i
    x <<= 1
    if x & 0x100:
        x ^= 0x11D
for i in range(255, 512):
    EXP[i] = EXP[i - 255]


def mul(a, b):
    return 0 if a == 0 or b == 0 else EXP[LOG[a] + LOG[b]]


def inv(a):
    return EXP[255 - LOG[a]]


def row(k, r):
    """Row r of the (k + m) x k encoding matrix."""
    if r < k:
        return [1 if j == r else 0 for j in range(k)]
    return [inv(r ^ j) for j in range(k)]


def invert(a):
    """The inverse of the square matrix a over GF(2^8) (Gauss-Jordan)."""
    n = len(a)
    m = [list(r) + [1 if i == j else 0 for j in range(n)] for i, r in enumerate(a)]
    for c in range(n):
        p = next(r for r in range(c, n) if m[r][c])
        m[c], m[p] = m[p], m[c]
        f = inv(m[c][c])
        m[c] = [mul(f, v) for v in m[c]]
        for r in range(n):
            if r != c and m[r][c]:
                g = m[r][c]
                m[r] = [v ^ mul(g, w) for v, w in zip(m[r], m[c])]
    return [r[n:] for r in m]


def combine(coefs, units):
    """sum over j of coefs[j] * units[j], byte by byte (a table per coefficient)."""
    acc = 0
    for c, u in zip(coefs, units):
        if c:
            acc ^= int.from_bytes(u.translate(bytes(mul(c, v) for v in range(256))), "little")
    return acc.to_bytes(len(units[0]), "little")


def load(set_path):
    path = set_path if os.path.isfile(set_path) else os.path.join(set_path, "manifest.json")
    m = json.load(open(path))
    home = os.path.dirname(path)
    files = [os.path.join(s.get("dir") or home, s["file"]) for s in m["shards"]]
    return m, files


def read_units(m, files, s):
    """Stripe s: per shard, its unit if it is there and its CRC-32 matches, else None."""
    unit = m["unit_bytes"]
    units = []
    for i, f in enumerate(files):
        try:
            with open(f, "rb") as h:
                h.seek(s * unit)
                b = h.read(unit)
        except OSError:
            b = b""
        ok = len(b) == unit and zlib.crc32(b) == m["shards"][i]["crc32"][s]
        units.append(b if ok else None)
    return units


def decode(set_path):
    m, files = load(set_path)
    k = m["data_shards"]
    left = m["source_bytes"]
    out = sys.stdout.buffer
    crc = 0
    for s in range(m["stripes"]):
        units = read_units(m, files, s)
        if all(u is not None for u in units[:k]):
            data = units[:k]
        else:
            have = [i for i, u in enumerate(units) if u is not None][:k]
            if len(have) < k:
                sys.exit("stripe %d: fewer than %d units survive" % (s, k))
            d = invert([row(k, r) for r in have])
            data = [combine(d[j], [units[r] for r in have]) for j in range(k)]
        stripe = b"".join(data)[:left]
        out.write(stripe)
        crc = zlib.crc32(stripe, crc)
        left -= len(stripe)
    if "source_crc32" in m and crc != m["source_crc32"]:
        sys.exit("the restored bytes' CRC-32 is %d, the manifest's source_crc32 %d" % (crc, m["source_crc32"]))


def check(set_path):
    m, files = load(set_path)
    k = m["data_shards"]
    n = k + m["parity_shards"]
    for s in range(m["stripes"]):
        units = read_units(m, files, s)
        if any(u is None for u in units):
            continue
        for r in range(k, n):
            if combine(row(k, r), units[:k]) != units[r]:
                sys.exit("stripe %d: parity unit %d is not the Cauchy code's" % (s, r))
    print("parity checked")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("decode", "check"):
        sys.exit(__doc__)
    {"decode": decode, "check": check}[sys.argv[1]](sys.argv[2])
