// peerpath's own GPU kernels for AES-256-GCM: sealing and opening the blocks
// of a `peerpath-enc/1` file (docs/encryption-format.md), the AEAD functions
// of the GPU device (crates/peerpath-gpu/src/crypt.rs).
//
// No library does AES-GCM on a GPU (nvCOMP compresses; CUDA ships no cipher),
// so it is written here, in plain C in CUDA's dialect and compiled two ways as
// coding.cu is (see its head): to PTX by NVRTC (crypt.ptx, carried by the
// binary) and by the host's C compiler (kernels/shim.c), so the tests check
// these very lines against aws-lc's AES-256-GCM, byte for byte, on machines
// without a GPU. No kernel shares memory between threads or waits at a
// barrier; the one thing threads share is a command's GHASH sum, which they
// XOR into with atomics (XOR is associative and commutative: any order gives
// the same sum).
//
// A command seals (or opens) one block: AES-256 in counter mode over its
// payload, and GHASH (GCM's polynomial hash over GF(2^128)) over the
// associated data, the ciphertext and the lengths. Three launches a batch:
// 1. pp_gcm_prepare, a thread per command: expands the key from the
//    command's material (the file's block key and file id, in GPU memory),
//    computes H = AES(0), the counter block J0 and AES(J0), the powers
//    H^(2^i), and starts the command's GHASH sum with the associated data's
//    and the lengths' terms.
// 2. pp_gcm_segments, a thread per segment of 64 16-byte blocks (1 KiB):
//    encrypts (or decrypts) its segment in counter mode, hashes the
//    ciphertext by Horner's rule, multiplies the result by the power of H
//    that moves it to its place in the sum (GHASH is sum over blocks B_i of
//    B_i * H^(m - i + 1)), and XORs it into the command's sum.
// 3. pp_gcm_finish, a thread per command: the tag is the sum XOR AES(J0);
//    sealing writes it after the ciphertext, opening compares it with the
//    stored one (all 16 bytes, whatever differs first) and says so in `ok`.
//
// AES is computed with four 256-word tables (the S-box and MixColumns
// folded; the host makes them: crypt.rs `aes_tables`), read through the
// read-only data cache. Table lookups take time that depends on the
// address; on a GPU shared between tenants that is a cache-timing channel,
// which the docs (gpu-nvcomp.md) say. GHASH multiplies bit by bit with masks
// (no tables, constant time).

#ifdef PEERPATH_HOST_SHIM
#include "shim.h"
#else
#define PP_KERNEL extern "C" __global__ void
#define PP_RESTRICT __restrict__
#define PP_ATOMIC_XOR(p, v) atomicXor((p), (v))
#endif
// Loops around a GF(2^128) product stay loops: unrolled, each copy is 128
// steps of straight code, and the driver's compiler takes seconds over them.
#ifdef PEERPATH_HOST_SHIM
#define PP_ROLLED
#else
#define PP_ROLLED _Pragma("unroll 1")
#endif

typedef unsigned char pp_u8;
typedef unsigned int pp_u32;
typedef unsigned long long pp_u64;

// A command's state: 128 words (crypt.rs `GcmPlan` writes words 0-7 and
// zeroes the rest; pp_gcm_prepare fills the rest).
#define PP_GCM_WORDS 128
#define PP_GCM_SRC 0      // the input's address (plaintext to seal; ciphertext and tag to open)
#define PP_GCM_DST 1      // the output's address
#define PP_GCM_LEN 2      // payload bytes (plaintext, or ciphertext without its tag)
#define PP_GCM_OPEN 3     // 1: open, 0: seal
#define PP_GCM_MATERIAL 4 // the material's address: the block key (32 bytes), then the file id (16)
#define PP_GCM_INDEX 5    // the block's index
#define PP_GCM_PREFIX 6   // words 6-7: the associated data's first 14 bytes (the format's name)
#define PP_GCM_CTR 8      // words 8-9: J0's first three words (as AES loads them)
#define PP_GCM_EJ0 10     // words 10-11: AES(J0), as GHASH's (high, low)
#define PP_GCM_SUM 12     // words 12-13: the GHASH sum (XORed into as four 32-bit words)
#define PP_GCM_H 14       // words 14-67: H^(2^i), i = 0..26, as (high, low)
#define PP_GCM_RK 68      // words 68-97: the 60 round-key words
#define PP_GCM_POWERS 27  // H^(2^i) for exponents below 2^27 (a block's at most 2^26 + 1)
#define PP_GCM_SEGMENT_BLOCKS 64

