#![no_main]
// `fuzz_target!` reads inputs with `std::fs::File`, which clippy.toml bans.
#![allow(clippy::disallowed_types)]
// What this target covers: see the function it calls.

libfuzzer_sys::fuzz_target!(|data: &[u8]| skillpkg_fuzz::skill::audit_script(data));
