//! Fuzz target `header_peek`: see `messageframe_fuzz::checks::check_header_peek`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    messageframe_fuzz::checks::check_header_peek(data);
});
