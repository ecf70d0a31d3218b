//! The run's results: markdown tables in the layout of the seed, the JSON
//! document (schema in docs/performance.md), and the targets of issue 5.

use std::fmt::Write as _;

use serde::Serialize;

use crate::backends::BackendKind;
use crate::runner::{AllocPerOp, BackendResult, OrderResult, ScenarioResult};

/// How and where the run was made.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// Identifies this JSON layout.
    pub schema: &'static str,
    /// The command line.
    pub command: String,
    /// UTC date and time of the run.
    pub date: String,
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu: String,
    /// `rustc --version` of the compiler that built the harness.
    pub rustc: String,
    /// `release` or `debug`.
    pub profile: &'static str,
    /// `--quick`: iterations divided by 100.
    pub quick: bool,
    /// Passes per measurement; the minimum is reported.
    pub passes: u32,
    /// Cost of one clock read (ns), subtracted from each phase.
    pub timer_overhead_ns: f64,
}

/// One target of issue 5, judged on this run.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// What is required.
    pub requirement: String,
    /// The figure measured (and the limit).
    pub figure: String,
    /// Whether the figure meets the requirement.
    pub met: bool,
}

/// Everything a crossbench run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Run metadata.
    pub meta: Meta,
    /// The cross-format scenarios (SPEC 5.2).
    pub scenarios: Vec<ScenarioResult>,
    /// The Order comparison (SPEC 5.3).
    pub order: Vec<OrderResult>,
    /// Finding the last key of a 1,024-parameter frame, ns (cross-check; the
    /// criterion bench is authoritative).
    pub find_last_1024_ns: Option<f64>,
    /// The targets, judged on this run.
    pub targets: Vec<Target>,
}

/// Formats a time in µs the way the seed's tables do.
#[must_use]
pub fn fmt_us(us: f64) -> String {
    if us >= 1000.0 {
        thousands(us.round() as u64)
    } else if us >= 100.0 {
        format!("{us:.1}")
    } else if us >= 0.1 || us == 0.0 {
        format!("{us:.2}")
    } else {
        format!("{us:.3}")
    }
}

/// `1234567` as `1,234,567`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}x")
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

fn fmt_count(x: f64) -> String {
    if (x - x.round()).abs() < 0.005 {
        thousands(x.round() as u64)
    } else {
        format!("{x:.2}")
    }
}

fn fmt_alloc(a: &AllocPerOp) -> String {
    format!("{} / {}", fmt_count(a.count), fmt_count(a.bytes))
}

/// Rows of the headline tables: one per parameter count and attachment,
/// the hint scenario folded into its base row.
struct Row<'a> {
    title: String,
    base: Option<&'a ScenarioResult>,
    hint: Option<&'a ScenarioResult>,
}

fn row_title(s: &ScenarioResult) -> String {
    if s.attachment_bytes > 0 {
        format!("{} params + 1 MiB", thousands(s.params as u64))
    } else {
        format!("{} params", thousands(s.params as u64))
    }
}

fn rows(scenarios: &[ScenarioResult]) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = Vec::new();
    for s in scenarios {
        let title = row_title(s);
        let row = match rows.iter_mut().position(|r| r.title == title) {
            Some(i) => &mut rows[i],
            None => {
                rows.push(Row {
                    title,
                    base: None,
                    hint: None,
                });
                rows.last_mut().expect("just pushed")
            }
        };
        if s.hint.is_some() {
            row.hint = Some(s);
        } else {
            row.base = Some(s);
        }
    }
    rows
}

impl Row<'_> {
    fn get(&self, kind: BackendKind) -> Option<&BackendResult> {
        self.base.and_then(|s| s.backend(kind))
    }
    fn get_hint(&self, kind: BackendKind) -> Option<&BackendResult> {
        self.hint.and_then(|s| s.backend(kind))
    }
}

