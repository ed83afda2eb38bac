//! Key files (`--key-file`, `$PEERPATH_KEY`) on arbitrary bytes: a key or
//! an error, never a panic, and the error never quotes the input (it is the
//! error of any bytes of the same shape: the same white space around the
//! same number of other bytes, none of them a hexadecimal digit); and a key
//! written as `keygen` writes it (64 hexadecimal digits, lower or upper
//! case, white space around them) is the key of the 32 bytes it spells.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_func::crypt::{device_key, Key};

fuzz_target!(|data: &[u8]| {
    if let Err(e) = Key::from_bytes(data) {
        let masked: Vec<u8> = data.iter().map(|&b| if b.is_ascii_whitespace() { b } else { b'z' }).collect();
        assert_eq!(Key::from_bytes(&masked).err(), Some(e), "the error depends on the key's bytes");
    }
    let Some((&how, raw)) = data.split_first() else { return };
    let Some(raw) = raw.first_chunk::<32>() else { return };
    let digits: String = raw.iter().map(|b| if how & 1 != 0 { format!("{b:02X}") } else { format!("{b:02x}") }).collect();
    let space = [" ", "\n", "\t", "\r\n", ""];
    let text = format!("{}{digits}{}", space[usize::from(how >> 1) % 5], space[usize::from(how >> 4) % 5]);
    let id = [how; 16];
    let from_hex = Key::from_bytes(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    let from_raw = Key::from_bytes(raw).expect("32 raw bytes are a key");
    assert_eq!(*device_key(&from_hex, &id), *device_key(&from_raw, &id), "{text:?} is another key than its bytes");
});
