//! Fuzz target: `wavetrace::fuzzing::gltf` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::gltf(data);
});