const HEADLINE: [(BackendKind, &str); 8] = [
    (BackendKind::Mf, "messageframe"),
    (BackendKind::MfView, "mf view"),
    (BackendKind::MfFresh, "mf fresh frames"),
    (BackendKind::Prost, "prost"),
    (BackendKind::Json, "serde_json"),
    (BackendKind::RmpvValue, "rmpv Value*"),
    (BackendKind::RmpHand, "rmp hand-rolled*"),
    (BackendKind::RmpvRef, "rmpv ValueRef*"),
];

/// The footnote of the shared-attachment rows.
const SHARED_NOTE: &str = "\n† the attachment shared instead of copied, where the backend can: \
messageframe `add_attachment(name, Bytes)` and `decode_shared_into` (the attachment is a slice \
of the receive buffer), prost generated with `Config::bytes` and decoded from `Bytes`; \
serde_json cannot share (base64), rmpv `ValueRef` borrows in every row. In the ratio \
table's † row, messageframe's shared row is compared with prost's shared row and with the \
other peers' own rows.\n";

/// The attachment scenario, if it ran with the shared-attachment backend.
fn shared_scenario(scenarios: &[ScenarioResult]) -> Option<&ScenarioResult> {
    scenarios
        .iter()
        .find(|s| s.attachment_bytes > 0 && s.backend(BackendKind::MfShared).is_some())
}

fn shared_title(s: &ScenarioResult) -> String {
    format!("{}, shared†", row_title(s))
}

fn cell(b: Option<&BackendResult>) -> String {
    b.map_or_else(|| "—".to_owned(), |b| fmt_us(b.total_us))
}

impl Report {
    /// The headline table: time per message (µs), one row per scenario.
    #[must_use]
    pub fn headline_table(&self) -> String {
        let mut t = String::new();
        t.push_str("| Scenario | messageframe | mf view | mf fresh frames | mf fresh + hint | prost | serde_json | rmpv Value* | rmp hand-rolled* | rmpv ValueRef* |\n");
        t.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in rows(&self.scenarios) {
            let _ = write!(t, "| {} ", r.title);
            for (kind, _) in HEADLINE {
                let _ = write!(t, "| {} ", cell(r.get(kind)));
                // The hint column follows the fresh-frames one.
                if kind == BackendKind::MfFresh {
                    let _ = write!(t, "| {} ", cell(r.get_hint(BackendKind::MfFresh)));
                }
            }
            t.push_str("|\n");
        }
        if let Some(s) = shared_scenario(&self.scenarios) {
            // The attachment shared instead of copied, where the backend can.
            let _ = write!(t, "| {} ", shared_title(s));
            for (kind, _) in HEADLINE {
                let shown = match kind {
                    BackendKind::Mf => Some(BackendKind::MfShared),
                    BackendKind::Prost => Some(BackendKind::ProstShared),
                    BackendKind::Json | BackendKind::RmpvRef => Some(kind),
                    _ => None,
                };
                let _ = write!(t, "| {} ", cell(shown.and_then(|k| s.backend(k))));
                if kind == BackendKind::MfFresh {
                    t.push_str("| — ");
                }
            }
            t.push_str("|\n");
        }
        t
    }

