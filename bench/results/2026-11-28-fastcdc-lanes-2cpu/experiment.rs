use std::time::Instant;
use fastcdc::v2020::{FastCDC, get_gear_with_seed, select_masks, Normalization};

struct Cutter { g: [u64; 256], min: usize, avg: usize, max: usize, ms: u64, ml: u64 }
const LANES: usize = 4;
const W: usize = 63;

impl Cutter {
    fn new(min: usize, avg: usize, max: usize) -> Self {
        let (gear, _) = get_gear_with_seed(0);
        let g: [u64; 256] = gear.as_ref().try_into().unwrap();
        let (ms, ml) = select_masks(avg, Normalization::Level1);
        Cutter { g, min, avg, max, ms, ml }
    }
    /// positions i in [from, to) where the 64-byte window hash & (ms & ml) == 0, with flags
    fn candidates(&self, d: &[u8], from: usize, to: usize, out: &mut Vec<(usize, u8)>) {
        let m = self.ms & self.ml;
        let g = &self.g;
        let n = (to - from) / LANES;
        let mut lanes: [Vec<usize>; LANES] = Default::default();
        let mut h = [0u64; LANES];
        for l in 0..LANES {
            let b = from + l * n;
            for &x in &d[b.saturating_sub(W)..b] { h[l] = (h[l] << 1).wrapping_add(g[x as usize]); }
        }
        let segs: [&[u8]; LANES] = std::array::from_fn(|l| &d[from + l * n..from + (l + 1) * n]);
        let mut j = 0;
        while j < n {
            j = scan(segs, g, m, &mut h, j);
            if j < n { for l in 0..LANES { if h[l] & m == 0 { lanes[l].push(from + l * n + j) } } j += 1; }
        }
        let h3 = h[LANES - 1];
        let mut t = h3;
        for i in from + LANES * n..to { t = (t << 1).wrapping_add(g[d[i] as usize]); if t & m == 0 { lanes[LANES - 1].push(i) } }
        // recompute flags: need W at each candidate
        for lane in lanes { for p in lane {
            let mut w = 0u64; for &x in &d[p.saturating_sub(W)..=p] { w = (w << 1).wrapping_add(g[x as usize]); }
            out.push((p, ((w & self.ms == 0) as u8) | (((w & self.ml == 0) as u8) << 1)));
        } }
    }
    fn cuts(&self, d: &[u8]) -> Vec<(usize, usize)> {
        let mut c = Vec::new();
        self.candidates(d, 0, d.len(), &mut c);
        let mut ci = 0;
        let mut out = Vec::new();
        let mut cs = 0;
        while cs < d.len() {
            let e = self.next(d, cs, &c, &mut ci);
            out.push((cs, e - cs));
            cs = e;
        }
        out
    }
    fn next(&self, d: &[u8], cs: usize, c: &[(usize, u8)], ci: &mut usize) -> usize {
        let remaining = d.len() - cs;
        if remaining <= self.min { return d.len(); }
        let mut center = self.avg; let mut rem = remaining;
        if rem > self.max { rem = self.max } else if rem < center { center = rem }
        let s = cs + (self.min & !1); let s_end = cs + (center & !1); let end = cs + (rem & !1);
        let cut = |i: usize| i;
        let mut h = 0u64;
        let serial_end = (s + W).min(end);
        for i in s..serial_end {
            h = (h << 1).wrapping_add(self.g[d[i] as usize]);
            let m = if i < s_end { self.ms } else { self.ml };
            if h & m == 0 { return cut(i); }
        }
        while *ci < c.len() && c[*ci].0 < serial_end { *ci += 1; }
        while *ci < c.len() && c[*ci].0 < end {
            let (p, f) = c[*ci];
            if (p < s_end && f & 1 != 0) || (p >= s_end && f & 2 != 0) { return cut(p); }
            *ci += 1;
        }
        cs + rem
    }
}

#[inline(never)]
fn scan(segs: [&[u8]; LANES], g: &[u64; 256], m: u64, h: &mut [u64; LANES], mut j: usize) -> usize {
    let [s0, s1, s2, s3] = segs;
    let n = s0.len();
    let (s1, s2, s3) = (&s1[..n], &s2[..n], &s3[..n]);
    let [mut h0, mut h1, mut h2, mut h3] = *h;
    while j < n {
        h0 = (h0 << 1).wrapping_add(g[s0[j] as usize]);
        h1 = (h1 << 1).wrapping_add(g[s1[j] as usize]);
        h2 = (h2 << 1).wrapping_add(g[s2[j] as usize]);
        h3 = (h3 << 1).wrapping_add(g[s3[j] as usize]);
        if (h0 & m) == 0 || (h1 & m) == 0 || (h2 & m) == 0 || (h3 & m) == 0 { break; }
        j += 1;
    }
    *h = [h0, h1, h2, h3];
    j
}


