//! The README's embedding example is the one `src/lib.rs` compiles as a doctest
//! (`ReadmeEmbeddingExample`): the two copies must stay equal.

/// The body of the first fenced block that opens with `fence` in `text`, without its fences.
fn fenced_block<'a>(text: &'a str, fence: &str) -> &'a str {
    let start = text.find(fence).expect("the fence is there") + fence.len();
    let body = &text[start..];
    let body = body.strip_prefix('\n').expect("the fence ends its line");
    &body[..body.find("```").expect("the block is closed")]
}

#[test]
fn the_readme_embedding_example_is_the_compiled_doctest() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let lib = std::fs::read_to_string(format!("{root}/src/lib.rs")).expect("src/lib.rs");
    let doctest: String = lib
        .lines()
        .skip_while(|l| !l.starts_with("/// The README's embedding example"))
        .take_while(|l| l.starts_with("///"))
        .map(|l| l.strip_prefix("///").unwrap_or(l))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let example = fenced_block(&readme, "```rust,no_run");
    assert!(
        !example.trim().is_empty(),
        "the README has an embedding example"
    );
    assert_eq!(
        fenced_block(&doctest, "```rust,no_run"),
        example,
        "src/lib.rs ReadmeEmbeddingExample must carry the README's example verbatim"
    );
}
