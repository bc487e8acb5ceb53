#![no_main]
// What this target covers: see the function it calls.

libfuzzer_sys::fuzz_target!(|archive: skillpkg_fuzz::archive::FuzzArchive| {
    skillpkg_fuzz::archive::unpack_entries(&archive)
});
