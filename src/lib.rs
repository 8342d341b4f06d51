//! Synchronous host for `webcodex-plugin-v1` Native Tool Plugins.

#![warn(missing_docs)]

pub mod bench;
pub mod catalog;
pub mod env;
pub mod error;
pub mod frame;
pub mod gateway;
pub mod host;
pub mod provider;
pub mod scaffold;
pub mod sdk;

pub use error::{Dispatch, Error, ErrorCode, Phase, Result};
