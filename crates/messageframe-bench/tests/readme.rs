//! README.md's "how long they take" paragraph stays true: the names it
//! gives for `crossbench --scenario` are exactly the harness's, and the
//! count of targets it quotes for the published run, a generated block,
//! stands in the paragraph on verdicts.

use std::path::PathBuf;

use messageframe_bench::{publish, scenario_names};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_readme_names_every_scenario_and_the_published_count() {
    let readme = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let list = readme
        .split("(`--scenario` takes ")
        .nth(1)
        .and_then(|rest| rest.split(")").next())
        .expect("the README lists the scenarios");
    let listed: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
    assert_eq!(listed, scenario_names(), "README.md: {list}");

    // The count of met targets is a generated block (`crossbench report`),
    // inside the paragraph on verdicts, where a reader looks for it.
    let report = publish::load(&root().join("docs/crossbench.json")).expect("published run");
    let paragraph = readme
        .split("**Verdicts near a threshold change with the CPU.**")
        .nth(1)
        .and_then(|rest| rest.split("### ").next())
        .expect("README.md has the paragraph on verdicts");
    assert!(
        paragraph.contains(report.verdict_block().trim()),
        "README.md's paragraph on verdicts must hold the generated sentence: {}",
        report.verdict_block()
    );
}
