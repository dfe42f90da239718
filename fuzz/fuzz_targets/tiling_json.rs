//! Fuzz target: `wavetrace::fuzzing::tiling_json` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::tiling_json(data);
});
