//! The one token layout of the jobs' I/O: what an engine completion is for.

use peerpath_io::IoOp;

/// What an I/O is for. An engine carries it as a `u64` (bit 63: a write;
/// bits 32-62: the stream; bits 0-31: the read's sequence number or the
/// write's buffer id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token {
    /// Read number `seq` of stream `stream`.
    Read { stream: usize, seq: u64 },
    /// A write of stream `stream` from buffer `id` (0 where the writer needs none).
    Write { stream: usize, id: u32 },
}

const WRITE_BIT: u64 = 1 << 63;
const LOW_BITS: u64 = 0xffff_ffff;

impl Token {
    /// A write of stream `stream` that needs no buffer id.
    pub(crate) fn write(stream: usize) -> Token {
        Token::Write { stream, id: 0 }
    }

    pub(crate) fn raw(self) -> u64 {
        match self {
            Token::Read { stream, seq } => {
                debug_assert!(seq <= LOW_BITS && (stream as u64) < (1 << 31));
                ((stream as u64) << 32) | seq
            }
            Token::Write { stream, id } => WRITE_BIT | ((stream as u64) << 32) | u64::from(id),
        }
    }

    /// The token of a completion: `op` says which kind (the bit agrees).
    pub(crate) fn of(op: IoOp, raw: u64) -> Token {
        let stream = ((raw & !WRITE_BIT) >> 32) as usize;
        match op {
            IoOp::Write => {
                debug_assert!(raw & WRITE_BIT != 0);
                Token::Write { stream, id: (raw & LOW_BITS) as u32 }
            }
            IoOp::Read => {
                debug_assert!(raw & WRITE_BIT == 0);
                Token::Read { stream, seq: raw & LOW_BITS }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_back_as_they_went() {
        for t in [
            Token::Read { stream: 0, seq: 0 },
            Token::Read { stream: 12, seq: 0xffff_fffe },
            Token::Read { stream: (1 << 31) - 1, seq: 7 },
            Token::Write { stream: 0, id: 0 },
            Token::Write { stream: 5, id: u32::MAX },
            Token::write(3),
        ] {
            let op = if matches!(t, Token::Write { .. }) { IoOp::Write } else { IoOp::Read };
            assert_eq!(Token::of(op, t.raw()), t);
        }
        assert_ne!(Token::write(1).raw(), Token::Read { stream: 1, seq: 0 }.raw());
    }
}
