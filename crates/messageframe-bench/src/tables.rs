//! Markdown generated from a [`Report`]: every figure in README.md's
//! Performance section and in docs/performance.md's tables comes from here,
//! so that the published text always matches the published JSON.

use std::fmt::Write as _;

use crate::backends::{Format, Group, CBOR, FAST_JSON, SELECTION, SELECTION_SCENARIOS};
use crate::report::{fmt_count, fmt_ratio, fmt_us, is_one_mib, peer, thousands, Report};
use crate::runner::{AllocPerOp, BackendResult, ScenarioResult};

/// The command that regenerates the published run and the docs.
pub const PUBLISH_COMMAND: &str =
    "cargo run --release -p messageframe-bench --bin crossbench -- --publish --note \"…\"";
/// The command that regenerates the docs from the committed JSON.
pub const REPORT_COMMAND: &str =
    "cargo run --release -p messageframe-bench --bin crossbench -- report docs/crossbench.json";

/// The headline columns: (label, format, the format of the shared row).
const COLUMNS: [(&str, Format, Option<Format>); 10] = [
    ("messageframe", Format::Mf, Some(Format::MfShared)),
    ("mf view", Format::MfView, Some(Format::MfViewShared)),
    ("mf set", Format::MfSet, None),
    ("prost", Format::Prost, Some(Format::ProstShared)),
    ("serde_json", Format::SerdeJson, Some(Format::SerdeJson)),
    (FAST_JSON.label(), FAST_JSON, Some(FAST_JSON)),
    (CBOR.label(), CBOR, Some(CBOR)),
    (
        "FlexBuffers",
        Format::Flexbuffers,
        Some(Format::Flexbuffers),
    ),
    ("same-wire floor‡", Format::RmpWire, Some(Format::RmpWire)),
    (
        "flat floor*",
        Format::RmpBorrowed,
        Some(Format::RmpBorrowed),
    ),
];

/// Peers of the ratio tables (peer time ÷ messageframe time).
const PEERS: [Format; 5] = [
    Format::Prost,
    Format::SerdeJson,
    FAST_JSON,
    CBOR,
    Format::Flexbuffers,
];

fn row_title(s: &ScenarioResult) -> String {
    let mut t = if s.name == "telemetry" {
        format!("telemetry ({} params + 16 KiB)", s.params)
    } else if is_one_mib(s) {
        format!("{} params + 1 MiB", thousands(s.params as u64))
    } else {
        format!("{} params", thousands(s.params as u64))
    };
    if s.hint.is_some() {
        t.push_str(" + hint");
    }
    t
}

fn shared_title(s: &ScenarioResult) -> String {
    format!("{}, shared†", row_title(s))
}

fn dash() -> String {
    "—".to_owned()
}

fn total(b: Option<&BackendResult>) -> String {
    b.map_or_else(dash, |b| fmt_us(b.total_us))
}

fn ratio(num: Option<&BackendResult>, den: Option<&BackendResult>) -> String {
    match (num, den) {
        (Some(n), Some(d)) if d.total_us > 0.0 => fmt_ratio(n.total_us / d.total_us),
        _ => dash(),
    }
}

fn has_shared(s: &ScenarioResult, g: Group) -> bool {
    s.backend(g, Format::MfShared).is_some()
}

fn group_title(g: Group) -> &'static str {
    match g {
        Group::Reused => "Reused: each library in its best reuse mode",
        Group::Fresh => "Fresh: a new message, output buffer and decoded value every iteration",
    }
}

impl Report {
    fn scenarios_with(&self, g: Group) -> impl Iterator<Item = &ScenarioResult> {
        self.scenarios
            .iter()
            .filter(move |s| s.backends.iter().any(|b| b.group == g))
    }

