//! One plugin process.
