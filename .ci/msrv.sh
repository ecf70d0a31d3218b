#!/usr/bin/env bash
# The library's minimum supported Rust version (its `rust-version`), tested
# with exactly that toolchain.
#
#   bash .ci/msrv.sh test         build and test the library with its MSRV
#   bash .ci/msrv.sh update-lock  add what the library's dependencies now need
#                                 to .ci/msrv/Cargo.lock, keeping the rest
#
# The repository's Cargo.lock is workspace-wide, and the CLI and the
# benchmark (and some of the library's newest dev-dependencies) need a
# newer Rust. So the job runs in a copy of the tracked files whose workspace
# holds the library alone, with a lockfile resolved for its rust-version by
# cargo's MSRV-aware resolver (CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=
# fallback, cargo >= 1.84) and committed as .ci/msrv/Cargo.lock: CI builds
# with `--locked`, so a release on crates.io cannot break the job, and a
# change to the library's dependencies that the lockfile does not cover
# fails it loudly (run `update-lock` then). `update-lock` starts from the
# committed lockfile and changes only what the manifests require: resolving
# every crate again picks what the registry holds that day, and a crate
# that does not declare its rust-version honestly can then break the job.
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' crates/messageframe/Cargo.toml)
if [ -z "$msrv" ]; then
    echo "no rust-version in crates/messageframe/Cargo.toml" >&2
    exit 1
fi

# A copy of the tracked files (the working tree's, committed or not) whose
# workspace holds only the library.
workspace() {
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$dir"
    sed -i 's|^members = .*|members = ["crates/messageframe"]|' "$dir/Cargo.toml"
    grep -q '^members = \["crates/messageframe"\]$' "$dir/Cargo.toml"
}

case "${1:-test}" in
test)
    rustup toolchain install "$msrv" --profile minimal
    dir=target/msrv-workspace
    workspace "$dir"
    cp .ci/msrv/Cargo.lock "$dir/Cargo.lock"
    cd "$dir"
    echo "library rust-version: $msrv"
    cargo "+$msrv" --version
    cargo "+$msrv" test -p messageframe --locked
    ;;
update-lock)
    dir=$(mktemp -d)
    workspace "$dir"
    cp .ci/msrv/Cargo.lock "$dir/Cargo.lock"
    (cd "$dir" && CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback cargo +stable update --workspace)
    mkdir -p .ci/msrv
    cp "$dir/Cargo.lock" .ci/msrv/Cargo.lock
    rm -rf "$dir"
    echo "updated .ci/msrv/Cargo.lock for Rust $msrv"
    ;;
*)
    echo "usage: $0 [test|update-lock]" >&2
    exit 2
    ;;
esac
