#!/usr/bin/env bash
# Minimises the committed corpus (fuzz/corpus/<target>/) after fuzzing, as
# fuzz/README.md describes. Needs nightly and cargo-fuzz.
#
#   fuzz/minimize.sh               every target
#   fuzz/minimize.sh view stream   some of them
#
# 1. Per target, `cargo fuzz cmin` (AddressSanitizer, the default) with
#    libFuzzer's set-cover merge, which keeps every coverage feature with
#    fewer inputs than the greedy merge, and inputs cut at 4 KiB (the
#    features only longer inputs reach are left to the campaigns, which run
#    with -max_len=16384; the cap halves the corpus's bytes).
# 2. Per target, every input that another target's corpus also holds is set
#    aside and merged back (libFuzzer -merge=1) only if it adds coverage to
#    the rest of this target's corpus. An input stays in two corpora only if
#    both targets need it.
set -euo pipefail
cd "$(dirname "$0")"

CAP=4096
all=()
for src in fuzz_targets/*.rs; do
    all+=("$(basename "$src" .rs)")
done
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=("${all[@]}")
fi

stats() {
    printf '%-14s %5d files %9d bytes\n' "$1" \
        "$(find "corpus/$1" -type f | wc -l)" "$(cat corpus/"$1"/* | wc -c)"
}

for t in "${targets[@]}"; do
    cargo +nightly fuzz cmin "$t" -- -set_cover_merge=1 -max_len=$CAP
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do
    # Contents of every other corpus, by hash (file names need not be
    # hashes: seeds and hand-made inputs keep theirs).
    : > "$work/others"
    for o in "${all[@]}"; do
        if [ "$o" != "$t" ] && [ -d "corpus/$o" ]; then
            find "corpus/$o" -type f -exec sha1sum {} + | cut -c1-40 >> "$work/others"
        fi
    done
    rm -rf "$work/shared" && mkdir "$work/shared"
    moved=0
    for f in corpus/"$t"/*; do
        [ -f "$f" ] || continue
        if grep -qx "$(sha1sum < "$f" | cut -c1-40)" "$work/others"; then
            mv "$f" "$work/shared/"
            moved=$((moved + 1))
        fi
    done
    if [ "$moved" -gt 0 ]; then
        cargo +nightly fuzz run "$t" corpus/"$t" "$work/shared" -- -merge=1 -max_len=$CAP
    fi
    echo "$t: $moved inputs shared with other targets, merged back if needed"
done

for t in "${all[@]}"; do
    stats "$t"
done
