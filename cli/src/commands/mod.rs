//! One file per command: glue between arguments and the libraries.

pub mod add;
pub mod info;
pub mod init;
pub mod install;
pub mod key;
pub mod list;
pub mod login;
pub mod mirror;
pub mod outdated;
pub mod pack;
pub mod publish;
pub mod search;
pub mod sign;
pub mod tree;
pub mod validate;
pub mod vendor;
pub mod verify;
pub mod yank;
