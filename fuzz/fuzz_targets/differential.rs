//! Fuzz target `differential`: see `messageframe_fuzz::checks::check_differential`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    messageframe_fuzz::checks::check_differential(data);
});
