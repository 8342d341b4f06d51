mod client_support;
mod common;