static pp_u32 pp_bswap32(pp_u32 x)
{
    return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
}

// AES-256 of one block: `in` and `out` are its four columns, each a word
// whose low byte is row 0 (a little-endian load of the 16 bytes). `te`:
// tables 0-3 at te[256 t]; table t maps a byte at row t to its column's
// contribution (S-box then MixColumns); the S-box itself is byte 1 of table 0.
static void pp_aes256(const pp_u32 *PP_RESTRICT rk, const pp_u32 *PP_RESTRICT te, const pp_u32 *in, pp_u32 *out)
{
    const pp_u32 *t0 = te, *t1 = te + 256, *t2 = te + 512, *t3 = te + 768;
    pp_u32 s0 = in[0] ^ rk[0], s1 = in[1] ^ rk[1], s2 = in[2] ^ rk[2], s3 = in[3] ^ rk[3];
    for (int r = 1; r < 14; r++) {
        const pp_u32 *k = rk + 4 * r;
        // ShiftRows: column c takes row t from column c + t.
        pp_u32 u0 = t0[s0 & 0xFF] ^ t1[(s1 >> 8) & 0xFF] ^ t2[(s2 >> 16) & 0xFF] ^ t3[s3 >> 24] ^ k[0];
        pp_u32 u1 = t0[s1 & 0xFF] ^ t1[(s2 >> 8) & 0xFF] ^ t2[(s3 >> 16) & 0xFF] ^ t3[s0 >> 24] ^ k[1];
        pp_u32 u2 = t0[s2 & 0xFF] ^ t1[(s3 >> 8) & 0xFF] ^ t2[(s0 >> 16) & 0xFF] ^ t3[s1 >> 24] ^ k[2];
        pp_u32 u3 = t0[s3 & 0xFF] ^ t1[(s0 >> 8) & 0xFF] ^ t2[(s1 >> 16) & 0xFF] ^ t3[s2 >> 24] ^ k[3];
        s0 = u0;
        s1 = u1;
        s2 = u2;
        s3 = u3;
    }
    // The last round: S-box and ShiftRows, no MixColumns.
#define PP_SB(x) ((t0[(x)] >> 8) & 0xFFu)
    out[0] = (PP_SB(s0 & 0xFF) | PP_SB((s1 >> 8) & 0xFF) << 8 | PP_SB((s2 >> 16) & 0xFF) << 16 | PP_SB(s3 >> 24) << 24) ^ rk[56];
    out[1] = (PP_SB(s1 & 0xFF) | PP_SB((s2 >> 8) & 0xFF) << 8 | PP_SB((s3 >> 16) & 0xFF) << 16 | PP_SB(s0 >> 24) << 24) ^ rk[57];
    out[2] = (PP_SB(s2 & 0xFF) | PP_SB((s3 >> 8) & 0xFF) << 8 | PP_SB((s0 >> 16) & 0xFF) << 16 | PP_SB(s1 >> 24) << 24) ^ rk[58];
    out[3] = (PP_SB(s3 & 0xFF) | PP_SB((s0 >> 8) & 0xFF) << 8 | PP_SB((s1 >> 16) & 0xFF) << 16 | PP_SB(s2 >> 24) << 24) ^ rk[59];
}

static pp_u32 pp_subword(const pp_u32 *PP_RESTRICT t0, pp_u32 w)
{
    return PP_SB(w & 0xFF) | PP_SB((w >> 8) & 0xFF) << 8 | PP_SB((w >> 16) & 0xFF) << 16 | PP_SB(w >> 24) << 24;
}
#undef PP_SB

