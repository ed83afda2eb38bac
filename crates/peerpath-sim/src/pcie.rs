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
//!
//! Gen6 and later (64 GT/s and up) run in flit mode, 1b/1b encoding: each 256-byte flit carries
//! 236 B of TLPs, 6 B of DLP (the flit's sequence number, and the Ack/Nak and flow-control
//! updates that were DLLPs), 8 B of CRC over both, and 6 B of FEC (PCIe Base Specification
//! 6.x, Flit Mode; as summarised from r6.2 at
//! <https://blog.csdn.net/weixin_43770660/article/details/141707780>). TLPs have no STP token
//! and no LCRC of their own (the flit's CRC covers them), and no DLLP crosses the link
//! separately. The link's capacity already leaves out the CRC and FEC (242/256), so a flit-mode
//! TLP costs its header and payload only, times 242/236 for the DLP bytes beside them; charging
//! it the 8 framing bytes and 2 DLLPs of a Gen1-5 TLP as well counted framing twice. A posted
//! write of 256 B with a 4-dword header on Gen6 x16 moves 128 GB/s x 236/256 x 256/272 =
//! 111.06 GB/s of payload (it was 128 x 242/256 x 256/280 = 110.63).

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

/// Bytes on the wire per payload byte: in the direction the data moves, and in the other one,
/// on a link in non-flit mode (Gen1-5) and on one in flit mode (Gen6 and later).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WireCost {
    pub data_direction: f64,
    pub reverse_direction: f64,
    pub flit_data_direction: f64,
    pub flit_reverse_direction: f64,
}

/// TLP bytes per flit, and the bytes of a flit a link's capacity counts (TLP + DLP: the CRC
/// and FEC are out of it, see [`peerpath_topo::LinkSpeed::lane_bytes_per_s`]).
const FLIT_TLP_BYTES: f64 = 236.0;
const FLIT_USABLE_BYTES: f64 = 242.0;

/// The first generation that runs in flit mode (64 GT/s).
pub const FIRST_FLIT_GEN: u8 = 6;

impl WireCost {
    /// (data direction, reverse direction) on a link in flit mode or not.
    pub fn on(&self, flit: bool) -> (f64, f64) {
        if flit {
            (self.flit_data_direction, self.flit_reverse_direction)
        } else {
            (self.data_direction, self.reverse_direction)
        }
    }
}

/// Capacity bytes per TLP byte in flit mode: the DLP bytes beside each flit's TLP bytes.
fn flit(tlp_bytes_per_payload_byte: f64) -> f64 {
    tlp_bytes_per_payload_byte * FLIT_USABLE_BYTES / FLIT_TLP_BYTES
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
            flit_data_direction: flit((p + self.request_header()) / p),
            flit_reverse_direction: 0.0,
        }
    }

    /// A DMA read: completions of MPS bytes carry the data; requests go the other way.
    pub fn dma_read(&self) -> WireCost {
        let c = self.max_payload_bytes;
        let r = self.read_request_bytes;
        WireCost {
            data_direction: (c + self.framing_bytes + self.header_3dw_bytes) / c + self.dllp_per_tlp_bytes() / r,
            reverse_direction: (self.framing_bytes + self.request_header()) / r + self.dllp_per_tlp_bytes() / c,
            flit_data_direction: flit((c + self.header_3dw_bytes) / c),
            flit_reverse_direction: flit(self.request_header() / r),
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
    fn gen6_x16_posted_writes_are_charged_the_flit_once() {
        // 64 GT/s x 16 lanes / 8 = 128 GB/s raw; flits keep 236 of 256 bytes for TLPs; a 256 B
        // write with a 4-dword header is 272 TLP bytes: 128 x 236/256 x 256/272 = 111.06 GB/s.
        let link = peerpath_topo::Link::new(64.0, 16);
        let cost = m(256.0, true).posted_write();
        let payload = link.bytes_per_s().unwrap() / cost.on(true).0;
        assert!((payload - 128e9 * 236.0 / 256.0 * 256.0 / 272.0).abs() < 1e3, "{payload}");
        assert!((payload / 1e9 - 111.06).abs() < 0.01, "{payload}");
        // No DLLP crosses the other way: Acks ride in the DLP bytes of its flits.
        assert_eq!(cost.on(true).1, 0.0);
        // Gen5 x16 keeps its per-TLP framing and DLLPs: 64 x 128/130 x 256/280 GB/s.
        let gen5 = peerpath_topo::Link::new(32.0, 16).bytes_per_s().unwrap() / cost.on(false).0;
        assert!((gen5 - 64e9 * 128.0 / 130.0 * 256.0 / 280.0).abs() < 1e3, "{gen5}");
        // A DMA read's requests: header only, 512 B each, plus the DLP share.
        let r = m(256.0, true).dma_read().on(true);
        assert!((r.1 - 16.0 / 512.0 * 242.0 / 236.0).abs() < 1e-12 && (r.0 - 268.0 / 256.0 * 242.0 / 236.0).abs() < 1e-12);
    }

    #[test]
    fn smaller_payloads_and_wider_headers_cost_more() {
        assert!(m(128.0, false).posted_write_efficiency() < m(256.0, false).posted_write_efficiency());
        assert!(m(256.0, true).posted_write_efficiency() < m(256.0, false).posted_write_efficiency());
        let r = m(256.0, true).dma_read();
        assert!(r.data_direction > 1.0 && r.reverse_direction > 0.0);
    }
}
