//! One file per command: glue between arguments and the libraries.

pub mod pack;
pub mod validate;