// FIPS 197's key expansion for a 32-byte key, into 60 words (as pp_aes256 takes them).
static void pp_aes256_expand(const pp_u8 *key, const pp_u32 *PP_RESTRICT te, pp_u32 *rk)
{
    for (int i = 0; i < 8; i++) {
        rk[i] = (pp_u32)key[4 * i] | (pp_u32)key[4 * i + 1] << 8 | (pp_u32)key[4 * i + 2] << 16 | (pp_u32)key[4 * i + 3] << 24;
    }
    pp_u32 rcon = 1;
    for (int i = 8; i < 60; i++) {
        pp_u32 t = rk[i - 1];
        if (i % 8 == 0) {
            // RotWord moves byte 1 to byte 0: a right rotation of the little-endian word.
            t = pp_subword(te, (t >> 8) | (t << 24)) ^ rcon;
            rcon = (rcon << 1) ^ ((rcon & 0x80u) ? 0x11Bu : 0u);
        } else if (i % 8 == 4) {
            t = pp_subword(te, t);
        }
        rk[i] = rk[i - 8] ^ t;
    }
}

// x = x * y in GCM's GF(2^128) (NIST SP 800-38D, algorithm 1): elements as
// (high, low) words of their 16 bytes read big-endian; bit 0 of the field is
// the high word's top bit. Bit by bit, with masks.
static void pp_gf128_mul(pp_u64 *xh, pp_u64 *xl, pp_u64 yh, pp_u64 yl)
{
    pp_u64 zh = 0, zl = 0, vh = yh, vl = yl;
    for (int half = 0; half < 2; half++) {
        pp_u64 x = half == 0 ? *xh : *xl;
        for (int i = 63; i >= 0; i--) {
            pp_u64 m = 0 - ((x >> i) & 1);
            zh ^= vh & m;
            zl ^= vl & m;
            // V = V * x: a right shift, reduced by R = 0xE1 || 0^120 when a bit falls out.
            pp_u64 carry = 0 - (vl & 1);
            vl = (vl >> 1) | (vh << 63);
            vh = (vh >> 1) ^ (0xE100000000000000ull & carry);
        }
    }
    *xh = zh;
    *xl = zl;
}

// x = x * H^e from the command's powers H^(2^i).
static void pp_gf128_mul_pow(const pp_u64 *PP_RESTRICT st, pp_u64 e, pp_u64 *xh, pp_u64 *xl)
{
    PP_ROLLED
    for (int i = 0; i < PP_GCM_POWERS; i++) {
        if ((e >> i) & 1) {
            pp_gf128_mul(xh, xl, st[PP_GCM_H + 2 * i], st[PP_GCM_H + 2 * i + 1]);
        }
    }
}

// Four little-endian words as GHASH's (high, low).
static void pp_words_to_gf(const pp_u32 *w, pp_u64 *h, pp_u64 *l)
{
    *h = (pp_u64)pp_bswap32(w[0]) << 32 | pp_bswap32(w[1]);
    *l = (pp_u64)pp_bswap32(w[2]) << 32 | pp_bswap32(w[3]);
}

// `n` (at most 16) bytes at `p` as four little-endian words, zero-padded.
static void pp_load(const pp_u8 *p, pp_u64 n, pp_u32 *w)
{
    if (n == 16 && ((pp_u64)p & 3) == 0) {
        const pp_u32 *q = (const pp_u32 *)p;
        w[0] = q[0];
        w[1] = q[1];
        w[2] = q[2];
        w[3] = q[3];
        return;
    }
    for (int i = 0; i < 4; i++) {
        pp_u32 v = 0;
        for (int b = 0; b < 4; b++) {
            pp_u64 at = (pp_u64)(4 * i + b);
            v |= (at < n ? (pp_u32)p[at] : 0u) << (8 * b);
        }
        w[i] = v;
    }
}

// The first `n` (at most 16) bytes of four little-endian words, to `p`.
static void pp_store(pp_u8 *p, pp_u64 n, const pp_u32 *w)
{
    if (n == 16 && ((pp_u64)p & 3) == 0) {
        pp_u32 *q = (pp_u32 *)p;
        q[0] = w[0];
        q[1] = w[1];
        q[2] = w[2];
        q[3] = w[3];
        return;
    }
    for (pp_u64 at = 0; at < n; at++) {
        p[at] = (pp_u8)(w[at / 4] >> (8 * (at % 4)));
    }
}

