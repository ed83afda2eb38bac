// peerpath's own GPU kernels: Reed-Solomon coding over GF(2^8) and CRC-32
// (the erasure-coding functions of the GPU device, crates/peerpath-gpu/src/kernels.rs).
//
// No library does these on a GPU (nvCOMP compresses; its CRC-32 entry point
// refused every configuration tried on the lent H100), so they are written
// here. They are plain C in CUDA's dialect, compiled two ways:
// - to PTX by NVRTC (scripts/gpu-kernels.sh writes coding.ptx, which the
//   binary carries; the driver compiles it for the GPU at run time);
// - by the host's C compiler with kernels/shim.h (build.rs), which runs every
//   thread of a grid in turn, so the tests check these very lines against the
//   CPU oracles (ISA-L, crc32fast) on machines without a GPU.
// That is why no kernel shares memory between threads or waits at a barrier:
// each thread's result depends on its own loads only.

#ifdef PEERPATH_HOST_SHIM
#include "shim.h"
#else
#define PP_KERNEL extern "C" __global__ void
#define PP_RESTRICT __restrict__
#endif

typedef unsigned char pp_u8;
typedef unsigned int pp_u32;
typedef unsigned long long pp_u64;

// Out row r of `rows` = XOR over inputs j of coef[r][j] * in_j, in GF(2^8)
// with ISA-L's polynomial (x^8 + x^4 + x^3 + x^2 + 1): the `k` inputs are
// units of `unit` bytes back to back from `in`, the `rows` outputs likewise
// from `out`. Encoding (the code's parity rows) and reconstruction (the rows
// a lost shard has over the survivors) are both this product.
//
// Multiplying by a constant c is linear over GF(2): c * x is the XOR of
// c * 2^i over the bits i set in x. `pw` holds, for each (r, j) in row-major
// order, the 8 products coef[r][j] * 2^i, each repeated in the 4 bytes of a
// word (the host makes it: kernels.rs `powers`), so a thread multiplies 4
// bytes at once with masks, no table lookups.

// Four bytes per thread: `in`, `out` and `unit` multiples of 4.
PP_KERNEL pp_gf_matmul_words(const pp_u8 *PP_RESTRICT in, pp_u64 unit, pp_u32 k, pp_u8 *PP_RESTRICT out, pp_u32 rows, const pp_u32 *PP_RESTRICT pw)
{
    pp_u64 words = unit / 4;
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 w = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += step) {
        for (pp_u32 r = 0; r < rows; r++) {
            pp_u32 acc = 0;
            for (pp_u32 j = 0; j < k; j++) {
                pp_u32 x = ((const pp_u32 *)(in + j * unit))[w];
                const pp_u32 *p = pw + ((pp_u64)r * k + j) * 8;
                for (int i = 0; i < 8; i++) {
                    // 0xFF in each byte whose bit i is set (no carries: each byte is 0 or 1).
                    acc ^= (((x >> i) & 0x01010101u) * 0xFFu) & p[i];
                }
            }
            ((pp_u32 *)(out + r * unit))[w] = acc;
        }
    }
}

// One byte per thread: any alignment, any unit.
PP_KERNEL pp_gf_matmul_bytes(const pp_u8 *PP_RESTRICT in, pp_u64 unit, pp_u32 k, pp_u8 *PP_RESTRICT out, pp_u32 rows, const pp_u32 *PP_RESTRICT pw)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 b = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; b < unit; b += step) {
        for (pp_u32 r = 0; r < rows; r++) {
            pp_u32 acc = 0;
            for (pp_u32 j = 0; j < k; j++) {
                pp_u32 x = in[j * unit + b];
                const pp_u32 *p = pw + ((pp_u64)r * k + j) * 8;
                for (int i = 0; i < 8; i++) {
                    acc ^= (0u - ((x >> i) & 1u)) & p[i];
                }
            }
            out[r * unit + b] = (pp_u8)acc;
        }
    }
}

// The CRC-32 (gzip's: reflected 0xEDB88320, initial and final all ones) of
// each of `n` segments, one segment per thread: `segs` holds each one's
// address and length, `table` the 4 x 256 slicing-by-4 table (kernels.rs
// `crc_table`). The host joins the segments' CRCs into each command's (a
// CRC-32 of A then B follows from A's, B's and B's length: crc32fast's
// `combine`), four bytes per segment in place of the payload.
PP_KERNEL pp_crc32_segments(const pp_u64 *PP_RESTRICT segs, pp_u32 n, const pp_u32 *PP_RESTRICT table, pp_u32 *PP_RESTRICT crcs)
{
    pp_u64 step = (pp_u64)gridDim.x * blockDim.x;
    for (pp_u64 s = (pp_u64)blockIdx.x * blockDim.x + threadIdx.x; s < n; s += step) {
        const pp_u8 *p = (const pp_u8 *)segs[2 * s];
        pp_u64 len = segs[2 * s + 1];
        pp_u32 c = 0xFFFFFFFFu;
        // Bytes up to a 4-byte boundary, then words, then the tail.
        while (len > 0 && ((pp_u64)p & 3) != 0) {
            c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
            len--;
        }
        while (len >= 4) {
            // The word read as little-endian bytes, as both the GPU and x86 store it.
            c ^= *(const pp_u32 *)p;
            c = table[3 * 256 + (c & 0xFF)] ^ table[2 * 256 + ((c >> 8) & 0xFF)] ^ table[256 + ((c >> 16) & 0xFF)] ^ table[c >> 24];
            p += 4;
            len -= 4;
        }
        while (len > 0) {
            c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
            len--;
        }
        crcs[s] = ~c;
    }
}
