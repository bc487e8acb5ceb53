#![no_main]
// What this target covers: see the function it calls.

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillpkg_fuzz::skill::skill_md(data));