    /// Time per message (µs) in one group, one row per scenario (plus a
    /// shared-attachment row after each attachment scenario).
    #[must_use]
    pub fn time_table(&self, g: Group) -> String {
        let mut t = String::from("| Scenario |");
        for (label, _, _) in COLUMNS {
            let _ = write!(t, " {label} |");
        }
        t.push_str("\n|---|");
        t.push_str(&"---:|".repeat(COLUMNS.len()));
        t.push('\n');
        for s in self.scenarios_with(g) {
            let _ = write!(t, "| {} |", row_title(s));
            for (_, f, _) in COLUMNS {
                let _ = write!(t, " {} |", total(s.backend(g, f)));
            }
            t.push('\n');
            if has_shared(s, g) {
                let _ = write!(t, "| {} |", shared_title(s));
                for (_, _, shared) in COLUMNS {
                    let _ = write!(t, " {} |", total(shared.and_then(|f| s.backend(g, f))));
                }
                t.push('\n');
            }
        }
        t
    }

    /// Peer time ÷ messageframe time in one group (above 1: messageframe is
    /// faster), and messageframe ÷ each floor (below 1: faster than the
    /// floor): the same-wire floor, then the flat one.
    #[must_use]
    pub fn ratio_table(&self, g: Group) -> String {
        let mut t = String::from("| Scenario |");
        for p in PEERS {
            let _ = write!(t, " vs {} |", p.label());
        }
        t.push_str(
            " owned ÷ same-wire | view ÷ same-wire | owned ÷ flat | view ÷ flat | set ÷ add |\n|---|",
        );
        t.push_str(&"---:|".repeat(PEERS.len() + 5));
        t.push('\n');
        for s in self.scenarios_with(g) {
            let mf = s.backend(g, Format::Mf);
            let _ = write!(t, "| {} |", row_title(s));
            for p in PEERS {
                let _ = write!(t, " {} |", ratio(peer(&self.scenarios, s, g, p), mf));
            }
            let wire = peer(&self.scenarios, s, g, Format::RmpWire);
            let floor = peer(&self.scenarios, s, g, Format::RmpBorrowed);
            let view = s.backend(g, Format::MfView);
            let _ = writeln!(
                t,
                " {} | {} | {} | {} | {} |",
                ratio(mf, wire),
                ratio(view, wire),
                ratio(mf, floor),
                ratio(view, floor),
                ratio(s.backend(g, Format::MfSet), mf),
            );
            if has_shared(s, g) {
                let shared = s.backend(g, Format::MfShared);
                let _ = write!(t, "| {} |", shared_title(s));
                for p in PEERS {
                    let p = if p == Format::Prost {
                        Format::ProstShared
                    } else {
                        p
                    };
                    let _ = write!(t, " {} |", ratio(s.backend(g, p), shared));
                }
                let view = s.backend(g, Format::MfViewShared);
                let _ = writeln!(
                    t,
                    " {} | {} | {} | {} | — |",
                    ratio(shared, wire),
                    ratio(view, wire),
                    ratio(shared, floor),
                    ratio(view, floor),
                );
            }
        }
        t
    }

    /// Every backend's phases and allocations.
    #[must_use]
    pub fn phase_table(&self) -> String {
        let mut t = String::from(
            "| Scenario | Group | Backend | iterations | add | serialize | deserialize | total | allocs add | allocs serialize | allocs deserialize |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        let fa = |a: &AllocPerOp| format!("{} / {}", fmt_count(a.count), fmt_count(a.bytes));
        for s in &self.scenarios {
            for b in &s.backends {
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    row_title(s),
                    b.group.id(),
                    b.label,
                    thousands(b.iterations),
                    fmt_us(b.add_us),
                    fmt_us(b.serialize_us),
                    fmt_us(b.deserialize_us),
                    fmt_us(b.total_us),
                    fa(&b.allocs.add),
                    fa(&b.allocs.serialize),
                    fa(&b.allocs.deserialize),
                );
            }
        }
        t
    }

