//! The integration tests, in one binary: they drive the real `hone` binary against a mock
//! model server and real git repositories in temp dirs.

#[macro_use]
mod common;
mod suite;
