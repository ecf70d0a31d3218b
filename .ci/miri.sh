#!/usr/bin/env bash
# The library's tests under Miri, for a 32-bit target (i686) and a
# big-endian one (s390x): Miri interprets them with the target's pointer
# width and byte order, so no cross toolchain is needed, and an overflow,
# an out-of-bounds access or undefined behaviour fails the run. Which tests
# run, which are left out and why: docs/security.md ("32-bit and
# big-endian targets"). The two targets run at the same time, one per core;
# each writes its log to target/miri-TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target

miri_toolchain=nightly-2026-05-20
miri_targets=(i686-unknown-linux-gnu s390x-unknown-linux-gnu)
miri_tests=(-p messageframe --lib --test adversarial --test api --test conformance --test interop)
miri_skip=(
    # Each is slow under Miri and exercises nothing the others do not
    # (docs/security.md lists why each is left out).
    index::tests::finds_what_it_holds_through_growth_and_collisions
    decode_rejects_a_deep_chain_of_nested_array16_headers_without_recursion
    repeated_string_replacement_keeps_values_right
    encoded_len_is_exact
    frames_views_and_errors_are_send_and_sync
    lookups_find_first_and_last_keys_below_and_above_the_index_threshold
    the_view_sees_the_same_content_as_the_owned_decode
    attachments_copied_in_pieces_arrive_whole_in_the_frame_and_the_wire
)
rustup toolchain install "$miri_toolchain" --profile minimal --component miri,rust-src
skip_args=()
for t in "${miri_skip[@]}"; do skip_args+=(--skip "$t"); done
pids=()
for target in "${miri_targets[@]}"; do
    cargo "+$miri_toolchain" miri setup --target "$target"
done
for target in "${miri_targets[@]}"; do
    # Each run's own time, at the end of its log (they run side by side, so
    # whether one waits for a free core at its end shows here).
    (
        start=$SECONDS
        rc=0
        MIRIFLAGS=-Zmiri-disable-isolation CARGO_TARGET_DIR="target/miri-$target" \
            cargo "+$miri_toolchain" miri test --target "$target" "${miri_tests[@]}" \
            -- --test-threads=1 "${skip_args[@]}" || rc=$?
        echo "note: under Miri $target took $((SECONDS - start)) s (build and tests)"
        exit $rc
    ) >"target/miri-$target.log" 2>&1 &
    pids+=($!)
done
miri_failed=0
for i in "${!miri_targets[@]}"; do
    if wait "${pids[$i]}"; then
        echo "${miri_targets[$i]}: passed"
        grep -E '^test result|Running|note: under Miri' "target/miri-${miri_targets[$i]}.log"
    else
        miri_failed=1
        echo "${miri_targets[$i]}: FAILED; its log:"
        cat "target/miri-${miri_targets[$i]}.log"
    fi
done
[ "$miri_failed" = 0 ]

