// peerpath's own GPU kernels for deduplication: FastCDC's chunk boundaries
// (the `fastcdc` crate's v2020 cuts, normalization level 1) and each chunk's
// BLAKE3 digest, the `ChunkFingerprint` function of the GPU device
// (crates/peerpath-gpu/src/dedup.rs). Only the boundaries and digests are
// written back; the payload stays in GPU memory.
//
// No library does either on a GPU, so they are written here in plain C in
// CUDA's dialect and compiled two ways as coding.cu is (see its head): to PTX
// by NVRTC (dedup.ptx, carried by the binary) and by the host's C compiler
// (kernels/shim.c), so the tests check these very lines against the CPU oracle
// (peerpath_func::dedup::chunk_digests: the fastcdc and blake3 crates) on
// machines without a GPU. No kernel shares memory between threads or waits at
// a barrier.
//
// FastCDC is a chain (where a chunk ends depends on where it began), but its
// rolling hash is not: h_i = (h_(i-1) << 1) + GEAR[b_i] over 64-bit words
// forgets a byte after 64 steps, so once a chunk has hashed 64 bytes, whether
// position i can end it depends on bytes i-63..i alone. Three launches a batch:
// 1. pp_cdc_bits, a thread per 32 positions: the hash of each position's
//    64-byte window, tested against both of the command's masks (the stricter
//    one before the average size, the looser after), as two bitmaps.
// 2. pp_cdc_walk, a thread per command: the chain of cuts. From each chunk's
//    start it hashes the first 63 bytes past the minimum size exactly (the
//    window is not full yet), then finds the first set bit in the bitmaps up
//    to the largest size; it writes each chunk's offset and length.
// 3. pp_blake3_chunks, a thread per chunk the command could have: BLAKE3 of
//    its chunk (1 KiB BLAKE3 chunks, then the tree of parents), written
//    beside its offset and length.

#ifdef PEERPATH_HOST_SHIM
#include "shim.h"
#define PP_CTZ(x) __builtin_ctz(x)
#else
#define PP_KERNEL extern "C" __global__ void
#define PP_RESTRICT __restrict__
#define PP_CTZ(x) (__ffs(x) - 1)
#endif

typedef unsigned char pp_u8;
typedef unsigned int pp_u32;
typedef unsigned long long pp_u64;

// A command: 16 words (dedup.rs `CdcPlan` writes them).
#define PP_CDC_WORDS 16
#define PP_CDC_DATA 0    // the input's address
#define PP_CDC_LEN 1     // its bytes
#define PP_CDC_MIN 2     // chunk sizes (even, as FastCDC takes them)
#define PP_CDC_AVG 3
#define PP_CDC_MAX 4
#define PP_CDC_MASK_S 5  // the masks below and past the average size
#define PP_CDC_MASK_L 6
#define PP_CDC_OUT 7     // the output's address: count, consumed, then 48-byte entries
#define PP_CDC_AT_END 8  // 0: the chunk reaching the end is left out (more data could move it)
#define PP_CDC_BITS 9    // the command's first bitmap word (both bitmaps)
#define PP_CDC_ENTRY_BYTES 48

// The last command c with starts[c] <= s (commands with none have starts[c] == starts[c + 1]).
static pp_u32 pp_find(const pp_u32 *PP_RESTRICT starts, pp_u32 n, pp_u64 s)
{
    pp_u32 lo = 0, hi = n;
    while (hi - lo > 1) {
        pp_u32 mid = lo + (hi - lo) / 2;
        if (starts[mid] <= s) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void pp_put64(pp_u8 *p, pp_u64 v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (pp_u8)(v >> (8 * i));
    }
}

static pp_u64 pp_get64(const pp_u8 *p)
{
    pp_u64 v = 0;
    for (int i = 0; i < 8; i++) {
        v |= (pp_u64)p[i] << (8 * i);
    }
    return v;
}

// `words` (n + 1 entries): command c's bitmap words are words[c] .. words[c + 1].
PP_KERNEL pp_cdc_bits(const pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u32 *PP_RESTRICT words, const pp_u64 *PP_RESTRICT gear, pp_u32 *PP_RESTRICT bits_s, pp_u32 *PP_RESTRICT bits_l)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 w = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; w < words[n]; w += step) {
        pp_u32 c = pp_find(words, n, w);
        const pp_u64 *cmd = cmds + (pp_u64)c * PP_CDC_WORDS;
        const pp_u8 *data = (const pp_u8 *)cmd[PP_CDC_DATA];
        pp_u64 len = cmd[PP_CDC_LEN], mask_s = cmd[PP_CDC_MASK_S], mask_l = cmd[PP_CDC_MASK_L];
        pp_u64 first = (w - words[c]) * 32;
        pp_u64 end = first + 32 < len ? first + 32 : len;
        pp_u64 h = 0;
        pp_u32 s = 0, l = 0;
        for (pp_u64 p = first >= 63 ? first - 63 : 0; p < end; p++) {
            h = (h << 1) + gear[data[p]];
            if (p >= first) {
                s |= (pp_u32)((h & mask_s) == 0) << (p - first);
                l |= (pp_u32)((h & mask_l) == 0) << (p - first);
            }
        }
        bits_s[w] = s;
        bits_l[w] = l;
    }
}

