//! Fuzz target: `wavetrace::fuzzing::mtl` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::mtl(data);
});
