//! Fuzz target: `wavetrace::fuzzing::ply` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::ply(data);
});
