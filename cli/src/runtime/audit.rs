//! The audit log: one JSON line per tool call (docs/runtime.md).
