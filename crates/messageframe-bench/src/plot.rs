//! The chart: time per message per scenario and backend, log scale.

use std::path::Path;

use plotters::prelude::*;

use crate::backends::BackendKind;
use crate::runner::ScenarioResult;

/// Series drawn: (label, from the hint scenario?, backend, colour, width).
/// messageframe's rows are drawn thicker; the floors in greys. The shared
/// rows run only with the attachment: one point each.
const SERIES: [(&str, bool, BackendKind, RGBColor, u32); 11] = [
    (
        "messageframe",
        false,
        BackendKind::Mf,
        RGBColor(31, 119, 180),
        3,
    ),
    (
        "messageframe view",
        false,
        BackendKind::MfView,
        RGBColor(44, 160, 44),
        3,
    ),
    (
        "messageframe fresh frames",
        false,
        BackendKind::MfFresh,
        RGBColor(23, 160, 180),
        2,
    ),
    (
        "messageframe fresh + hint",
        true,
        BackendKind::MfFresh,
        RGBColor(148, 103, 189),
        2,
    ),
    (
        "messageframe, attachment shared (1 MiB only)",
        false,
        BackendKind::MfShared,
        RGBColor(0, 60, 140),
        3,
    ),
    (
        "prost",
        false,
        BackendKind::Prost,
        RGBColor(255, 127, 14),
        2,
    ),
    (
        "prost, attachment shared (1 MiB only)",
        false,
        BackendKind::ProstShared,
        RGBColor(180, 80, 0),
        2,
    ),
    (
        "serde_json",
        false,
        BackendKind::Json,
        RGBColor(214, 39, 40),
        2,
    ),
    (
        "rmpv Value (floor)",
        false,
        BackendKind::RmpvValue,
        RGBColor(140, 140, 140),
        1,
    ),
    (
        "rmp hand-rolled (floor)",
        false,
        BackendKind::RmpHand,
        RGBColor(60, 60, 60),
        1,
    ),
    (
        "rmpv ValueRef (floor)",
        false,
        BackendKind::RmpvRef,
        RGBColor(160, 150, 40),
        1,
    ),
];

/// A series ready to draw: label, colour, line width, points.
type Series = (&'static str, RGBColor, u32, Vec<(f64, f64)>);

/// Writes the chart as SVG.
///
/// # Errors
///
/// When the file cannot be written or there is nothing to draw.
pub fn write_svg(path: &Path, scenarios: &[ScenarioResult], subtitle: &str) -> Result<(), String> {
    // One x position per (params, attachment) group, in table order; hint
    // scenarios share their base scenario's position.
    let mut groups: Vec<(usize, usize, String)> = Vec::new();
    for s in scenarios {
        if !groups
            .iter()
            .any(|(p, a, _)| *p == s.params && *a == s.attachment_bytes)
        {
            let label = if s.attachment_bytes > 0 {
                format!("{} + 1 MiB", s.params)
            } else {
                format!("{} params", s.params)
            };
            groups.push((s.params, s.attachment_bytes, label));
        }
    }
    let mut series: Vec<Series> = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for (label, hint, kind, color, width) in SERIES {
        let pts: Vec<(f64, f64)> = groups
            .iter()
            .enumerate()
            .filter_map(|(x, (p, a, _))| {
                scenarios
                    .iter()
                    .find(|s| {
                        s.params == *p && s.attachment_bytes == *a && s.hint.is_some() == hint
                    })
                    .and_then(|s| s.backend(kind))
                    .map(|b| (x as f64, b.total_us.max(1e-3)))
            })
            .collect();
        for &(_, y) in &pts {
            lo = lo.min(y);
            hi = hi.max(y);
        }
        if !pts.is_empty() {
            series.push((label, color, width, pts));
        }
    }
    if series.is_empty() {
        return Err("no results to plot".into());
    }
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    let root = SVGBackend::new(path, (1100, 650)).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let n = groups.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Time per message, µs (log scale): {subtitle}"),
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo / 2.0..hi * 2.0).log_scale())
        .map_err(e)?;
    let labels: Vec<String> = groups.iter().map(|g| g.2.clone()).collect();
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
    for &(label, color, width, ref pts) in &series {
        chart
            .draw_series(LineSeries::new(
                pts.iter().copied(),
                color.stroke_width(width),
            ))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
            });
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}
