//! Writing a run into the docs: the text between marker comments in
//! README.md and docs/performance.md, and the chart, are generated from the
//! run's JSON (`crossbench report docs/crossbench.json`), so that the
//! published figures always match the published JSON (a test checks it).
//!
//! A block is delimited by `<!-- crossbench:NAME:begin -->` and
//! `<!-- crossbench:NAME:end -->` on lines of their own; everything between
//! them is replaced.

use std::path::{Path, PathBuf};

use crate::report::Report;

/// README.md's blocks.
pub const README_BLOCKS: [&str; 2] = ["verdict", "readme"];
/// docs/performance.md's blocks.
pub const PERFORMANCE_BLOCKS: [&str; 3] = ["run", "results", "targets"];

fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- crossbench:{name}:begin -->"),
        format!("<!-- crossbench:{name}:end -->"),
    )
}

/// `text` with the block `name` replaced by `content`.
///
/// # Errors
///
/// When the block's markers are missing, repeated or out of order.
pub fn replace_block(text: &str, name: &str, content: &str) -> Result<String, String> {
    let (begin, end) = markers(name);
    let find_one = |m: &str| -> Result<usize, String> {
        let mut hits = text.match_indices(m);
        match (hits.next(), hits.next()) {
            (Some((i, _)), None) => Ok(i),
            (None, _) => Err(format!("no `{m}` marker")),
            (Some(_), Some(_)) => Err(format!("`{m}` appears more than once")),
        }
    };
    let b = find_one(&begin)?;
    let e = find_one(&end)?;
    if e < b {
        return Err(format!("`{end}` comes before `{begin}`"));
    }
    let mut out = String::with_capacity(text.len() + content.len());
    out.push_str(&text[..b + begin.len()]);
    out.push_str("\n\n");
    out.push_str(content.trim_end());
    out.push_str("\n\n");
    out.push_str(&text[e..]);
    Ok(out)
}

/// The content of a block for this report.
///
/// # Errors
///
/// An unknown block name.
pub fn block(report: &Report, name: &str) -> Result<String, String> {
    Ok(match name {
        "readme" => report.readme_block(),
        "verdict" => report.verdict_block(),
        "run" => report.run_block(),
        "results" => report.results_block(),
        "targets" => report.targets_block(),
        _ => return Err(format!("unknown block {name:?}")),
    })
}

/// `text` with every named block regenerated from `report`.
///
/// # Errors
///
/// As [`replace_block`].
pub fn render(report: &Report, text: &str, blocks: &[&str]) -> Result<String, String> {
    let mut out = text.to_owned();
    for name in blocks {
        out = replace_block(&out, name, &block(report, name)?)
            .map_err(|e| format!("block {name}: {e}"))?;
    }
    Ok(out)
}

/// Where the generated files live.
#[derive(Debug, Clone)]
pub struct Targets {
    /// README.md.
    pub readme: PathBuf,
    /// docs/performance.md.
    pub performance: PathBuf,
    /// The chart (docs/crossbench.svg).
    pub chart: PathBuf,
}

impl Targets {
    /// The files of the repository rooted at `root`.
    #[must_use]
    pub fn in_repo(root: &Path) -> Targets {
        Targets {
            readme: root.join("README.md"),
            performance: root.join("docs/performance.md"),
            chart: root.join("docs/crossbench.svg"),
        }
    }
}

/// Reads a report from its JSON file.
///
/// # Errors
///
/// An unreadable file or a document of another layout.
pub fn load(json: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let report: Report = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a crossbench report of this version: {e}",
            json.display()
        )
    })?;
    if report.meta.schema != crate::report::SCHEMA {
        return Err(format!(
            "{}: schema {:?}, this harness writes {:?}",
            json.display(),
            report.meta.schema,
            crate::report::SCHEMA
        ));
    }
    Ok(report)
}

/// Writes a report as its JSON file (what `--json` and `--publish` write).
///
/// # Errors
///
/// A file that cannot be written.
pub fn save(report: &Report, json: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(report).expect("the report serializes");
    std::fs::write(json, text + "\n").map_err(|e| format!("cannot write {}: {e}", json.display()))
}

/// Judges `report`'s targets again from its figures with this harness's
/// rules ([`crate::report::judge_all`]); returns whether they changed.
pub fn rejudge(report: &mut Report) -> bool {
    let targets = crate::report::judge_all(&report.scenarios, &report.order);
    let changed = targets != report.targets;
    report.targets = targets;
    changed
}

/// What the docs should contain for `report`: (path, expected text) for the
/// README, docs/performance.md and the chart.
///
/// # Errors
///
/// An unreadable file, missing markers, or a chart that cannot be drawn.
pub fn expected(report: &Report, to: &Targets) -> Result<Vec<(PathBuf, String)>, String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    let readme = render(report, &read(&to.readme)?, &README_BLOCKS)
        .map_err(|e| format!("{}: {e}", to.readme.display()))?;
    let perf = render(report, &read(&to.performance)?, &PERFORMANCE_BLOCKS)
        .map_err(|e| format!("{}: {e}", to.performance.display()))?;
    let chart = crate::plot::svg(report)?;
    Ok(vec![
        (to.readme.clone(), readme),
        (to.performance.clone(), perf),
        (to.chart.clone(), chart),
    ])
}

/// The files whose content differs from what `report` generates.
///
/// # Errors
///
/// As [`expected`].
pub fn stale(report: &Report, to: &Targets) -> Result<Vec<PathBuf>, String> {
    Ok(expected(report, to)?
        .into_iter()
        .filter(|(p, want)| std::fs::read_to_string(p).ok().as_deref() != Some(want.as_str()))
        .map(|(p, _)| p)
        .collect())
}

/// Rewrites the docs from `report`; returns the files that changed.
///
/// # Errors
///
/// As [`expected`], or a file that cannot be written.
pub fn write(report: &Report, to: &Targets) -> Result<Vec<PathBuf>, String> {
    let mut changed = Vec::new();
    for (p, want) in expected(report, to)? {
        if std::fs::read_to_string(&p).ok().as_deref() != Some(want.as_str()) {
            std::fs::write(&p, want).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            changed.push(p);
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_replaced_between_its_markers_and_nowhere_else() {
        let text = "intro\n<!-- crossbench:a:begin -->\nold\n<!-- crossbench:a:end -->\noutro\n";
        let out = replace_block(text, "a", "new\n").unwrap();
        assert_eq!(
            out,
            "intro\n<!-- crossbench:a:begin -->\n\nnew\n\n<!-- crossbench:a:end -->\noutro\n"
        );
        // Idempotent: replacing again with the same content changes nothing.
        assert_eq!(replace_block(&out, "a", "new").unwrap(), out);
    }

    #[test]
    fn broken_markers_are_errors() {
        let b = "<!-- crossbench:a:begin -->";
        let e = "<!-- crossbench:a:end -->";
        assert!(replace_block("no markers", "a", "x")
            .unwrap_err()
            .contains("no"));
        assert!(replace_block(&format!("{e}\n{b}"), "a", "x")
            .unwrap_err()
            .contains("before"));
        assert!(replace_block(&format!("{b}{b}{e}"), "a", "x")
            .unwrap_err()
            .contains("more than once"));
        assert!(replace_block(&format!("{b}\n"), "a", "x").is_err());
        assert!(
            replace_block(&format!("{b}{e}"), "b", "x").is_err(),
            "other name"
        );
    }
}
