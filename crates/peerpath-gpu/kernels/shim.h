// Lets the host's C compiler build kernels/coding.cu, crypt.cu, dedup.cu and scan.cu (see their heads): a grid's
// coordinates are globals of the calling thread that shim.c's launchers set
// for each thread of the grid in turn.
#ifndef PEERPATH_SHIM_H
#define PEERPATH_SHIM_H

struct pp_dim3 {
    unsigned int x, y, z;
};
extern _Thread_local struct pp_dim3 blockIdx, blockDim, threadIdx, gridDim;

#define PP_KERNEL void
#define PP_RESTRICT restrict
// One thread at a time: a plain XOR is the atomic one.
#define PP_ATOMIC_XOR(p, v) (*(p) ^= (v))

#endif
