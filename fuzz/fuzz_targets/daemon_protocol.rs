//! The job server's wire format (`peerpath_runtime::daemon_proto`) on arbitrary bytes, as the
//! daemon reads a client's (any process of its user: untrusted) and a client the daemon's.
//! First byte even: a request message, its length then its JSON, as the daemon takes it: the
//! length is refused past the bound before anything is sized by it; a request decodes to no
//! more bytes than its length (its arguments and variables one buffer each, however many); a
//! request decoded encodes to a message a client can send (within the bound) that decodes to
//! itself. Odd: a
//! reply line, as the client reads it: a reply or an error; a reply encodes to one line that
//! decodes to itself. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_runtime::daemon_proto::{decode_reply, decode_request, encode_reply, encode_request, request_length, MAX_REQUEST_BYTES};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else { return };
    if mode & 1 == 1 {
        let Ok(line) = std::str::from_utf8(data) else { return };
        if let Ok(reply) = decode_reply(line) {
            let again = encode_reply(&reply);
            assert_eq!(again.iter().filter(|&&b| b == b'\n').count(), 1, "{reply:?} is not one line");
            let text = std::str::from_utf8(&again[..again.len() - 1]).expect("JSON is UTF-8");
            assert_eq!(decode_reply(text).as_ref(), Ok(&reply));
        }
        return;
    }
    let Some((prefix, rest)) = data.split_first_chunk::<4>() else { return };
    let len = match request_length(*prefix) {
        Ok(len) => len,
        Err(why) => {
            assert!(u32::from_le_bytes(*prefix) > MAX_REQUEST_BYTES, "a length within the bound refused: {why}");
            return;
        }
    };
    assert!(len <= MAX_REQUEST_BYTES as usize);
    // Fewer bytes than the length says: the daemon waits for the rest (until its deadline).
    let Some(body) = rest.get(..len) else { return };
    if let Ok(request) = decode_request(body) {
        // However many arguments and variables, no more bytes than the request's own.
        assert!(request.argv.as_bytes().len() + request.env.as_bytes().len() + request.cwd.len() <= len, "{request:?}");
        let message = encode_request(&request).unwrap_or_else(|why| panic!("a request the daemon took cannot be sent: {why}"));
        let again = request_length(message[..4].try_into().unwrap()).expect("a length within the bound");
        assert_eq!(again, message.len() - 4);
        assert_eq!(decode_request(&message[4..]).as_ref(), Ok(&request));
    }
});