impl Cutter {
    fn cuts_w(&self, d: &[u8], win: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut cs = 0;
        let mut hits = Vec::new();
        while cs < d.len() {
            let e = self.next_w(d, cs, win, &mut hits);
            out.push((cs, e - cs));
            cs = e;
        }
        out
    }
    fn next_w(&self, d: &[u8], cs: usize, win: usize, hits: &mut Vec<(usize, u64)>) -> usize {
        let remaining = d.len() - cs;
        if remaining <= self.min { return d.len(); }
        let mut center = self.avg; let mut rem = remaining;
        if rem > self.max { rem = self.max } else if rem < center { center = rem }
        let s = cs + (self.min & !1); let s_end = cs + (center & !1); let end = cs + (rem & !1);
        let g = &self.g;
        let mut h = 0u64;
        let serial_end = (s + W).min(end);
        for i in s..serial_end {
            h = (h << 1).wrapping_add(g[d[i] as usize]);
            let m = if i < s_end { self.ms } else { self.ml };
            if h & m == 0 { return i; }
        }
        let m = self.ms & self.ml;
        let mut pos = serial_end;
        while pos < end {
            let wlen = win.min(end - pos);
            let n = wlen / LANES;
            hits.clear();
            let mut hl = [0u64; LANES];
            for l in 0..LANES {
                let b = pos + l * n;
                for &x in &d[b - W..b] { hl[l] = (hl[l] << 1).wrapping_add(g[x as usize]); }
            }
            let segs: [&[u8]; LANES] = std::array::from_fn(|l| &d[pos + l * n..pos + (l + 1) * n]);
            let mut j = 0;
            while j < n {
                j = scan(segs, g, m, &mut hl, j);
                if j < n { for l in 0..LANES { if hl[l] & m == 0 { hits.push((pos + l * n + j, hl[l])) } } j += 1; }
            }
            let mut t = hl[LANES - 1];
            for i in pos + LANES * n..pos + wlen { t = (t << 1).wrapping_add(g[d[i] as usize]); if t & m == 0 { hits.push((i, t)) } }
            hits.sort_unstable();
            for &(p, w) in hits.iter() {
                let mm = if p < s_end { self.ms } else { self.ml };
                if w & mm == 0 { return p; }
            }
            pos += wlen;
        }
        cs + rem
    }
}

fn rng(seed: &mut u64) -> u64 { *seed ^= *seed << 13; *seed ^= *seed >> 7; *seed ^= *seed << 17; *seed }

