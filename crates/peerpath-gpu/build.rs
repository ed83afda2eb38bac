//! Builds the GPU kernels for the host (kernels/shim.c includes
//! kernels/coding.cu, crypt.cu, dedup.cu and scan.cu), so the tests run these very kernels
//! against the CPU oracles on machines without a GPU. The release binary
//! carries the kernels as PTX (kernels/*.ptx, made by scripts/gpu-kernels.sh);
//! nothing but the tests calls the host build, and the linker drops it.

fn main() {
    println!("cargo:rerun-if-changed=kernels/shim.c");
    println!("cargo:rerun-if-changed=kernels/shim.h");
    println!("cargo:rerun-if-changed=kernels/coding.cu");
    println!("cargo:rerun-if-changed=kernels/crypt.cu");
    println!("cargo:rerun-if-changed=kernels/dedup.cu");
    println!("cargo:rerun-if-changed=kernels/scan.cu");
    cc::Build::new().file("kernels/shim.c").std("c11").warnings(true).extra_warnings(true).flag("-Werror").opt_level(2).compile("peerpath_gpu_kernels_host");
}
