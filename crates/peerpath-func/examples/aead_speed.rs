//! The AES-256-GCM library's own speed on this machine, one thread: aws-lc's
//! `seal_in_place` over one buffer of BLOCK bytes, again and again for
//! SECONDS (cache-warm, as `openssl speed` measures). bench/crypt.sh sets
//! peerpath's cipher stage beside it.
//!     cargo run --release -p peerpath-func --example aead_speed [SECONDS] [BLOCK]
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let block: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &[7u8; 32]).expect("a 32-byte key"));
    let mut buf = vec![0x41u8; block];
    let (start, mut n) = (std::time::Instant::now(), 0u64);
    while start.elapsed().as_secs_f64() < seconds {
        let mut nonce = [0u8; 12];
        nonce[4..].copy_from_slice(&n.to_be_bytes());
        let _tag = key.seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::from(b"peerpath"), &mut buf).expect("seal");
        n += 1;
    }
    let s = start.elapsed().as_secs_f64();
    println!("aws-lc AES-256-GCM seal, {block}-byte buffers, 1 thread: {:.3} GB/s ({n} buffers in {s:.2} s)", n as f64 * block as f64 / s / 1e9);
}