fn main() {
    if std::env::var("MICRO").is_ok() { micro8(); return; }
    let args: Vec<String> = std::env::args().collect();
    let mut s = 0x1234_5678_9abc_def1u64;
    // correctness
    for t in 0..400 {
        let len = (rng(&mut s) % 3_000_000) as usize;
        let mut d: Vec<u8> = (0..len).map(|_| rng(&mut s) as u8).collect();
        if t % 5 == 1 { for x in d.iter_mut() { *x &= 3; } }
        if t % 7 == 2 { let k = len / 3; for x in d[..k].iter_mut() { *x = 0; } }
        let min = 64 + 2 * (rng(&mut s) % 2000) as usize + (t % 3 == 0) as usize;
        let avg = (256usize << (rng(&mut s) % 6)).max(min);
        let max = (avg * (1 + (rng(&mut s) % 8) as usize)).max(1024);
        let a: Vec<(usize, usize)> = FastCDC::new(&d, min, avg, max).map(|c| (c.offset, c.length)).collect();
        let b = Cutter::new(min, avg, max).cuts(&d);
        assert_eq!(a, b, "t {t} len {len} {min} {avg} {max}");
        for win in [256, 1000, 8192] { let b = Cutter::new(min, avg, max).cuts_w(&d, win); assert_eq!(a, b, "w {win} t {t} len {len} {min} {avg} {max}"); }
    }
    eprintln!("equal");
    let mb: usize = args.get(1).map(|x| x.parse().unwrap()).unwrap_or(256);
    let d: Vec<u8> = (0..mb << 20).map(|_| rng(&mut s) as u8).collect();
    for _ in 0..3 {
        let t = Instant::now();
        let a: Vec<(usize, usize)> = FastCDC::new(&d, 16384, 65536, 262144).map(|c| (c.offset, c.length)).collect();
        let ta = t.elapsed().as_secs_f64();
        let cu = Cutter::new(16384, 65536, 262144);
        let t = Instant::now();
        let b = cu.cuts(&d);
        let tb = t.elapsed().as_secs_f64();
        let mut tw = vec![];
        for win in [4096, 8192, 16384, 32768] { let t = Instant::now(); let b = cu.cuts_w(&d, win); tw.push((win, d.len() as f64 / 1e9 / t.elapsed().as_secs_f64())); assert_eq!(a, b); }
        let tc = 1.0;
        assert_eq!(a, b);
        let gb = d.len() as f64 / 1e9;
        println!("crate {:.2} GB/s  lanes {:.2} GB/s windows {:.2?} chunks {} {tc}", gb / ta, gb / tb, tw, a.len());
    }
}
#[allow(dead_code)]
pub fn micro() {
    let mut s = 99u64;
    let d: Vec<u8> = (0..1 << 20).map(|_| rng(&mut s) as u8).collect();
    let (gear, _) = get_gear_with_seed(0);
    let g: [u64; 256] = gear.as_ref().try_into().unwrap();
    for size in [16usize << 10, 256 << 10, 1 << 20] {
        let n = size / 4;
        let segs: [&[u8]; 4] = std::array::from_fn(|l| &d[l * n..(l + 1) * n]);
        let t = Instant::now();
        let reps = (256 << 20) / size;
        let mut tot = 0;
        for _ in 0..reps { let mut h = [0u64; 4]; let mut j = 0; while j < n { j = scan(segs, &g, 0xffff_ffff_ffff, &mut h, j); j += 1; } tot += h[0]; }
        let el = t.elapsed().as_secs_f64();
        println!("size {size}: {:.2} GB/s ({tot})", (reps * size) as f64 / 1e9 / el);
    }
}
#[inline(never)]
pub fn scan8(segs: [&[u8]; 4], g: &[u64; 256], m: u64, h: &mut [u64; 4]) -> u64 {
    let [s0, s1, s2, s3] = segs;
    let n = s0.len() / 8;
    let [mut h0, mut h1, mut h2, mut h3] = *h;
    let mut hits = 0u64;
    let (c0, c1, c2, c3) = (s0.chunks_exact(8), s1.chunks_exact(8), s2.chunks_exact(8), s3.chunks_exact(8));
    for (((a, b), c), d) in c0.zip(c1).zip(c2).zip(c3).take(n) {
        let (mut a, mut b, mut c, mut d) = (u64::from_le_bytes(a.try_into().unwrap()), u64::from_le_bytes(b.try_into().unwrap()), u64::from_le_bytes(c.try_into().unwrap()), u64::from_le_bytes(d.try_into().unwrap()));
        for _ in 0..8 {
            h0 = (h0 << 1).wrapping_add(g[(a & 255) as usize]); a >>= 8;
            h1 = (h1 << 1).wrapping_add(g[(b & 255) as usize]); b >>= 8;
            h2 = (h2 << 1).wrapping_add(g[(c & 255) as usize]); c >>= 8;
            h3 = (h3 << 1).wrapping_add(g[(d & 255) as usize]); d >>= 8;
            if (h0 & m) == 0 || (h1 & m) == 0 || (h2 & m) == 0 || (h3 & m) == 0 { hits += 1; }
        }
    }
    *h = [h0, h1, h2, h3];
    hits
}
pub fn micro8() {
    let mut s = 99u64;
    let d: Vec<u8> = (0..1 << 20).map(|_| rng(&mut s) as u8).collect();
    let (gear, _) = get_gear_with_seed(0);
    let g: [u64; 256] = gear.as_ref().try_into().unwrap();
    for size in [16usize << 10, 1 << 20] {
        let n = size / 4;
        let segs: [&[u8]; 4] = std::array::from_fn(|l| &d[l * n..(l + 1) * n]);
        let reps = (256 << 20) / size;
        let t = Instant::now();
        let mut tot = 0;
        for _ in 0..reps { let mut h = [0u64; 4]; tot += scan8(segs, &g, 0xffff_ffff_ffff, &mut h); }
        let el = t.elapsed().as_secs_f64();
        println!("scan8 size {size}: {:.2} GB/s ({tot})", (reps * size) as f64 / 1e9 / el);
        let t = Instant::now();
        for _ in 0..reps { let mut h = [0u64; 4]; let mut j = 0; while j < n { j = scan(segs, &g, 0xffff_ffff_ffff, &mut h, j); j += 1; } tot += h[0]; }
        let el = t.elapsed().as_secs_f64();
        println!("scan  size {size}: {:.2} GB/s ({tot})", (reps * size) as f64 / 1e9 / el);
        let t = Instant::now();
        for _ in 0..reps { tot += FastCDC::new(&d[..size], 64, 256<<10, 1<<20).count() as u64; }
        let el = t.elapsed().as_secs_f64();
        println!("crate size {size}: {:.2} GB/s ({tot})", (reps * size) as f64 / 1e9 / el);
    }
}
