//! The chart: time per message per scenario and backend, log scale, one
//! panel per group. Each backend is a dot (no line joins scenarios, which are
//! unrelated), dodged sideways within its scenario; colours come from the
//! Okabe–Ito palette (distinguishable with the common colour-vision
//! deficiencies) and the marker shape tells messageframe (circle), its peers
//! (triangle) and the floors (cross: black the same-wire floor, grey the
//! flat one) apart.

use std::path::Path;

use plotters::prelude::*;

use crate::backends::{Format, Group, CBOR, FAST_JSON};
use crate::report::Report;

#[derive(Clone, Copy)]
enum Shape {
    Circle,
    Triangle,
    Cross,
}

/// Series drawn in each panel: (format, colour, shape).
const SERIES: [(Format, RGBColor, Shape); 10] = [
    (Format::Mf, RGBColor(0, 114, 178), Shape::Circle),
    (Format::MfView, RGBColor(86, 180, 233), Shape::Circle),
    (Format::MfSet, RGBColor(0, 158, 115), Shape::Circle),
    (Format::Prost, RGBColor(230, 159, 0), Shape::Triangle),
    (Format::SerdeJson, RGBColor(213, 94, 0), Shape::Triangle),
    (FAST_JSON, RGBColor(204, 121, 167), Shape::Triangle),
    (CBOR, RGBColor(160, 140, 0), Shape::Triangle),
    (Format::Flexbuffers, RGBColor(120, 72, 40), Shape::Triangle),
    (Format::RmpWire, RGBColor(0, 0, 0), Shape::Cross),
    (Format::RmpBorrowed, RGBColor(140, 140, 140), Shape::Cross),
];

/// The chart of `report` as SVG text.
///
/// # Errors
///
/// When there is nothing to draw or plotters fails.
pub fn svg(report: &Report) -> Result<String, String> {
    let scenarios: Vec<_> = report
        .scenarios
        .iter()
        .filter(|s| s.hint.is_none())
        .collect();
    let values = || {
        scenarios
            .iter()
            .flat_map(|s| {
                Group::ALL
                    .into_iter()
                    .flat_map(move |g| SERIES.iter().filter_map(move |(f, _, _)| s.backend(g, *f)))
            })
            .map(|b| b.total_us.max(1e-3))
    };
    let (lo, hi) = values().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return Err("no results to plot".into());
    }
    let m = &report.meta;
    let mut title = format!(
        "Time per message, µs (log scale) — {}, commit {}{}, {}",
        m.cpu,
        m.commit,
        if m.dirty { " (dirty)" } else { "" },
        m.date
    );
    if m.quick {
        title.push_str(" — QUICK RUN (iterations ÷ 100): not figures to quote");
    }
    let labels: Vec<String> = scenarios
        .iter()
        .map(|s| {
            if s.name == "telemetry" {
                "telemetry".to_owned()
            } else if s.attachment_bytes >= 1 << 20 {
                format!("{} + 1 MiB", s.params)
            } else {
                format!("{} params", s.params)
            }
        })
        .collect();
    let n = scenarios.len();
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (1200, 1150)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let root = root.titled(&title, ("sans-serif", 17)).map_err(e)?;
        let panels = root.split_evenly((2, 1));
        for (panel, g) in panels.iter().zip(Group::ALL) {
            let caption = match g {
                Group::Reused => "reused: each library in its best reuse mode",
                Group::Fresh => {
                    "fresh: a new message, output buffer and decoded value every iteration"
                }
            };
            let mut chart = ChartBuilder::on(panel)
                .caption(caption, ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(30)
                .y_label_area_size(70)
                .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo / 2.0..hi * 2.0).log_scale())
                .map_err(e)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(n)
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < labels.len() {
                        labels[i as usize].clone()
                    } else {
                        String::new()
                    }
                })
                .y_desc("µs per message")
                .draw()
                .map_err(e)?;
            // Thin separators between scenarios.
            for i in 1..n {
                let x = i as f64 - 0.5;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, lo / 2.0), (x, hi * 2.0)],
                        RGBColor(220, 220, 220).stroke_width(1),
                    )))
                    .map_err(e)?;
            }
            let k = SERIES.len() as f64;
            for (i, &(f, color, shape)) in SERIES.iter().enumerate() {
                let dx = (i as f64 - (k - 1.0) / 2.0) * 0.8 / k;
                let pts: Vec<(f64, f64)> = scenarios
                    .iter()
                    .enumerate()
                    .filter_map(|(x, s)| {
                        s.backend(g, f)
                            .map(|b| (x as f64 + dx, b.total_us.max(1e-3)))
                    })
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                let (c, w) = (color.filled(), color.stroke_width(2));
                let anno = match shape {
                    Shape::Circle => chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 5, c)))
                        .map_err(e)?
                        .legend(move |(x, y)| Circle::new((x + 8, y), 5, c)),
                    Shape::Triangle => chart
                        .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 6, c)))
                        .map_err(e)?
                        .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 6, c)),
                    Shape::Cross => chart
                        .draw_series(pts.iter().map(|&p| Cross::new(p, 5, w)))
                        .map_err(e)?
                        .legend(move |(x, y)| Cross::new((x + 8, y), 5, w)),
                };
                anno.label(f.label());
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .draw()
                .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(out)
}

/// Writes the chart of `report` to `path` (SVG).
///
/// # Errors
///
/// As [`svg`], or when the file cannot be written.
pub fn write_svg(path: &Path, report: &Report) -> Result<(), String> {
    let text = svg(report)?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