// The first set bit of `bits` in [a, b), or b.
static pp_u64 pp_first_bit(const pp_u32 *PP_RESTRICT bits, pp_u64 a, pp_u64 b)
{
    while (a < b) {
        pp_u32 x = bits[a / 32] >> (a % 32);
        if (x != 0) {
            pp_u64 at = a + PP_CTZ(x);
            return at < b ? at : b;
        }
        a = (a / 32 + 1) * 32;
    }
    return b;
}

PP_KERNEL pp_cdc_walk(const pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u64 *PP_RESTRICT gear, const pp_u32 *PP_RESTRICT bits_s, const pp_u32 *PP_RESTRICT bits_l)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 c = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; c < n; c += step) {
        const pp_u64 *cmd = cmds + c * PP_CDC_WORDS;
        const pp_u8 *data = (const pp_u8 *)cmd[PP_CDC_DATA];
        pp_u64 len = cmd[PP_CDC_LEN], min = cmd[PP_CDC_MIN], avg = cmd[PP_CDC_AVG], max = cmd[PP_CDC_MAX];
        pp_u64 mask_s = cmd[PP_CDC_MASK_S], mask_l = cmd[PP_CDC_MASK_L];
        const pp_u32 *ws = bits_s + cmd[PP_CDC_BITS], *wl = bits_l + cmd[PP_CDC_BITS];
        pp_u8 *out = (pp_u8 *)cmd[PP_CDC_OUT];
        pp_u64 pos = 0, count = 0;
        while (pos < len) {
            pp_u64 rem = len - pos, cut = rem;
            if (rem > min) {
                // As fastcdc's cut_gear: a window of `r` bytes, the stricter mask before
                // `center`, positions tested in pairs (an odd last one is not).
                pp_u64 r = rem, center = avg;
                if (r > max) {
                    r = max;
                } else if (r < center) {
                    center = r;
                }
                pp_u64 lim1 = center / 2 * 2, lim2 = r / 2 * 2;
                cut = r;
                pp_u64 h = 0, i = min;
                for (; i < lim2 && i < min + 63; i++) {
                    h = (h << 1) + gear[data[pos + i]];
                    if ((h & (i < lim1 ? mask_s : mask_l)) == 0) {
                        cut = i;
                        break;
                    }
                }
                if (cut == r && i < lim2) {
                    // The hash's window is full: the bitmaps say.
                    pp_u64 split = lim1 > i ? (lim1 < lim2 ? lim1 : lim2) : i;
                    pp_u64 at = pp_first_bit(ws, pos + i, pos + split);
                    if (at == pos + split) {
                        at = pp_first_bit(wl, pos + split, pos + lim2);
                    }
                    if (at < pos + lim2) {
                        cut = at - pos;
                    }
                }
            }
            pp_put64(out + 16 + count * PP_CDC_ENTRY_BYTES, pos);
            pp_put64(out + 16 + count * PP_CDC_ENTRY_BYTES + 8, cut);
            count++;
            pos += cut;
        }
        if (cmd[PP_CDC_AT_END] == 0 && count > 0) {
            count--;
            pos = pp_get64(out + 16 + count * PP_CDC_ENTRY_BYTES);
        }
        pp_put64(out, count);
        pp_put64(out + 8, pos);
    }
}

// BLAKE3 (the reference implementation's structure, unkeyed hashing).
#define PP_B3_CHUNK_START 1u
#define PP_B3_CHUNK_END 2u
#define PP_B3_PARENT 4u
#define PP_B3_ROOT 8u

static pp_u32 pp_rotr(pp_u32 x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void pp_b3_g(pp_u32 *v, int a, int b, int c, int d, pp_u32 x, pp_u32 y)
{
    v[a] = v[a] + v[b] + x;
    v[d] = pp_rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = pp_rotr(v[b] ^ v[c], 12);
    v[a] = v[a] + v[b] + y;
    v[d] = pp_rotr(v[d] ^ v[a], 8);
    v[c] = v[c] + v[d];
    v[b] = pp_rotr(v[b] ^ v[c], 7);
}

// cv = the first 8 words of the compression of block `m` (16 words) with cv.
static void pp_b3_compress(pp_u32 *cv, const pp_u32 *m_in, pp_u64 counter, pp_u32 block_len, pp_u32 flags)
{
    const pp_u32 iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au, 0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
    const int perm[16] = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};
    pp_u32 v[16], m[16], t[16];
    for (int i = 0; i < 8; i++) {
        v[i] = cv[i];
        v[8 + i] = i < 4 ? iv[i] : 0;
    }
    v[12] = (pp_u32)counter;
    v[13] = (pp_u32)(counter >> 32);
    v[14] = block_len;
    v[15] = flags;
    for (int i = 0; i < 16; i++) {
        m[i] = m_in[i];
    }
    for (int r = 0; r < 7; r++) {
        pp_b3_g(v, 0, 4, 8, 12, m[0], m[1]);
        pp_b3_g(v, 1, 5, 9, 13, m[2], m[3]);
        pp_b3_g(v, 2, 6, 10, 14, m[4], m[5]);
        pp_b3_g(v, 3, 7, 11, 15, m[6], m[7]);
        pp_b3_g(v, 0, 5, 10, 15, m[8], m[9]);
        pp_b3_g(v, 1, 6, 11, 12, m[10], m[11]);
        pp_b3_g(v, 2, 7, 8, 13, m[12], m[13]);
        pp_b3_g(v, 3, 4, 9, 14, m[14], m[15]);
        for (int i = 0; i < 16; i++) {
            t[i] = m[perm[i]];
        }
        for (int i = 0; i < 16; i++) {
            m[i] = t[i];
        }
    }
    for (int i = 0; i < 8; i++) {
        cv[i] = v[i] ^ v[8 + i];
    }
}

