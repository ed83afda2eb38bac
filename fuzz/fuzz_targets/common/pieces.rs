//! Input delivered in pieces of a chosen size, as a pipe or a socket hands it over (the gzip
//! reader targets share it).
use std::io::Read;

pub struct Pieces<'a> {
    pub data: &'a [u8],
    pub step: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}
