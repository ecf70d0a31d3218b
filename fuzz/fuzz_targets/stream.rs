//! Fuzz target `stream`: see `messageframe_fuzz::checks::check_stream`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    messageframe_fuzz::checks::check_stream(data);
});