PP_KERNEL pp_gcm_prepare(pp_u64 *PP_RESTRICT states, pp_u32 n, const pp_u32 *PP_RESTRICT te)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 c = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; c < n; c += step) {
        pp_u64 *st = states + c * PP_GCM_WORDS;
        const pp_u8 *material = (const pp_u8 *)st[PP_GCM_MATERIAL];
        const pp_u8 *file_id = material + 32;
        pp_u64 index = st[PP_GCM_INDEX];
        pp_u32 *rk = (pp_u32 *)(st + PP_GCM_RK);
        pp_aes256_expand(material, te, rk);
        // The nonce: the file id's first four bytes, then the index big-endian; J0 = nonce || 1.
        pp_u8 nonce[12];
        for (int i = 0; i < 4; i++) {
            nonce[i] = file_id[i];
        }
        for (int i = 0; i < 8; i++) {
            nonce[4 + i] = (pp_u8)(index >> (56 - 8 * i));
        }
        pp_u32 j0[4], block[4];
        pp_load(nonce, 12, j0);
        j0[3] = pp_bswap32(1);
        pp_u32 *ctr = (pp_u32 *)(st + PP_GCM_CTR);
        ctr[0] = j0[0];
        ctr[1] = j0[1];
        ctr[2] = j0[2];
        pp_aes256(rk, te, j0, block);
        pp_words_to_gf(block, &st[PP_GCM_EJ0], &st[PP_GCM_EJ0 + 1]);
        // H = AES(0), and its squares.
        block[0] = block[1] = block[2] = block[3] = 0;
        pp_aes256(rk, te, block, block);
        pp_u64 hh, hl;
        pp_words_to_gf(block, &hh, &hl);
        PP_ROLLED
        for (int i = 0; i < PP_GCM_POWERS; i++) {
            st[PP_GCM_H + 2 * i] = hh;
            st[PP_GCM_H + 2 * i + 1] = hl;
            pp_gf128_mul(&hh, &hl, hh, hl);
        }
        // The associated data (the format's name, the file id, the index
        // big-endian: 38 bytes, three blocks zero-padded), by Horner's rule:
        // A1 H^3 + A2 H^2 + A3 H, then moved past the n ciphertext blocks and
        // the length block (H^(n+1)).
        pp_u8 aad[48];
        const pp_u8 *prefix = (const pp_u8 *)(st + PP_GCM_PREFIX);
        for (int i = 0; i < 14; i++) {
            aad[i] = prefix[i];
        }
        for (int i = 0; i < 16; i++) {
            aad[14 + i] = file_id[i];
        }
        for (int i = 0; i < 18; i++) {
            aad[30 + i] = i < 8 ? nonce[4 + i] : 0;
        }
        pp_u64 sh = 0, sl = 0;
        PP_ROLLED
        for (int b = 0; b < 3; b++) {
            pp_u32 w[4];
            pp_u64 ah, al;
            pp_load(aad + 16 * b, 16, w);
            pp_words_to_gf(w, &ah, &al);
            sh ^= ah;
            sl ^= al;
            pp_gf128_mul(&sh, &sl, st[PP_GCM_H], st[PP_GCM_H + 1]);
        }
        pp_u64 len = st[PP_GCM_LEN];
        pp_gf128_mul_pow(st, (len + 15) / 16 + 1, &sh, &sl);
        // The length block (bits of associated data, bits of ciphertext) times H.
        pp_u64 lh = 38 * 8, ll = len * 8;
        pp_gf128_mul(&lh, &ll, st[PP_GCM_H], st[PP_GCM_H + 1]);
        st[PP_GCM_SUM] = sh ^ lh;
        st[PP_GCM_SUM + 1] = sl ^ ll;
    }
}

