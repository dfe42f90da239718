//! Fuzz target: `wavetrace::fuzzing::isa_jsonl` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wavetrace::fuzzing::isa_jsonl(data);
});
