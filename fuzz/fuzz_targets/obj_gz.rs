//! Fuzz target: `wavetrace::fuzzing::obj_gz` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::obj_gz(data);
});