    /// The full markdown report.
    #[must_use]
    pub fn markdown(&self) -> String {
        let m = &self.meta;
        let mut out = String::new();
        let _ = writeln!(out, "# messageframe crossbench\n");
        let _ = writeln!(
            out,
            "`{}` — {} — {} — {} build — {}{} — every time is the **minimum of {} passes**; \
             clock read cost {:.1} ns (subtracted from each phase).\n",
            m.command,
            m.cpu,
            m.rustc,
            m.profile,
            m.date,
            if m.quick {
                " — **--quick: iterations / 100, smoke test only**"
            } else {
                ""
            },
            m.passes,
            m.timer_overhead_ns
        );
        if !self.scenarios.is_empty() {
            self.write_scenarios(&mut out);
        }
        if !self.order.is_empty() {
            self.write_order(&mut out);
        }
        if !self.targets.is_empty() {
            let _ = writeln!(out, "## Targets (issue 5)\n");
            out.push_str("| Target | Figure in this run | Met |\n|---|---|---|\n");
            for t in &self.targets {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    t.requirement,
                    t.figure,
                    if t.met { "met" } else { "**missed**" }
                );
            }
            out.push('\n');
        }
        out
    }

    fn write_scenarios(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Time per message (µs): add + serialize + deserialize, min of {} passes\n",
            self.meta.passes
        );
        out.push_str(&self.headline_table());
        out.push_str(
            "\n\\* raw MessagePack floor: no header, no typed values, no two-part keys, \
             no in-memory document (its add phase is empty).\n",
        );
        if shared_scenario(&self.scenarios).is_some() {
            out.push_str(SHARED_NOTE);
        }
        out.push('\n');

        let _ = writeln!(
            out,
            "## Ratios: peer time ÷ messageframe time (above 1: messageframe is faster)\n"
        );
        out.push_str("| Scenario | vs prost | vs serde_json | vs rmpv Value | vs rmp hand-rolled | view vs rmpv ValueRef | fresh frames vs prost |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
        for r in rows(&self.scenarios) {
            let ratio = |peer: BackendKind, ours: BackendKind| match (r.get(peer), r.get(ours)) {
                (Some(p), Some(o)) if o.total_us > 0.0 => fmt_ratio(p.total_us / o.total_us),
                _ => "—".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.title,
                ratio(BackendKind::Prost, BackendKind::Mf),
                ratio(BackendKind::Json, BackendKind::Mf),
                ratio(BackendKind::RmpvValue, BackendKind::Mf),
                ratio(BackendKind::RmpHand, BackendKind::Mf),
                ratio(BackendKind::RmpvRef, BackendKind::MfView),
                ratio(BackendKind::Prost, BackendKind::MfFresh),
            );
        }
        if let Some(s) = shared_scenario(&self.scenarios) {
            let ratio =
                |peer: BackendKind| match (s.backend(peer), s.backend(BackendKind::MfShared)) {
                    (Some(p), Some(o)) if o.total_us > 0.0 => fmt_ratio(p.total_us / o.total_us),
                    _ => "—".to_owned(),
                };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | — | — |",
                shared_title(s),
                ratio(BackendKind::ProstShared),
                ratio(BackendKind::Json),
                ratio(BackendKind::RmpvValue),
                ratio(BackendKind::RmpHand),
            );
        }
        out.push('\n');

        let _ = writeln!(
            out,
            "## Per-phase breakdown (µs per message) and heap allocations per message (count / bytes)\n"
        );
        out.push_str("| Scenario | Backend | add | serialize | deserialize | total | allocs add | allocs serialize | allocs deserialize |\n");
        out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for s in &self.scenarios {
            for b in &s.backends {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    s.title,
                    b.label,
                    fmt_us(b.add_us),
                    fmt_us(b.serialize_us),
                    fmt_us(b.deserialize_us),
                    fmt_us(b.total_us),
                    fmt_alloc(&b.allocs.add),
                    fmt_alloc(&b.allocs.serialize),
                    fmt_alloc(&b.allocs.deserialize),
                );
            }
        }
        out.push_str(
            "\nPhases are timed in a separate loop that reads the clock between phases; \
             the total is timed around a loop without those reads, so phases may not add up \
             to it exactly. Allocations are counted in a third loop, after warm-up (steady state).\n\n",
        );
        if let Some(s) = self.scenarios.iter().find(|s| s.memcpy_us.is_some()) {
            if let (Some(mc), Some(mf)) = (s.memcpy_us, s.backend(BackendKind::Mf)) {
                let _ = writeln!(
                    out,
                    "One 1 MiB memcpy into a reused buffer in this run: {} µs; messageframe's serialize: {} µs ({:.2}x).\n",
                    fmt_us(mc),
                    fmt_us(mf.serialize_us),
                    mf.serialize_us / mc
                );
            }
        }

        let _ = writeln!(out, "## Wire size, bytes (zstd level 3 in parentheses)\n");
        out.push_str("| Scenario | messageframe | prost | serde_json | raw MessagePack (rmp) |\n|---|---:|---:|---:|---:|\n");
        for r in rows(&self.scenarios) {
            let size = |k: BackendKind| {
                r.get(k).or_else(|| r.get_hint(k)).map_or_else(
                    || "—".to_owned(),
                    |b| {
                        format!(
                            "{} ({})",
                            thousands(b.wire_bytes as u64),
                            thousands(b.zstd_bytes as u64)
                        )
                    },
                )
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                r.title,
                size(BackendKind::Mf),
                size(BackendKind::Prost),
                size(BackendKind::Json),
                size(BackendKind::RmpvValue),
            );
        }
        out.push('\n');
    }

    fn write_order(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Typed record: the Order message (ns per operation, min of {} passes; allocations per operation)\n",
            self.meta.passes
        );
        out.push_str("| items | format | bytes | zstd | encode ns | B/op | allocs | decode ns | B/op | allocs |\n");
        out.push_str("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for o in &self.order {
            for b in &o.backends {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    o.items,
                    b.label,
                    thousands(b.bytes as u64),
                    thousands(b.zstd_bytes as u64),
                    thousands(b.encode_ns.round() as u64),
                    fmt_count(b.encode_allocs.bytes),
                    fmt_count(b.encode_allocs.count),
                    thousands(b.decode_ns.round() as u64),
                    fmt_count(b.decode_allocs.bytes),
                    fmt_count(b.decode_allocs.count),
                );
            }
        }
        out.push('\n');
    }
}