    /// messageframe's lookups.
    #[must_use]
    pub fn lookup_table(&self) -> String {
        let mut t = String::from(
            "| Scenario | build a new frame (µs) | build, then one find (µs) | first find after build (ns) | first find after decode (ns) | repeated find (ns) |\n|---|---:|---:|---:|---:|---:|\n",
        );
        for s in &self.scenarios {
            if let Some(l) = s.lookups {
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {:.0} | {:.0} | {:.1} |",
                    row_title(s),
                    fmt_us(l.build_us),
                    fmt_us(l.build_find_us),
                    l.first_find_built_ns,
                    l.first_find_decoded_ns,
                    l.repeated_find_ns
                );
            }
        }
        t
    }

    /// Allocations of messageframe's fresh rows per message (count / bytes).
    #[must_use]
    pub fn fresh_alloc_table(&self) -> String {
        let mut t = String::from(
            "| Scenario | new frame + add | encode (new `Vec`) | decode (new frame) | total |\n|---|---:|---:|---:|---:|\n",
        );
        let fa = |a: &AllocPerOp| {
            format!(
                "{} / {} B",
                fmt_count(a.count),
                thousands(a.bytes.round() as u64)
            )
        };
        for s in &self.scenarios {
            if let Some(b) = s.backend(Group::Fresh, Format::Mf) {
                let a = &b.allocs;
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {} | {} |",
                    row_title(s),
                    fa(&a.add),
                    fa(&a.serialize),
                    fa(&a.deserialize),
                    fa(&a.total())
                );
            }
        }
        t
    }

    /// The 1 MiB scenario's copies: messageframe against the copy floors.
    #[must_use]
    pub fn copy_table(&self) -> String {
        let mut t = String::new();
        for s in self.scenarios.iter().filter(|s| is_one_mib(s)) {
            let g = Group::Reused;
            let rows = [
                Format::Mf,
                Format::RmpCopying,
                Format::Memcpy,
                Format::MfShared,
                Format::ProstShared,
                Format::MfView,
                Format::MfViewShared,
                Format::RmpWire,
                Format::RmpBorrowed,
            ];
            t.push_str("| Backend (reused) | add | serialize | deserialize | total |\n|---|---:|---:|---:|---:|\n");
            for f in rows {
                if let Some(b) = s.backend(g, f) {
                    let _ = writeln!(
                        t,
                        "| {} | {} | {} | {} | {} |",
                        b.label,
                        fmt_us(b.add_us),
                        fmt_us(b.serialize_us),
                        fmt_us(b.deserialize_us),
                        fmt_us(b.total_us)
                    );
                }
            }
        }
        t
    }

    /// Wire sizes (bytes, zstd level 3 in parentheses), reused group.
    #[must_use]
    pub fn size_table(&self) -> String {
        let cols = [
            Format::Mf,
            Format::Prost,
            Format::SerdeJson,
            CBOR,
            Format::Flexbuffers,
            Format::RmpWire,
            Format::RmpBorrowed,
        ];
        let mut t = String::from("| Scenario |");
        for f in cols {
            let _ = write!(t, " {} |", f.label());
        }
        t.push_str("\n|---|");
        t.push_str(&"---:|".repeat(cols.len()));
        t.push('\n');
        for s in self.scenarios.iter().filter(|s| s.hint.is_none()) {
            let _ = write!(t, "| {} |", row_title(s));
            for f in cols {
                let cell = s.backend(Group::Reused, f).map_or_else(dash, |b| {
                    format!(
                        "{} ({})",
                        thousands(b.wire_bytes as u64),
                        thousands(b.zstd_bytes as u64)
                    )
                });
                let _ = write!(t, " {cell} |");
            }
            t.push('\n');
        }
        t
    }

    /// The candidates of each selected peer, side by side.
    #[must_use]
    pub fn selection_table(&self) -> String {
        let mut t = String::from(
            "| Family | Scenario (reused) | candidate | µs | candidate | µs | faster here | in the tables |\n|---|---|---|---:|---|---:|---|---|\n",
        );
        for (family, [a, b], chosen) in SELECTION {
            for s in self
                .scenarios
                .iter()
                .filter(|s| SELECTION_SCENARIOS.contains(&s.name.as_str()))
            {
                let (Some(ra), Some(rb)) =
                    (s.backend(Group::Reused, a), s.backend(Group::Reused, b))
                else {
                    continue;
                };
                let faster = if ra.total_us <= rb.total_us { a } else { b };
                let _ = writeln!(
                    t,
                    "| {family} | {} | {} | {} | {} | {} | {} ({}) | {} |",
                    row_title(s),
                    a.id(),
                    fmt_us(ra.total_us),
                    b.id(),
                    fmt_us(rb.total_us),
                    faster.id(),
                    fmt_ratio(ra.total_us.max(rb.total_us) / ra.total_us.min(rb.total_us)),
                    chosen.id()
                );
            }
        }
        t
    }

    /// The Order comparison (SPEC 5.3).
    #[must_use]
    pub fn order_table(&self) -> String {
        let mut t = String::from(
            "| items | format | bytes | zstd | encode ns | B/op | allocs | decode ns | B/op | allocs |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for o in &self.order {
            for b in &o.backends {
                let _ = writeln!(
                    t,
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
        t
    }

    /// Every target with its figure.
    #[must_use]
    pub fn target_table(&self) -> String {
        let mut t =
            String::from("| Group | Target | Figure in this run | Met |\n|---|---|---|---|\n");
        for x in &self.targets {
            let _ = writeln!(
                t,
                "| {} | {} | {} | {} |",
                x.group,
                x.requirement,
                x.figure,
                if x.met { "met" } else { "**missed**" }
            );
        }
        t
    }

    /// `N of M targets met`, and each missed one.
    #[must_use]
    pub fn target_summary(&self) -> String {
        let met = self.targets.iter().filter(|t| t.met).count();
        let mut t = format!(
            "**{met} of {} targets met** in this run.",
            self.targets.len()
        );
        let missed: Vec<_> = self.targets.iter().filter(|t| !t.met).collect();
        if !missed.is_empty() {
            t.push_str(" Missed:\n\n");
            for x in missed {
                let _ = writeln!(t, "- {} ({}): {}", x.requirement, x.group, x.figure);
            }
        } else {
            t.push('\n');
        }
        t
    }

    /// README.md's first-look sentence: where the published run ran and
    /// how many of its targets it met, so the paragraph that warns about
    /// verdicts moving with the CPU quotes the committed run, not a figure
    /// typed by hand.
    #[must_use]
    pub fn verdict_block(&self) -> String {
        let met = self.targets.iter().filter(|t| t.met).count();
        format!(
            "The published run below ({}, {} CPUs, commit `{}`) met {met} of {} targets.",
            self.meta.cpu,
            self.meta.cpus,
            self.meta.commit,
            self.targets.len()
        )
    }

    /// How much the passes of one measurement differed: (median, 90th
    /// percentile, largest) of max ÷ min − 1 over every measurement.
    #[must_use]
    pub fn pass_spread(&self) -> Option<(f64, f64, f64)> {
        let mut spreads: Vec<f64> = self
            .scenarios
            .iter()
            .flat_map(|s| &s.backends)
            .filter(|b| b.pass_totals_us.len() > 1)
            .map(|b| {
                let lo = b
                    .pass_totals_us
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min);
                let hi = b.pass_totals_us.iter().copied().fold(0.0, f64::max);
                hi / lo - 1.0
            })
            .collect();
        if spreads.is_empty() {
            return None;
        }
        spreads.sort_by(f64::total_cmp);
        let at = |q: f64| spreads[((spreads.len() - 1) as f64 * q).round() as usize];
        Some((at(0.5), at(0.9), at(1.0)))
    }

    /// Where the run comes from, in one paragraph.
    #[must_use]
    pub fn provenance(&self) -> String {
        let m = &self.meta;
        let b = &m.build;
        let mut t = format!(
            "Figures of one `crossbench` run at commit `{}`{}, {} UTC: {} ({} CPUs), {}, `{}` profile (opt-level {}, lto {}, codegen-units {}, target-cpu {}).",
            m.commit,
            if m.dirty { " **with uncommitted changes**" } else { "" },
            m.date.trim_end_matches(" UTC"),
            m.cpu,
            m.cpus,
            m.rustc,
            b.profile,
            b.opt_level,
            b.lto,
            b.codegen_units,
            b.target_cpu,
        );
        if !m.note.is_empty() {
            let _ = write!(t, " Machine: {}.", m.note.trim_end_matches('.'));
        }
        let _ = write!(t, " Every figure is the minimum of {} passes", m.passes);
        match self.pass_spread() {
            Some((med, p90, max)) => {
                let _ = write!(
                    t,
                    "; within this run, the passes of one measurement differed by {:.0} % at the median, {:.0} % at the 90th percentile and {:.0} % at most.",
                    med * 100.0,
                    p90 * 100.0,
                    max * 100.0
                );
            }
            None => t.push('.'),
        }
        if m.quick {
            t.push_str(" **This is a `--quick` run (iterations ÷ 100): a smoke test, not figures to quote.**");
        }
        t
    }

    /// Ratio ranges per group and peer, over the scenarios without the 1 MiB
    /// attachment: one line each.
    #[must_use]
    pub fn ranges(&self) -> String {
        let mut t = String::new();
        for g in Group::ALL {
            let mut parts = Vec::new();
            for p in PEERS {
                let rs: Vec<f64> = self
                    .scenarios
                    .iter()
                    .filter(|s| !is_one_mib(s))
                    .filter_map(|s| {
                        let o = s.backend(g, Format::Mf)?;
                        Some(peer(&self.scenarios, s, g, p)?.total_us / o.total_us)
                    })
                    .collect();
                if let (Some(lo), Some(hi)) = (
                    rs.iter().copied().reduce(f64::min),
                    rs.iter().copied().reduce(f64::max),
                ) {
                    parts.push(format!(
                        "{} {} to {}",
                        p.label(),
                        fmt_ratio(lo),
                        fmt_ratio(hi)
                    ));
                }
            }
            if !parts.is_empty() {
                let _ = writeln!(
                    t,
                    "- {}: messageframe is faster than {} (peer time ÷ messageframe time, every scenario but the 1 MiB one).",
                    g.id(),
                    parts.join(", ")
                );
            }
        }
        t
    }

    /// The README's Performance block.
    #[must_use]
    pub fn readme_block(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "{}\n", self.provenance());
        for g in Group::ALL {
            if self.scenarios_with(g).next().is_none() {
                continue;
            }
            let _ = writeln!(t, "**{}**, µs per message:\n", group_title(g));
            t.push_str(&self.time_table(g));
            t.push('\n');
        }
        t.push_str(
            "‡ the same-wire floor: rmp's functions writing and reading exactly messageframe's wire layout (header, two-part keys, `[tag, value]` pairs, attachments), everything read back as offsets into the receive buffer, nothing allocated. \\* the flat floor: rmp's functions on a bare map of flat keys, no header, no value tags, pairs recorded as offsets into the receive buffer. † the attachment shared instead of copied where a library can (`Bytes`).\n\n",
        );
        t.push_str(&self.ranges());
        t.push('\n');
        t.push_str(&self.target_summary());
        t
    }

    /// docs/performance.md's run block.
    #[must_use]
    pub fn run_block(&self) -> String {
        let m = &self.meta;
        let b = &m.build;
        let mut t = format!("{}\n\n", self.provenance());
        t.push_str("| | |\n|---|---|\n");
        let rows = [
            ("command", format!("`{}`", m.command)),
            (
                "commit",
                format!(
                    "`{}`{}",
                    m.commit,
                    if m.dirty {
                        " (the code differed from it: not a publishable run)"
                    } else {
                        " (clean)"
                    }
                ),
            ),
            ("date", m.date.clone()),
            ("CPU", format!("{} ({} CPUs)", m.cpu, m.cpus)),
            ("machine", if m.note.is_empty() { dash() } else { m.note.clone() }),
            ("compiler", m.rustc.clone()),
            (
                "build",
                format!(
                    "profile `{}`, opt-level {}, debug {}, lto {}, codegen-units {}, target-cpu {}, rustflags `{}`",
                    b.profile, b.opt_level, b.debug, b.lto, b.codegen_units, b.target_cpu, b.rustflags
                ),
            ),
            ("target features", format!("`{}`", b.target_features)),
            (
                "passes",
                format!(
                    "minimum of {}; loop budget {} ms; clock read {:.1} ns (subtracted from each phase)",
                    m.passes, m.loop_budget_ms, m.timer_overhead_ns
                ),
            ),
        ];
        for (k, v) in rows {
            let _ = writeln!(t, "| {k} | {v} |");
        }
        t
    }

    /// docs/performance.md's results block: every table.
    #[must_use]
    pub fn results_block(&self) -> String {
        let mut t = String::new();
        for g in Group::ALL {
            if self.scenarios_with(g).next().is_none() {
                continue;
            }
            let _ = writeln!(t, "#### {}: time per message (µs)\n", group_title(g));
            t.push_str(&self.time_table(g));
            let _ = writeln!(
                t,
                "\n#### {}: ratios\n\nPeer time ÷ messageframe time (above 1: messageframe is faster); messageframe ÷ the same-wire floor and ÷ the flat floor (below 1: faster than the floor); `set` ÷ `add`.\n",
                g.id()
            );
            t.push_str(&self.ratio_table(g));
            t.push('\n');
        }
        t.push_str("#### Summary\n\n");
        t.push_str(&self.ranges());
        t.push('\n');
        if self.scenarios.iter().any(|s| s.lookups.is_some()) {
            t.push_str("#### Lookups (messageframe, `Frame::find` of the last key)\n\n");
            t.push_str(&self.lookup_table());
            t.push('\n');
        }
        if self
            .scenarios
            .iter()
            .any(|s| s.backend(Group::Fresh, Format::Mf).is_some())
        {
            t.push_str(
                "#### Allocations per fresh frame (messageframe, count / bytes per message)\n\n",
            );
            t.push_str(&self.fresh_alloc_table());
            t.push('\n');
        }
        if self.scenarios.iter().any(is_one_mib) {
            t.push_str("#### The 1 MiB attachment: the copies (µs per message)\n\n");
            t.push_str(&self.copy_table());
            t.push('\n');
        }
        t.push_str("#### Wire size, bytes (zstd level 3 in parentheses)\n\n");
        t.push_str(&self.size_table());
        t.push('\n');
        let sel = self.selection_table();
        if sel.lines().count() > 2 {
            t.push_str("#### Which CBOR and which fast JSON library\n\n");
            t.push_str(&sel);
            t.push('\n');
        }
        if !self.order.is_empty() {
            t.push_str(
                "#### Typed record: the Order message (ns per operation; allocations per operation)\n\n",
            );
            t.push_str(&self.order_table());
            t.push('\n');
        }
        t.push_str("#### Per-phase breakdown (µs per message) and heap allocations per message (count / bytes)\n\n");
        t.push_str(&self.phase_table());
        t
    }

    /// docs/performance.md's targets block.
    #[must_use]
    pub fn targets_block(&self) -> String {
        let mut t = self.target_summary();
        t.push('\n');
        t.push_str(&self.target_table());
        t
    }

    /// The whole report, for stdout.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut t = String::from("# messageframe crossbench\n\n");
        t.push_str(&self.run_block());
        t.push('\n');
        if !self.scenarios.is_empty() || !self.order.is_empty() {
            t.push_str(&self.results_block());
            t.push('\n');
        }
        if !self.targets.is_empty() {
            t.push_str("## Targets\n\n");
            t.push_str(&self.targets_block());
        }
        t
    }
}
