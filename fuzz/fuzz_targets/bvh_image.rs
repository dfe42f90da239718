//! Fuzz target: `wavetrace::fuzzing::bvh_image` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::bvh_image(data);
});
