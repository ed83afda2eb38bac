// The kernels of coding.cu on the host, for the tests (kernels.rs): each
// launcher runs every thread of a 1-D grid in turn. The kernels share nothing
// between threads and wait at no barrier, so the order is immaterial.
#define PEERPATH_HOST_SHIM 1
#include "shim.h"

_Thread_local struct pp_dim3 blockIdx, blockDim, threadIdx, gridDim;

#include "coding.cu"

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
