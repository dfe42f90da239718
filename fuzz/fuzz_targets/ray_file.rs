//! Fuzz target: `wavetrace::fuzzing::ray_file` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::ray_file(data);
});
