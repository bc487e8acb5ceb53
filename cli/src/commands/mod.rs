//! One file per command: glue between arguments and the libraries.

pub mod info;
pub mod login;
pub mod pack;
pub mod publish;
pub mod search;
pub mod validate;
pub mod yank;
