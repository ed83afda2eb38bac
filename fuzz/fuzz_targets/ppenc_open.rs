//! peerpath-enc/1 files on arbitrary bytes: opening must never panic or
//! over-allocate, and must refuse what it did not seal. The first byte
//! picks a mode: open the bytes as they are; or seal the rest, flip the
//! bit the next three bytes choose, and check the change is refused (and
//! that the sealed file, unchanged, opens to the rest).
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::crypt::{open_all, seal_all, Key};

fuzz_target!(|data: &[u8]| {
    let key = Key::from_bytes(&[7u8; 32]).expect("a 32-byte key");
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        let _ = open_all(&key, rest);
        return;
    }
    let Some((at, plain)) = rest.split_first_chunk::<3>() else { return };
    let block = 1 + u32::from(mode >> 1) * 7;
    let sealed = seal_all(&key, block, plain).expect("sealing never fails");
    assert_eq!(open_all(&key, &sealed).expect("a sealed file opens"), plain);
    let mut bad = sealed.clone();
    let i = usize::from(u16::from_le_bytes([at[0], at[1]])) % bad.len();
    bad[i] ^= 1 << (at[2] % 8);
    assert!(open_all(&key, &bad).is_err(), "a flipped bit at byte {i} of {} went unnoticed", bad.len());
});
