//! SVG plot of a sweep: throughput and host memory traffic (Gb/s, left axis), host CPU (%,
//! right axis) against the varied parameter; a dashed line where the bottleneck moves, labelled
//! with the new one. No dependencies.

use std::fmt::Write as _;

use crate::sweep::{figure, kind_of, Sweep};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn nice_max(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if x <= m * p {
            return m * p;
        }
    }
    10.0 * p
}

pub fn render(sw: &Sweep) -> String {
    let (w, h) = (860.0, 480.0);
    let (l, r, t, b) = (70.0, 70.0, 60.0, 120.0);
    let pw = w - l - r;
    let ph = h - t - b;
    let ymax = nice_max(sw.points.iter().map(|p| p.throughput_gbit_per_s.max(p.host_memory_gbit_per_s)).fold(0.0, f64::max) * 1.05);
    let cmax = nice_max((sw.points.iter().map(|p| p.host_cpu_share * 100.0).fold(0.0, f64::max) * 1.05).max(1.0)).min(100.0);
    // The x axis is the parameter's own scale (csp=1,2,12 are not evenly spaced): each point
    // at its value, the sweep's values in increasing order (`Vary::parse`).
    let (vmin, vmax) = (sw.points.iter().map(|p| p.value).min().unwrap_or(0), sw.points.iter().map(|p| p.value).max().unwrap_or(0));
    let x = |i: usize| if vmax == vmin { l + pw / 2.0 } else { l + pw * f64::from(sw.points[i].value - vmin) / f64::from(vmax - vmin) };
    let y = |v: f64| t + ph - ph * v / ymax;
    let yc = |v: f64| t + ph - ph * v / cmax;
    let mut s = String::new();
    let _ = writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#);
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{l}" y="22" font-size="15" font-weight="bold">{} varied: {} ({})</text>"#, sw.param.name(), esc(&sw.job), sw.label);
    let _ = writeln!(s, r##"<text x="{l}" y="40" fill="#555">{}</text>"##, esc(&sw.machine));
    // Axes and grid.
    for k in 0..=5 {
        let v = ymax * k as f64 / 5.0;
        let yy = y(v);
        let _ = writeln!(s, r##"<line x1="{l}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e5e5e5"/>"##, l + pw);
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, l - 6.0, yy + 4.0, fmt_tick(v, ymax / 5.0));
        let c = cmax * k as f64 / 5.0;
        let _ = writeln!(s, r##"<text x="{:.1}" y="{:.1}" fill="#b35900">{}%</text>"##, l + pw + 6.0, yc(c) + 4.0, fmt_tick(c, cmax / 5.0));
    }
    let _ = writeln!(s, r#"<line x1="{l}" y1="{t}" x2="{l}" y2="{:.1}" stroke="black"/>"#, t + ph);
    let _ = writeln!(s, r#"<line x1="{l}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="black"/>"#, t + ph, l + pw, t + ph);
    let _ = writeln!(s, r#"<text x="18" y="{:.1}" transform="rotate(-90 18 {:.1})" text-anchor="middle">Gb/s</text>"#, t + ph / 2.0, t + ph / 2.0);
    // A value's label where it does not run into the one before it.
    let mut last_label = f64::NEG_INFINITY;
    for (i, p) in sw.points.iter().enumerate() {
        if x(i) - last_label >= 32.0 {
            let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, x(i), t + ph + 16.0, p.value);
            last_label = x(i);
        }
    }
    let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, l + pw / 2.0, t + ph + 34.0, sw.param.name());
    // Bottleneck moves.
    let mut label_row = 0;
    for (i, p) in sw.points.iter().enumerate() {
        if p.bottleneck_moved {
            let xm = (x(i) + x(i.saturating_sub(1))) / 2.0;
            let _ = writeln!(s, r##"<line x1="{xm:.1}" y1="{t}" x2="{xm:.1}" y2="{:.1}" stroke="#c00" stroke-dasharray="5,4"/>"##, t + ph);
            let ly = t + ph + 52.0 + 16.0 * (label_row % 4) as f64;
            let _ = writeln!(s, r##"<text x="{xm:.1}" y="{ly:.1}" fill="#c00">at {}: {}</text>"##, p.value, esc(&kind_of(&p.bottleneck)));
            label_row += 1;
        }
    }
    if let Some(p0) = sw.points.first() {
        let _ = writeln!(s, r##"<text x="{l}" y="{:.1}" fill="#c00">first bottleneck: {}</text>"##, h - 8.0, esc(&p0.bottleneck));
    }
    let poly = |f: &dyn Fn(usize) -> f64| -> String { (0..sw.points.len()).map(|i| format!("{:.1},{:.1}", x(i), f(i))).collect::<Vec<_>>().join(" ") };
    let pts = &sw.points;
    let _ = writeln!(s, r##"<polyline fill="none" stroke="#1f5fbf" stroke-width="2.5" points="{}"/>"##, poly(&|i| y(pts[i].throughput_gbit_per_s)));
    let _ = writeln!(s, r##"<polyline fill="none" stroke="#2a9d4b" stroke-width="2" stroke-dasharray="6,3" points="{}"/>"##, poly(&|i| y(pts[i].host_memory_gbit_per_s)));
    let _ = writeln!(s, r##"<polyline fill="none" stroke="#b35900" stroke-width="1.5" points="{}"/>"##, poly(&|i| yc(pts[i].host_cpu_share * 100.0)));
    for (i, p) in pts.iter().enumerate() {
        // The table's figures (`Sweep::render`), as many digits as it gives them.
        let _ = writeln!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#1f5fbf"><title>{} = {}: {} Gb/s, host CPU {}%, host memory {} Gb/s, {}</title></circle>"##,
            x(i),
            y(p.throughput_gbit_per_s),
            sw.param.name(),
            p.value,
            figure(p.throughput_gbit_per_s, 1),
            figure(p.host_cpu_share * 100.0, 1),
            figure(p.host_memory_gbit_per_s, 2),
            esc(&p.bottleneck)
        );
    }
    // Legend.
    let lx = l + 10.0;
    let _ = writeln!(s, r##"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#1f5fbf" stroke-width="2.5"/><text x="{:.1}" y="{:.1}">throughput (Gb/s)</text>"##, t + 10.0, lx + 24.0, t + 10.0, lx + 30.0, t + 14.0);
    let _ = writeln!(s, r##"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#2a9d4b" stroke-width="2" stroke-dasharray="6,3"/><text x="{:.1}" y="{:.1}">host memory (Gb/s)</text>"##, t + 26.0, lx + 24.0, t + 26.0, lx + 30.0, t + 30.0);
    let _ = writeln!(s, r##"<line x1="{lx}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#b35900" stroke-width="1.5"/><text x="{:.1}" y="{:.1}">host CPU (%, right axis)</text>"##, t + 42.0, lx + 24.0, t + 42.0, lx + 30.0, t + 46.0);
    s.push_str("</svg>\n");
    s
}

/// A tick's label with as many decimals as the tick step needs (steps from [`nice_max`] have
/// one significant digit), trailing zeros dropped: a slow sweep's axis read "0.0" at every tick
/// when one decimal was all it had.
fn fmt_tick(v: f64, step: f64) -> String {
    let decimals = if step > 0.0 { (-step.log10()).ceil().max(0.0) as usize } else { 0 };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(max: f64) -> Vec<String> {
        let ymax = nice_max(max);
        (0..=5).map(|k| fmt_tick(ymax * k as f64 / 5.0, ymax / 5.0)).collect()
    }

    #[test]
    fn ticks_of_a_slow_sweep_differ() {
        assert_eq!(ticks(0.23), ["0", "0.05", "0.1", "0.15", "0.2", "0.25"]);
        assert_eq!(ticks(0.0031), ["0", "0.001", "0.002", "0.003", "0.004", "0.005"]);
        assert_eq!(ticks(0.19), ["0", "0.04", "0.08", "0.12", "0.16", "0.2"]);
    }

    #[test]
    fn ticks_of_a_usual_sweep_are_as_they_were() {
        assert_eq!(ticks(2.4), ["0", "0.5", "1", "1.5", "2", "2.5"]);
        assert_eq!(ticks(0.9), ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(ticks(180.0), ["0", "40", "80", "120", "160", "200"]);
        assert_eq!(ticks(2300.0), ["0", "500", "1000", "1500", "2000", "2500"]);
    }

    /// A point's tooltip reads as the table's row: it printed one decimal ("0.0 Gb/s" for a
    /// slow point; 2.35 Gb/s of host memory, which the table gives, left out).
    #[test]
    fn tooltips_carry_the_tables_figures() {
        use crate::sweep::{Param, Point};
        let point = |value, gbit: f64, cpu: f64, memory: f64| Point {
            value,
            throughput_gbit_per_s: gbit,
            host_cpu_share: cpu,
            host_memory_gbit_per_s: memory,
            bottleneck: "flash reads of ssd0".into(),
            bottleneck_moved: false,
            notes: Vec::new(),
        };
        let sw = Sweep {
            label: crate::LABEL,
            machine: "m".into(),
            job: "j".into(),
            param: Param::Ssd,
            points: vec![point(1, 0.0123, 0.0004, 0.00456), point(2, 12.34, 0.125, 2.345)],
            skipped: Vec::new(),
        };
        // value, Gb/s, host CPU %, host memory Gb/s: as the table prints them.
        let figures = [["1", "1.230e-2", "4.000e-2", "4.560e-3"], ["2", "12.3", "12.5", "2.35"]];
        let plot = render(&sw);
        let titles: Vec<&str> = plot.lines().filter_map(|l| l.split("<title>").nth(1)?.split("</title>").next()).collect();
        let table = sw.render();
        for (title, [v, gbit, cpu, memory]) in titles.iter().zip(figures) {
            assert_eq!(*title, format!("ssd = {v}: {gbit} Gb/s, host CPU {cpu}%, host memory {memory} Gb/s, flash reads of ssd0"));
            let row = format!("{cpu}%");
            assert!(table.lines().any(|l| l.split_whitespace().take(4).eq([v, gbit, &row, memory])), "{title}\n{table}");
        }
        assert_eq!(titles.len(), 2, "{plot}");
    }
}
