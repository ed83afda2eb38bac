//! Queue entries' function words (`docs/queue-format.md`) on arbitrary
//! bytes: decoding an opcode and parameter word never panics, and every
//! function it accepts encodes back to the same opcode and word.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_device::Function;

fuzz_target!(|data: &[u8]| {
    let Some((&opcode, rest)) = data.split_first() else { return };
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    let param = u64::from_le_bytes(word);
    if let Some(Ok(f)) = Function::from_opcode(opcode, param) {
        assert_eq!((f.kind().opcode(), f.param_word()), (opcode, param), "{f}");
    }
});
