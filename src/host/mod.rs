//! One runner's committed provider set.