/// The peer figure for a scenario: from the scenario itself, or, for a hint
/// scenario (which runs only messageframe), from the scenario with the same
/// parameters and attachment and no hint.
fn peer<'a>(
    all: &'a [ScenarioResult],
    s: &'a ScenarioResult,
    kind: BackendKind,
) -> Option<&'a BackendResult> {
    s.backend(kind).or_else(|| {
        all.iter()
            .find(|o| {
                o.hint.is_none() && o.params == s.params && o.attachment_bytes == s.attachment_bytes
            })
            .and_then(|o| o.backend(kind))
    })
}

/// Judges the targets of issue 5 on what this run measured.
#[must_use]
pub fn judge_targets(scenarios: &[ScenarioResult], find_last_ns: Option<f64>) -> Vec<Target> {
    let mut t = Vec::new();
    let params_scenarios = || scenarios.iter().filter(|s| s.attachment_bytes == 0);
    let mut push = |requirement: String, figure: String, met: bool| {
        t.push(Target {
            requirement,
            figure,
            met,
        });
    };

    for s in params_scenarios() {
        let (Some(mf), Some(rv)) = (
            s.backend(BackendKind::Mf),
            peer(scenarios, s, BackendKind::RmpvValue),
        ) else {
            continue;
        };
        let r = mf.total_us / rv.total_us;
        push(
            format!("{}: owned round trip ≤ 0.6x rmpv Value", s.title),
            format!(
                "{} / {} µs = {r:.2}x",
                fmt_us(mf.total_us),
                fmt_us(rv.total_us)
            ),
            r <= 0.6,
        );
    }
    for s in params_scenarios() {
        let (Some(mf), Some(h)) = (
            s.backend(BackendKind::Mf),
            peer(scenarios, s, BackendKind::RmpHand),
        ) else {
            continue;
        };
        let limit = if s.params >= 32 { 1.0 } else { 1.2 };
        let r = mf.total_us / h.total_us;
        push(
            format!(
                "{}: owned round trip ≤ {limit:.1}x rmp hand-rolled",
                s.title
            ),
            format!(
                "{} / {} µs = {r:.2}x",
                fmt_us(mf.total_us),
                fmt_us(h.total_us)
            ),
            r <= limit,
        );
    }
    for s in params_scenarios() {
        let (Some(v), Some(rr)) = (
            s.backend(BackendKind::MfView),
            peer(scenarios, s, BackendKind::RmpvRef),
        ) else {
            continue;
        };
        let r = v.total_us / rr.total_us;
        push(
            format!("{}: view round trip ≤ 0.75x rmpv ValueRef", s.title),
            format!(
                "{} / {} µs = {r:.2}x",
                fmt_us(v.total_us),
                fmt_us(rr.total_us)
            ),
            r <= 0.75,
        );
    }
    for s in params_scenarios() {
        let (Some(mf), Some(p)) = (
            s.backend(BackendKind::Mf),
            peer(scenarios, s, BackendKind::Prost),
        ) else {
            continue;
        };
        let need = if s.params >= 32 { 5.0 } else { 3.0 };
        let r = p.total_us / mf.total_us;
        push(
            format!("{}: ≥ {need:.0}x faster than prost", s.title),
            format!(
                "{} / {} µs = {r:.2}x",
                fmt_us(p.total_us),
                fmt_us(mf.total_us)
            ),
            r >= need,
        );
    }
    for s in scenarios {
        let (Some(mf), Some(j)) = (
            s.backend(BackendKind::Mf),
            peer(scenarios, s, BackendKind::Json),
        ) else {
            continue;
        };
        let r = j.total_us / mf.total_us;
        let copied = if s.attachment_bytes > 0 {
            " (attachment copied in and out)"
        } else {
            ""
        };
        push(
            format!("{}: ≥ 5x faster than serde_json{copied}", s.title),
            format!(
                "{} / {} µs = {r:.1}x",
                fmt_us(j.total_us),
                fmt_us(mf.total_us)
            ),
            r >= 5.0,
        );
        // With the attachment, the 50x target is for the attachment shared:
        // copied, three 1 MiB memcpys (add, encode, decode) bound the copying
        // row's ratio (docs/performance.md).
        if let Some(sh) = s.backend(BackendKind::MfShared) {
            let r = j.total_us / sh.total_us;
            push(
                format!(
                    "{}: ≥ 50x faster than serde_json (attachment shared: `Bytes` in, `decode_shared_into` out)",
                    s.title
                ),
                format!(
                    "{} / {} µs = {r:.1}x",
                    fmt_us(j.total_us),
                    fmt_us(sh.total_us)
                ),
                r >= 50.0,
            );
        }
    }
    for s in scenarios.iter().filter(|s| s.attachment_bytes > 0) {
        if let (Some(mf), Some(mc)) = (s.backend(BackendKind::Mf), s.memcpy_us) {
            let r = mf.serialize_us / mc;
            push(
                format!("{}: encode ≤ 1.2x one 1 MiB memcpy", s.title),
                format!("{} / {} µs = {r:.2}x", fmt_us(mf.serialize_us), fmt_us(mc)),
                r <= 1.2,
            );
        }
        if let Some(v) = s.backend(BackendKind::MfView) {
            push(
                format!("{}: view decode < 1 µs", s.title),
                format!("{} µs", fmt_us(v.deserialize_us)),
                v.deserialize_us < 1.0,
            );
        }
    }
    for s in params_scenarios().filter(|s| s.params <= 128 && s.hint.is_none()) {
        if let Some(mf) = s.backend(BackendKind::Mf) {
            let a = &mf.allocs;
            let zero = a.add.count == 0.0 && a.serialize.count == 0.0 && a.deserialize.count == 0.0;
            push(
                format!("{}: reused frame and buffer allocate nothing", s.title),
                format!(
                    "allocs add / serialize / deserialize: {} / {} / {}",
                    fmt_count(a.add.count),
                    fmt_count(a.serialize.count),
                    fmt_count(a.deserialize.count)
                ),
                zero,
            );
        }
    }
    if let Some(ns) = find_last_ns {
        push(
            "find last key at 1,024 params < 15 ns (criterion is authoritative)".to_owned(),
            format!("{ns:.1} ns (crossbench loop)"),
            ns < 15.0,
        );
    }
    t
}

