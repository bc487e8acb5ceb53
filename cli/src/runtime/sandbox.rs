//! The Landlock sandbox scripts run in (docs/runtime.md).