// `starts` (n + 1 words): command c's segments are starts[c] .. starts[c + 1].
PP_KERNEL pp_gcm_segments(pp_u64 *PP_RESTRICT states, pp_u32 n, const pp_u32 *PP_RESTRICT starts, const pp_u32 *PP_RESTRICT te)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 s = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; s < starts[n]; s += step) {
        // The command: the last whose first segment is at or before s (empty ones have none).
        pp_u32 lo = 0, hi = n;
        while (hi - lo > 1) {
            pp_u32 mid = lo + (hi - lo) / 2;
            if (starts[mid] <= s) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        pp_u64 *st = states + (pp_u64)lo * PP_GCM_WORDS;
        const pp_u8 *src = (const pp_u8 *)st[PP_GCM_SRC];
        pp_u8 *dst = (pp_u8 *)st[PP_GCM_DST];
        pp_u64 len = st[PP_GCM_LEN], blocks = (len + 15) / 16;
        int opening = st[PP_GCM_OPEN] != 0;
        const pp_u32 *rk = (const pp_u32 *)(st + PP_GCM_RK);
        const pp_u32 *ctr = (const pp_u32 *)(st + PP_GCM_CTR);
        pp_u64 hh = st[PP_GCM_H], hl = st[PP_GCM_H + 1];
        pp_u64 first = (s - starts[lo]) * PP_GCM_SEGMENT_BLOCKS;
        pp_u64 last = first + PP_GCM_SEGMENT_BLOCKS < blocks ? first + PP_GCM_SEGMENT_BLOCKS : blocks;
        pp_u64 yh = 0, yl = 0;
        for (pp_u64 b = first; b < last; b++) {
            pp_u64 bytes = len - 16 * b < 16 ? len - 16 * b : 16;
            // Block b (from 0) takes counter b + 2: J0's is 1, and GCM starts at J0 + 1.
            pp_u32 counter[4] = {ctr[0], ctr[1], ctr[2], pp_bswap32((pp_u32)b + 2)}, ks[4], in[4], out[4];
            pp_aes256(rk, te, counter, ks);
            pp_load(src + 16 * b, bytes, in);
            for (int i = 0; i < 4; i++) {
                out[i] = in[i] ^ ks[i];
            }
            pp_store(dst + 16 * b, bytes, out);
            // GHASH reads the ciphertext, zero-padded: the output when sealing, the input when opening.
            const pp_u32 *cipher = opening ? in : out;
            pp_u32 c[4];
            for (int i = 0; i < 4; i++) {
                pp_u32 keep = 4 * (pp_u64)i + 4 <= bytes ? 0xFFFFFFFFu : (4 * (pp_u64)i >= bytes ? 0u : (0xFFFFFFFFu >> (8 * (4 - (bytes - 4 * i)))));
                c[i] = cipher[i] & keep;
            }
            pp_u64 ch, cl;
            pp_words_to_gf(c, &ch, &cl);
            yh ^= ch;
            yl ^= cl;
            pp_gf128_mul(&yh, &yl, hh, hl);
        }
        // Block j (from 1) has H^(blocks - j + 2) in the sum; Horner gave the
        // segment's last block H^1, so the segment moves by H^(blocks - last + 1).
        pp_gf128_mul_pow(st, blocks - last + 1, &yh, &yl);
        pp_u32 *sum = (pp_u32 *)(st + PP_GCM_SUM);
        PP_ATOMIC_XOR(&sum[0], (pp_u32)yh);
        PP_ATOMIC_XOR(&sum[1], (pp_u32)(yh >> 32));
        PP_ATOMIC_XOR(&sum[2], (pp_u32)yl);
        PP_ATOMIC_XOR(&sum[3], (pp_u32)(yl >> 32));
    }
}

// `ok` (n words): 1 where the command's tag was written or matched, 0 where an opened block's did not.
PP_KERNEL pp_gcm_finish(const pp_u64 *PP_RESTRICT states, pp_u32 n, pp_u32 *PP_RESTRICT ok)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 c = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; c < n; c += step) {
        const pp_u64 *st = states + c * PP_GCM_WORDS;
        pp_u64 th = st[PP_GCM_SUM] ^ st[PP_GCM_EJ0], tl = st[PP_GCM_SUM + 1] ^ st[PP_GCM_EJ0 + 1];
        pp_u32 tag[4] = {pp_bswap32((pp_u32)(th >> 32)), pp_bswap32((pp_u32)th), pp_bswap32((pp_u32)(tl >> 32)), pp_bswap32((pp_u32)tl)};
        pp_u64 len = st[PP_GCM_LEN];
        if (st[PP_GCM_OPEN] != 0) {
            pp_u32 stored[4], diff = 0;
            pp_load((const pp_u8 *)st[PP_GCM_SRC] + len, 16, stored);
            for (int i = 0; i < 4; i++) {
                diff |= stored[i] ^ tag[i];
            }
            ok[c] = diff == 0;
        } else {
            pp_store((pp_u8 *)st[PP_GCM_DST] + len, 16, tag);
            ok[c] = 1;
        }
    }
}