/// Today's UTC date and time, `YYYY-MM-DD HH:MM UTC`.
#[must_use]
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// The CPU model name from `/proc/cpuinfo` (what `lscpu` shows).
#[must_use]
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::PhaseAllocs;

    fn backend(kind: BackendKind, total_us: f64) -> BackendResult {
        BackendResult {
            id: kind.id(),
            label: kind.label(),
            total_us,
            add_us: total_us / 3.0,
            serialize_us: total_us / 3.0,
            deserialize_us: total_us / 3.0,
            pass_totals_us: vec![total_us],
            wire_bytes: 100,
            zstd_bytes: 90,
            allocs: PhaseAllocs::default(),
        }
    }

    fn scenario(
        params: usize,
        hint: Option<usize>,
        backends: Vec<BackendResult>,
    ) -> ScenarioResult {
        ScenarioResult {
            name: "s",
            title: "S",
            params,
            hint,
            attachment_bytes: 0,
            iterations: 1,
            memcpy_us: None,
            backends,
        }
    }

    fn find<'a>(t: &'a [Target], needle: &str) -> &'a Target {
        t.iter()
            .find(|t| t.requirement.contains(needle))
            .unwrap_or_else(|| panic!("no target {needle:?}"))
    }

    #[test]
    fn formats_like_the_seed() {
        assert_eq!(thousands(1_398_188), "1,398,188");
        assert_eq!(thousands(73), "73");
        assert_eq!(fmt_us(0.594), "0.59");
        assert_eq!(fmt_us(0.0594), "0.059");
        assert_eq!(fmt_us(196.5), "196.5");
        assert_eq!(fmt_us(14_159.4), "14,159");
        assert!(utc_now().ends_with(" UTC"));
    }

    #[test]
    fn targets_are_judged_against_the_right_peer_and_limit() {
        let base = scenario(
            32,
            None,
            vec![
                backend(BackendKind::Mf, 1.0),
                backend(BackendKind::MfView, 1.0),
                backend(BackendKind::RmpvValue, 2.0),
                backend(BackendKind::RmpHand, 0.9),
                backend(BackendKind::RmpvRef, 2.0),
                backend(BackendKind::Prost, 6.0),
                backend(BackendKind::Json, 4.0),
            ],
        );
        // A hint scenario runs only messageframe: peers come from the base.
        let hint = scenario(32, Some(32), vec![backend(BackendKind::Mf, 0.5)]);
        let t = judge_targets(&[base, hint], Some(20.0));
        let rmpv: Vec<&Target> = t
            .iter()
            .filter(|t| t.requirement.contains("0.6x rmpv Value"))
            .collect();
        assert_eq!(rmpv.len(), 2);
        // 1.0 / 2.0 = 0.5x and 0.5 / 2.0 = 0.25x: both within 0.6x.
        assert!(rmpv.iter().all(|t| t.met));
        assert!(
            !find(&t, "1.0x rmp hand-rolled").met,
            "1.0 µs against 0.9 µs"
        );
        assert!(find(&t, "0.75x rmpv ValueRef").met);
        assert!(find(&t, "5x faster than prost").met, "6x");
        assert!(!find(&t, "5x faster than serde_json").met, "4x");
        assert!(!find(&t, "15 ns").met);
        assert!(
            !t.iter().any(|t| t.requirement.contains("50x")),
            "no attachment scenario, no 50x target"
        );
    }

    #[test]
    fn the_attachment_targets_judge_the_copying_and_the_shared_rows() {
        let mut s = scenario(
            4,
            None,
            vec![
                backend(BackendKind::Mf, 60.0),
                backend(BackendKind::MfShared, 30.0),
                backend(BackendKind::Json, 2000.0),
            ],
        );
        s.attachment_bytes = 1 << 20;
        let t = judge_targets(std::slice::from_ref(&s), None);
        let copied = find(&t, "5x faster than serde_json (attachment copied");
        assert!(
            copied.met && copied.figure.ends_with("33.3x"),
            "{}",
            copied.figure
        );
        let shared = find(&t, "50x faster than serde_json (attachment shared");
        assert!(
            shared.met && shared.figure.ends_with("66.7x"),
            "{}",
            shared.figure
        );
        // 2,000 / 45 = 44x: the shared row misses.
        s.backends[1] = backend(BackendKind::MfShared, 45.0);
        let t = judge_targets(&[s], None);
        assert!(!find(&t, "50x faster than serde_json").met);
    }
}
