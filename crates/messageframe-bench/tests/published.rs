//! The published figures cannot go stale: README.md's Performance section,
//! docs/performance.md's tables and docs/crossbench.svg must be exactly
//! what the committed run (docs/crossbench.json) generates, and that run's
//! targets must be what the harness judges from its own figures.

use std::path::PathBuf;

use messageframe_bench::publish::{self, Targets};
use messageframe_bench::report::judge_all;
use messageframe_bench::tables::REPORT_COMMAND;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_committed_docs_are_generated_from_the_committed_run() {
    let report = publish::load(&root().join("docs/crossbench.json")).expect("published run");
    assert!(!report.meta.quick, "the published run is a full run");
    assert!(
        !report.scenarios.is_empty() && !report.order.is_empty(),
        "the published run has every part"
    );
    let stale = publish::stale(&report, &Targets::in_repo(&root())).expect("docs readable");
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what docs/crossbench.json generates: run `{REPORT_COMMAND}`"
    );
}

#[test]
fn the_committed_targets_are_judged_from_the_committed_figures() {
    let report = publish::load(&root().join("docs/crossbench.json")).expect("published run");
    assert_eq!(
        report.targets,
        judge_all(&report.scenarios, &report.order),
        "the JSON's targets were not judged by this harness from its figures"
    );
}

#[test]
fn a_changed_figure_shows_in_every_generated_file() {
    let mut report = publish::load(&root().join("docs/crossbench.json")).expect("published run");
    let to = Targets::in_repo(&root());
    let before = publish::expected(&report, &to).expect("renders");
    let b = &mut report.scenarios[0].backends[0];
    b.total_us *= 3.0;
    let after = publish::expected(&report, &to).expect("renders");
    for ((path, a), (_, b)) in before.iter().zip(&after) {
        assert_ne!(
            a,
            b,
            "{} does not show the first scenario's headline figure",
            path.display()
        );
    }
}
