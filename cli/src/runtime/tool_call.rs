//! Calling a skill's own tools (spec 003, docs/runtime.md).
