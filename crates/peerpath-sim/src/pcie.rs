//! PCIe transaction-layer efficiency: how many bytes cross a link, in each direction, per byte
//! of payload moved by posted writes or by DMA reads.
//!
//! ```text
//!   posted write (DMA write into a BAR or host memory), data direction:
//!       | framing 8 | header 12/16 | payload <= MPS | (LCRC counted in framing)
//!       bytes on the wire per payload byte = (MPS + 8 + header) / MPS
//!   reverse direction: ACK + UpdateFC DLLPs, 2 x 8 B per TLP = 16 / MPS per payload byte
//!
//!   DMA read: requests (no payload, 4DW header) one per read_request_bytes, initiator -> owner;
//!   completions (3DW header) carrying <= MPS bytes each, owner -> initiator; DLLPs as above,
//!   each direction acknowledging the other's TLPs.
//! ```
//!
//! Line encoding (8b/10b, 128b/130b) is already in the link's capacity
//! ([`peerpath_topo::Link::bytes_per_s`]). SKP ordered sets (~0.3% at Gen3) are left out.
//! Gen6 flit mode is approximated with the same per-TLP overhead.

use serde::Serialize;

use crate::catalog::{Catalog, Platform};

/// The per-TLP constants and the platform's payload size and addressing.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TlpModel {
    pub max_payload_bytes: f64,
    pub read_request_bytes: f64,
    pub framing_bytes: f64,
    pub header_3dw_bytes: f64,
    pub header_4dw_bytes: f64,
    pub dllp_bytes: f64,
    pub dllps_per_tlp: f64,
    /// 64-bit addresses: memory requests carry 4-dword headers.
    pub addr64: bool,
}

/// Bytes on the wire per payload byte: in the direction the data moves, and in the other one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WireCost {
    pub data_direction: f64,
    pub reverse_direction: f64,
}

fn val(f: &crate::catalog::Figure, default: f64) -> f64 {
    f.value.unwrap_or(default)
}

impl TlpModel {
    pub fn from_catalog(cat: &Catalog, platform: &Platform) -> TlpModel {
        let p = &cat.pcie;
        TlpModel {
            max_payload_bytes: val(&platform.max_payload_bytes, 256.0),
            read_request_bytes: val(&p.read_request_bytes, 512.0),
            framing_bytes: val(&p.framing_bytes, 8.0),
            header_3dw_bytes: val(&p.header_3dw_bytes, 12.0),
            header_4dw_bytes: val(&p.header_4dw_bytes, 16.0),
            dllp_bytes: val(&p.dllp_bytes, 8.0),
            dllps_per_tlp: val(&p.dllps_per_tlp, 2.0),
            addr64: val(&platform.addr64, 1.0) != 0.0,
        }
    }

    fn request_header(&self) -> f64 {
        if self.addr64 {
            self.header_4dw_bytes
        } else {
            self.header_3dw_bytes
        }
    }

    fn dllp_per_tlp_bytes(&self) -> f64 {
        self.dllp_bytes * self.dllps_per_tlp
    }

    /// Posted writes of MPS-sized payloads.
    pub fn posted_write(&self) -> WireCost {
        let p = self.max_payload_bytes;
        WireCost {
            data_direction: (p + self.framing_bytes + self.request_header()) / p,
            reverse_direction: self.dllp_per_tlp_bytes() / p,
        }
    }

    /// A DMA read: completions of MPS bytes carry the data; requests go the other way.
    pub fn dma_read(&self) -> WireCost {
        let c = self.max_payload_bytes;
        let r = self.read_request_bytes;
        WireCost {
            data_direction: (c + self.framing_bytes + self.header_3dw_bytes) / c + self.dllp_per_tlp_bytes() / r,
            reverse_direction: (self.framing_bytes + self.request_header()) / r + self.dllp_per_tlp_bytes() / c,
        }
    }

    /// Payload share of a link carrying only posted writes one way (what a streaming read from
    /// an SSD into memory sees).
    pub fn posted_write_efficiency(&self) -> f64 {
        1.0 / self.posted_write().data_direction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(mps: f64, addr64: bool) -> TlpModel {
        TlpModel {
            max_payload_bytes: mps,
            read_request_bytes: 512.0,
            framing_bytes: 8.0,
            header_3dw_bytes: 12.0,
            header_4dw_bytes: 16.0,
            dllp_bytes: 8.0,
            dllps_per_tlp: 2.0,
            addr64,
        }
    }

    #[test]
    fn an456_example_256_byte_payload_3dw_is_92_percent() {
        // Intel AN 456: 256 / (256 + 20) = 92%.
        let e = m(256.0, false).posted_write_efficiency();
        assert!((e - 256.0 / 276.0).abs() < 1e-12);
        assert!((e - 0.9275).abs() < 1e-3);
    }

    #[test]
    fn smaller_payloads_and_wider_headers_cost_more() {
        assert!(m(128.0, false).posted_write_efficiency() < m(256.0, false).posted_write_efficiency());
        assert!(m(256.0, true).posted_write_efficiency() < m(256.0, false).posted_write_efficiency());
        let r = m(256.0, true).dma_read();
        assert!(r.data_direction > 1.0 && r.reverse_direction > 0.0);
    }
}
