//! Fuzz target: `wavetrace::fuzzing::texture` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::texture(data);
});
