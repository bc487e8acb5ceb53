//! Running a script or a tool entrypoint (docs/runtime.md).
