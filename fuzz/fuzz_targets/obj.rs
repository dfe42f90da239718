//! Fuzz target: `wavetrace::fuzzing::obj` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::obj(data);
});
