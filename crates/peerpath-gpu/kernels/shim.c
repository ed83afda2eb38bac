// The kernels of coding.cu, crypt.cu, dedup.cu and scan.cu on the host, for the tests
// (kernels.rs, crypt.rs, dedup.rs, scan.rs): each launcher runs every thread of a 1-D grid in
// turn. The kernels wait at no barrier and share nothing between threads but
// crypt.cu's XOR sums and scan.cu's counters, so the order is immaterial.
#define PEERPATH_HOST_SHIM 1
#include "shim.h"

_Thread_local struct pp_dim3 blockIdx, blockDim, threadIdx, gridDim;

#include "coding.cu"
#include "crypt.cu"
#include "dedup.cu"
#include "scan.cu"

#define PP_GRID(grid, block, call)                                   \
    do {                                                             \
        gridDim.x = (grid);                                          \
        blockDim.x = (block);                                        \
        for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++)   \
            for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++) \
                call;                                                \
    } while (0)

void pp_shim_gf_matmul_words(unsigned grid, unsigned block, const pp_u8 *in, pp_u64 unit, pp_u32 k, pp_u8 *out, pp_u32 rows, const pp_u32 *pw)
{
    PP_GRID(grid, block, pp_gf_matmul_words(in, unit, k, out, rows, pw));
}

void pp_shim_gf_matmul_bytes(unsigned grid, unsigned block, const pp_u8 *in, pp_u64 unit, pp_u32 k, pp_u8 *out, pp_u32 rows, const pp_u32 *pw)
{
    PP_GRID(grid, block, pp_gf_matmul_bytes(in, unit, k, out, rows, pw));
}

void pp_shim_crc32_segments(unsigned grid, unsigned block, const pp_u64 *segs, pp_u32 n, const pp_u32 *table, pp_u32 *crcs)
{
    PP_GRID(grid, block, pp_crc32_segments(segs, n, table, crcs));
}

void pp_shim_gcm_prepare(unsigned grid, unsigned block, pp_u64 *states, pp_u32 n, const pp_u32 *te)
{
    PP_GRID(grid, block, pp_gcm_prepare(states, n, te));
}

void pp_shim_gcm_segments(unsigned grid, unsigned block, pp_u64 *states, pp_u32 n, const pp_u32 *starts, const pp_u32 *te)
{
    PP_GRID(grid, block, pp_gcm_segments(states, n, starts, te));
}

void pp_shim_gcm_finish(unsigned grid, unsigned block, const pp_u64 *states, pp_u32 n, pp_u32 *ok)
{
    PP_GRID(grid, block, pp_gcm_finish(states, n, ok));
}

void pp_shim_cdc_bits(unsigned grid, unsigned block, const pp_u64 *cmds, pp_u32 n, const pp_u32 *words, const pp_u64 *gear, pp_u32 *bits_s, pp_u32 *bits_l)
{
    PP_GRID(grid, block, pp_cdc_bits(cmds, n, words, gear, bits_s, bits_l));
}

void pp_shim_cdc_walk(unsigned grid, unsigned block, const pp_u64 *cmds, pp_u32 n, const pp_u64 *gear, const pp_u32 *bits_s, const pp_u32 *bits_l)
{
    PP_GRID(grid, block, pp_cdc_walk(cmds, n, gear, bits_s, bits_l));
}

void pp_shim_blake3_chunks(unsigned grid, unsigned block, const pp_u64 *cmds, pp_u32 n, const pp_u32 *slots)
{
    PP_GRID(grid, block, pp_blake3_chunks(cmds, n, slots));
}

void pp_shim_scan_lines(unsigned grid, unsigned block, const pp_u64 *cmds, pp_u32 n, const pp_u32 *segs, pp_u64 *lines)
{
    PP_GRID(grid, block, pp_scan_lines(cmds, n, segs, lines));
}

void pp_shim_scan_whole(unsigned grid, unsigned block, pp_u64 *cmds, pp_u32 n, const pp_u32 *segs, pp_u64 *lines, pp_u64 *sums)
{
    PP_GRID(grid, block, pp_scan_whole(cmds, n, segs, lines, sums));
}

void pp_shim_scan_records(unsigned grid, unsigned block, const pp_u64 *cmds, pp_u32 n, const pp_u32 *segs, const pp_u64 *lines, pp_u64 *sums)
{
    PP_GRID(grid, block, pp_scan_records(cmds, n, segs, lines, sums));
}

void pp_shim_scan_finish(unsigned grid, unsigned block, const pp_u64 *cmds, pp_u32 n, const pp_u64 *sums)
{
    PP_GRID(grid, block, pp_scan_finish(cmds, n, sums));
}
