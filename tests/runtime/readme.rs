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

/// Every `.rs` file under `dir`, depth first.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, test)` for every `#[ignore = …]` test of the workspace (`tests/` and each crate's
/// `tests/`), the file as a path from the repository's root: the name of the first `fn` after
/// the attribute.
fn ignored_tests(root: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut files = Vec::new();
    rust_files(&std::path::Path::new(root).join("tests"), &mut files);
    for krate in std::fs::read_dir(format!("{root}/crates")).expect("crates/") {
        rust_files(&krate.expect("a crate").path().join("tests"), &mut files);
    }
    files.sort();
    for path in files {
        // The README writes paths with `/` on every platform.
        let binary = path
            .strip_prefix(root)
            .expect("under the root")
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let text = std::fs::read_to_string(&path).expect("a test file");
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if !line.trim_start().starts_with("#[ignore") {
                continue;
            }
            let name = lines
                .by_ref()
                .find_map(|l| {
                    let rest = l.trim_start().strip_prefix("fn ")?;
                    Some(rest[..rest.find('(')?].to_string())
                })
                .unwrap_or_else(|| panic!("{binary}: an #[ignore] with no fn after it"));
            found.push((binary.clone(), name));
        }
    }
    found
}

/// The rows of the README's table of ignored tests: `(file, the backquoted test names that
/// open its second cell)`.
fn readme_ignored_table(readme: &str) -> Vec<(String, Vec<String>)> {
    let start = readme
        .find("| test file | ignored tests | why |")
        .expect("the README has its table of ignored tests");
    readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let binary = cells[1].trim_matches('`');
            // The names come first; a description in parentheses may follow.
            let names = cells[2].split(" (").next().unwrap_or("");
            let names = names
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|n| {
                    n.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                })
                .map(str::to_string)
                .collect();
            (binary.to_string(), names)
        })
        .collect()
}

#[test]
fn the_readme_lists_every_ignored_test_and_no_other() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let ignored = ignored_tests(root);
    let table = readme_ignored_table(&readme);
    assert!(!ignored.is_empty(), "the scan found the ignored tests");
    for (binary, test) in &ignored {
        assert!(
            table
                .iter()
                .any(|(b, names)| b == binary && names.contains(test)),
            "{binary}: ignored test `{test}` is missing from the README's table of \
             ignored tests (section \"Two commands\"): add it to the row of `{binary}`"
        );
    }
    for (binary, names) in &table {
        assert!(
            !names.is_empty(),
            "the README row of {binary} names no test"
        );
        for name in names {
            assert!(
                ignored.iter().any(|(b, t)| b == binary && t == name),
                "the README's table names `{name}` in {binary}, which is not an ignored \
                 test there"
            );
        }
    }
    let files: std::collections::BTreeSet<&str> = ignored.iter().map(|(b, _)| b.as_str()).collect();
    let count = format!("{} in {} test\nfiles", ignored.len(), files.len());
    let count_one_line = count.replace('\n', " ");
    assert!(
        readme.contains(&count) || readme.contains(&count_one_line),
        "the README says how many tests are ignored: \"{count_one_line}\""
    );
}
