//! The one source of random ids in the workspace: bindings, runner instance ids, the seed of
//! trace ids, runner-link instance ids, bearer tokens from `token new` and reconnect jitter all
//! take their bytes from [`random_bytes`], the operating system's generator (`getrandom`).

/// `N` bytes from the operating system's random source; `None` when it failed (a caller says
/// what it does without: refuse, or fall back to something unique but guessable).
pub fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::random_bytes;

    #[test]
    fn draws_differ() {
        let a: [u8; 16] = random_bytes().expect("the system's random source");
        let b: [u8; 16] = random_bytes().expect("the system's random source");
        assert_ne!(a, b);
    }
}
