//! README.md's "how long they take" paragraph stays true: the names it
//! gives for `crossbench --scenario` are exactly the harness's, and the
//! count of targets it quotes for the published run is the committed
//! run's (docs/crossbench.json).

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

    let report = publish::load(&root().join("docs/crossbench.json")).expect("published run");
    let met = report.targets.iter().filter(|t| t.met).count();
    let quoted = format!("met {met} of {} targets", report.targets.len());
    assert!(
        readme.contains(&format!(
            "The published run below (a quiet AMD EPYC) {quoted}"
        )),
        "README.md's first-look paragraph must say the published run {quoted}"
    );
}