// The BLAKE3 digest of `len` bytes at `p` (32 bytes to `out`).
static void pp_blake3(const pp_u8 *p, pp_u64 len, pp_u8 *out)
{
    const pp_u32 iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au, 0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};
    // Chaining values of the subtrees so far (a chunk is at most 16 MiB: 2^14 BLAKE3 chunks).
    pp_u32 stack[16][8];
    int depth = 0;
    pp_u64 chunks = len == 0 ? 1 : (len + 1023) / 1024;
    pp_u32 cv[8], m[16];
    for (pp_u64 k = 0; k < chunks; k++) {
        pp_u64 at = k * 1024, n = len - at < 1024 ? len - at : 1024;
        pp_u64 blocks = n == 0 ? 1 : (n + 63) / 64;
        for (int i = 0; i < 8; i++) {
            cv[i] = iv[i];
        }
        for (pp_u64 b = 0; b < blocks; b++) {
            pp_u64 from = at + 64 * b, bytes = n - 64 * b < 64 ? n - 64 * b : 64;
            for (int i = 0; i < 16; i++) {
                pp_u32 w = 0;
                for (int j = 0; j < 4; j++) {
                    pp_u64 q = (pp_u64)(4 * i + j);
                    w |= (q < bytes ? (pp_u32)p[from + q] : 0u) << (8 * j);
                }
                m[i] = w;
            }
            pp_u32 flags = (b == 0 ? PP_B3_CHUNK_START : 0u) | (b + 1 == blocks ? PP_B3_CHUNK_END : 0u);
            if (b + 1 == blocks && chunks == 1) {
                flags |= PP_B3_ROOT;
            }
            pp_b3_compress(cv, m, k, (pp_u32)bytes, flags);
        }
        if (k + 1 == chunks) {
            break;
        }
        // Merge completed subtrees: as many as the chunk count so far has trailing zeros.
        pp_u64 total = k + 1;
        while ((total & 1) == 0) {
            depth--;
            for (int i = 0; i < 8; i++) {
                m[i] = stack[depth][i];
                m[8 + i] = cv[i];
                cv[i] = iv[i];
            }
            pp_b3_compress(cv, m, 0, 64, PP_B3_PARENT);
            total >>= 1;
        }
        for (int i = 0; i < 8; i++) {
            stack[depth][i] = cv[i];
        }
        depth++;
    }
    // The last chunk's output joins the stack's subtrees from the top; the last join is the root.
    while (depth > 0) {
        depth--;
        for (int i = 0; i < 8; i++) {
            m[i] = stack[depth][i];
            m[8 + i] = cv[i];
            cv[i] = iv[i];
        }
        pp_b3_compress(cv, m, 0, 64, PP_B3_PARENT | (depth == 0 ? PP_B3_ROOT : 0u));
    }
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 4; j++) {
            out[4 * i + j] = (pp_u8)(cv[i] >> (8 * j));
        }
    }
}

// `slots` (n + 1 entries): command c's possible chunks are slots[c] .. slots[c + 1]
// (its bytes over the minimum size, plus one); runs after pp_cdc_walk.
PP_KERNEL pp_blake3_chunks(const pp_u64 *PP_RESTRICT cmds, pp_u32 n, const pp_u32 *PP_RESTRICT slots)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 s = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; s < slots[n]; s += step) {
        pp_u32 c = pp_find(slots, n, s);
        const pp_u64 *cmd = cmds + (pp_u64)c * PP_CDC_WORDS;
        pp_u8 *out = (pp_u8 *)cmd[PP_CDC_OUT];
        pp_u64 k = s - slots[c];
        if (k >= pp_get64(out)) {
            continue;
        }
        pp_u8 *e = out + 16 + k * PP_CDC_ENTRY_BYTES;
        pp_blake3((const pp_u8 *)cmd[PP_CDC_DATA] + pp_get64(e), pp_get64(e + 8), e + 16);
    }
}
