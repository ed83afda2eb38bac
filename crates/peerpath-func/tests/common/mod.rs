//! Helpers the test files of peerpath-func share.

use std::io::Read;

/// A reader that hands out at most `step` bytes per call.
pub struct Dribble<'a> {
    pub data: &'a [u8],
    pub step: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}
