//! Fuzz target: `wavetrace::fuzzing::scene_toml` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::scene_toml(data);
});
