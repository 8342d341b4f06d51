//! `init`: a local, offline plugin scaffold (docs/PROTOCOL.md §9.4, command-line tool).
//!
//! [`create`] writes a small echo plugin in TypeScript, Python or Rust into a new or empty
//! directory and returns a ready-to-paste `[[plugins.providers]]` block for runner.toml.
//! Every generated plugin speaks `webcodex-plugin-v1` with no package from outside the project
//! (the TypeScript one carries its SDK as `src/sdk.ts`; its only npm packages are the pinned
//! build tools; the Rust one carries the plugin SDK crate, `webcodex-plugin-sdk`, as a local path
//! crate, so it needs crates.io only for serde, serde_json and memchr), prints only protocol
//! lines to stdout and declares its schemas in Schema Profile v1.
//!
//! - Local only: the templates are embedded in this binary; nothing is downloaded or installed.
//! - A target that exists and is not an empty directory is refused before anything is written.
//! - The id is the explicit one, validated, or one derived from the directory name; both must
//!   match `^[a-z0-9_.-]{1,64}$`, which also makes them safe to embed in every template.
//! - The provider block is serialized by the `toml` crate, so any path is escaped correctly.
//!
//! If writing fails half-way, the files written so far, the subdirectories made for them and
//! the target directory itself (when `create` made it) are removed again, best effort, so that
//! a retry does not meet a non-empty target. Missing parents of the target are left in place.

mod block;
mod error;
mod id;

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use error::ScaffoldError;
pub use id::{derive_id, validate_id};

use block::{provider_block, ProviderEntry};

/// The exact `typescript` version the TypeScript scaffold pins (a devDependency).
#[cfg(test)]
pub const TS_TYPESCRIPT_VERSION: &str = "5.9.3";
/// The exact `@types/node` version the TypeScript scaffold pins (a devDependency).
#[cfg(test)]
pub const TS_TYPES_NODE_VERSION: &str = "20.19.9";

/// The language of a scaffold; parsed from `ts`, `python` or `rust`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lang {
    /// TypeScript on Node.js: `package.json`, `tsconfig.json`, `src/plugin.ts`.
    TypeScript,
    /// Python 3, standard library only: `plugin.py`.
    Python,
    /// Rust on the plugin SDK: `Cargo.toml`, `src/main.rs`, the SDK in `webcodex-plugin-sdk/`.
    Rust,
}

impl Lang {
    /// Every language, in CLI order.
    pub const ALL: [Lang; 3] = [Lang::TypeScript, Lang::Python, Lang::Rust];

    /// The CLI spelling: `ts`, `python` or `rust`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::TypeScript => "ts",
            Lang::Python => "python",
            Lang::Rust => "rust",
        }
    }
}

impl Lang {
    /// The build command to run in the scaffold's directory before the provider can start,
    /// or `None` when the plugin runs from source (Python).
    pub fn build_command(self) -> Option<&'static str> {
        match self {
            Lang::TypeScript => Some("npm install && npm run build"),
            Lang::Python => None,
            Lang::Rust => Some("cargo build --release"),
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Lang {
    type Err = ScaffoldError;

    /// Accepts exactly `ts`, `python` or `rust`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Lang::ALL
            .into_iter()
            .find(|lang| lang.as_str() == s)
            .ok_or_else(|| ScaffoldError::UnknownLang {
                given: s.to_owned(),
            })
    }
}

/// What [`create`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaffold {
    /// The provider id (the explicit one, or the one derived from the directory name).
    pub id: String,
    /// The canonicalized target directory (the provider's `cwd`).
    pub dir: PathBuf,
    /// The files written, as absolute paths under the canonicalized target directory.
    pub files: Vec<PathBuf>,
    /// A `[[plugins.providers]]` block for runner.toml, serialized by the `toml` crate.
    pub provider_block: String,
}

/// One embedded template: where it goes (relative, `/`-separated) and its text.
struct Template {
    path: &'static str,
    text: &'static str,
}

const PYTHON: &[Template] = &[
    Template {
        path: "plugin.py",
        text: include_str!("templates/python/plugin.py.tmpl"),
    },
    Template {
        path: "README.md",
        text: include_str!("templates/python/README.md.tmpl"),
    },
    Template {
        path: ".gitignore",
        text: include_str!("templates/python/gitignore.tmpl"),
    },
];

const TYPESCRIPT: &[Template] = &[
    Template {
        path: "package.json",
        text: include_str!("templates/typescript/package.json.tmpl"),
    },
    Template {
        path: "tsconfig.json",
        text: include_str!("templates/typescript/tsconfig.json.tmpl"),
    },
    Template {
        path: "src/plugin.ts",
        text: include_str!("templates/typescript/plugin.ts.tmpl"),
    },
    Template {
        path: "src/sdk.ts",
        text: include_str!("templates/typescript/sdk.ts.tmpl"),
    },
    Template {
        path: "README.md",
        text: include_str!("templates/typescript/README.md.tmpl"),
    },
    Template {
        path: ".gitignore",
        text: include_str!("templates/typescript/gitignore.tmpl"),
    },
];

const RUST: &[Template] = &[
    Template {
        path: "Cargo.toml",
        text: include_str!("templates/rust/Cargo.toml.tmpl"),
    },
    Template {
        path: "src/main.rs",
        text: include_str!("templates/rust/main.rs.tmpl"),
    },
    Template {
        path: "README.md",
        text: include_str!("templates/rust/README.md.tmpl"),
    },
    Template {
        path: ".gitignore",
        text: include_str!("templates/rust/gitignore.tmpl"),
    },
    Template {
        path: "webcodex-plugin-sdk/Cargo.toml",
        text: include_str!("templates/rust/sdk.Cargo.toml.tmpl"),
    },
];

/// Where the Rust scaffold's copy of the plugin SDK goes: a local path crate that its
/// `Cargo.toml` depends on. Its sources are written as the SDK crate holds them (not rendered).
const RUST_SDK_DIR: &str = "webcodex-plugin-sdk";

fn templates(lang: Lang) -> &'static [Template] {
    match lang {
        Lang::TypeScript => TYPESCRIPT,
        Lang::Python => PYTHON,
        Lang::Rust => RUST,
    }
}

/// The package name the scaffold declares (npm or Cargo), derived from the id; empty for
/// Python, which has no package manifest.
fn package_name(id: &str, lang: Lang) -> String {
    match lang {
        Lang::TypeScript => id::npm_package_name(id),
        Lang::Python => String::new(),
        Lang::Rust => id::crate_name(id),
    }
}

/// Fills `{{id}}`, `{{package}}` and `{{sdk_version}}` (the plugin SDK's version). The first two
/// match `[a-z0-9_.-]+` and the version is a semver string, so they need no escaping in JSON,
/// TOML, Python, TypeScript, Rust or Markdown.
fn render(text: &str, id: &str, package: &str) -> String {
    text.replace("{{id}}", id)
        .replace("{{package}}", package)
        .replace("{{sdk_version}}", webcodex_plugin_sdk::source::VERSION)
}

/// The files a scaffold holds besides its templates, written verbatim: the Rust scaffold's copy
/// of the plugin SDK's sources.
fn verbatim_files(lang: Lang) -> Vec<(String, &'static str)> {
    match lang {
        Lang::Rust => webcodex_plugin_sdk::source::FILES
            .iter()
            .map(|(path, text)| (format!("{RUST_SDK_DIR}/{path}"), *text))
            .collect(),
        Lang::TypeScript | Lang::Python => Vec::new(),
    }
}

/// `relative` (`/`-separated) under `dir`.
fn under(dir: &Path, relative: &str) -> PathBuf {
    relative
        .split('/')
        .fold(dir.to_path_buf(), |path, part| path.join(part))
}

/// Creates a `lang` echo plugin in `dir` and returns the files written and the provider block.
///
/// `id` defaults to one derived from the directory name ([`derive_id`]); an explicit id is
/// checked with [`validate_id`]. `dir` and its parents are created when missing. Fails,
/// before writing anything, when the id is invalid, when `dir` exists and is not a directory,
/// or when it is a non-empty directory.
///
/// The provider block's `cwd` is the canonicalized `dir`; its command is `python3 plugin.py`,
/// `node dist/plugin.js`, or the absolute path of the Rust release binary.
pub fn create(dir: &Path, id: Option<&str>, lang: Lang) -> Result<Scaffold, ScaffoldError> {
    let id = match id {
        Some(id) => {
            validate_id(id)?;
            id.to_owned()
        }
        None => derive_id(dir)?,
    };
    let created_dir = prepare_target(dir)?;
    let mut written = Written {
        files: Vec::new(),
        dirs: Vec::new(),
        done: false,
    };
    if created_dir {
        written.dirs.push(dir.to_path_buf());
    }
    let cwd = fs::canonicalize(dir).map_err(|e| ScaffoldError::io(dir, e))?;
    let cwd = strip_verbatim_prefix(cwd);
    let cwd_text = cwd
        .to_str()
        .ok_or_else(|| ScaffoldError::NonUtf8Path { path: cwd.clone() })?
        .to_owned();
    let package = package_name(&id, lang);
    let (command, args) = match lang {
        Lang::Python => ("python3".to_owned(), vec!["plugin.py".to_owned()]),
        Lang::TypeScript => ("node".to_owned(), vec!["dist/plugin.js".to_owned()]),
        Lang::Rust => {
            let binary = format!("{package}{}", std::env::consts::EXE_SUFFIX);
            let path = release_dir(&cwd, &|name| std::env::var_os(name)).join(binary);
            let path = path
                .into_os_string()
                .into_string()
                .map_err(|p| ScaffoldError::NonUtf8Path { path: p.into() })?;
            (path, Vec::new())
        }
    };
    let provider_block = provider_block(&ProviderEntry {
        id: id.clone(),
        name: id.clone(),
        command,
        args,
        cwd: cwd_text,
    })?;
    for template in templates(lang) {
        let path = under(&cwd, template.path);
        written.write(&path, &render(template.text, &id, &package))?;
    }
    for (relative, text) in verbatim_files(lang) {
        written.write(&under(&cwd, &relative), text)?;
    }
    written.done = true;
    Ok(Scaffold {
        id,
        dir: cwd,
        files: std::mem::take(&mut written.files),
        provider_block,
    })
}

/// Where `cargo build --release` run in `cwd` puts the binary: `release` under the target
/// directory that `CARGO_TARGET_DIR`, else `CARGO_BUILD_TARGET_DIR`, names (relative to `cwd`
/// when relative), else under `cwd/target`; under a directory named after the target triple
/// first when `CARGO_BUILD_TARGET` names one (a `.json` target spec: its file stem). (A Cargo
/// config file's `build.target-dir` or `build.target` is not read: README, Rust scaffold.)
pub(crate) fn release_dir(cwd: &Path, var: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    let mut dir = ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"]
        .iter()
        .find_map(|name| set(name))
        .map_or_else(|| cwd.join("target"), |dir| cwd.join(dir));
    if let Some(triple) = set("CARGO_BUILD_TARGET") {
        let spec = Path::new(&triple);
        match spec.extension().filter(|e| *e == "json") {
            Some(_) => dir.push(spec.file_stem().unwrap_or(spec.as_os_str())),
            None => dir.push(&triple),
        }
    }
    dir.join("release")
}

/// Checks the target and creates it when missing; true when it was created.
fn prepare_target(dir: &Path) -> Result<bool, ScaffoldError> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => Err(ScaffoldError::NotADirectory {
            path: dir.to_path_buf(),
        }),
        Ok(_) => {
            let mut entries = fs::read_dir(dir).map_err(|e| ScaffoldError::io(dir, e))?;
            match entries.next() {
                None => Ok(false),
                Some(Ok(_)) => Err(ScaffoldError::NotEmpty {
                    dir: dir.to_path_buf(),
                }),
                Some(Err(e)) => Err(ScaffoldError::io(dir, e)),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(|e| ScaffoldError::io(dir, e))?;
            Ok(true)
        }
        Err(e) => Err(ScaffoldError::io(dir, e)),
    }
}

/// On Windows, `canonicalize` returns `\\?\C:\…`; runner.toml wants the ordinary `C:\…`.
fn strip_verbatim_prefix(path: PathBuf) -> PathBuf {
    if cfg!(windows) {
        if let Some(rest) = path.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
            if rest.as_bytes().get(1) == Some(&b':') {
                return PathBuf::from(rest);
            }
        }
    }
    path
}

/// Files and directories written so far; removed again (best effort) unless `done`.
struct Written {
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    done: bool,
}

impl Written {
    /// Writes a new file (never overwriting one), creating its missing parent directories.
    fn write(&mut self, path: &Path, text: &str) -> Result<(), ScaffoldError> {
        let missing: Vec<&Path> = path
            .ancestors()
            .skip(1)
            .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
            .collect();
        for dir in missing.into_iter().rev() {
            fs::create_dir(dir).map_err(|e| ScaffoldError::io(dir, e))?;
            self.dirs.push(dir.to_path_buf());
        }
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| ScaffoldError::io(path, e))?;
        self.files.push(path.to_path_buf());
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| ScaffoldError::io(path, e))
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for file in self.files.iter().rev() {
            let _ = fs::remove_file(file);
        }
        // remove_dir only removes empty directories: nothing we did not write is lost.
        for dir in self.dirs.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod scaffolded;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lang_parses_only_the_cli_spellings() {
        assert_eq!("ts".parse::<Lang>().unwrap(), Lang::TypeScript);
        assert_eq!("python".parse::<Lang>().unwrap(), Lang::Python);
        assert_eq!("rust".parse::<Lang>().unwrap(), Lang::Rust);
        let err = "typescript".parse::<Lang>().unwrap_err();
        assert!(err.to_string().contains("ts, python or rust"), "{err}");
        for lang in Lang::ALL {
            assert_eq!(lang.to_string().parse::<Lang>().unwrap(), lang);
        }
    }

    #[test]
    fn rendered_templates_have_no_placeholders_left() {
        for lang in Lang::ALL {
            let package = package_name("my.id", lang);
            for template in templates(lang) {
                let text = render(template.text, "my.id", &package);
                assert!(!text.contains("{{"), "{lang} {}", template.path);
            }
        }
    }

    #[test]
    fn templates_embed_the_id_and_package_name() {
        let rust = render(RUST[0].text, "my.id", &package_name("my.id", Lang::Rust));
        assert!(rust.contains("name = \"my-id\""), "{rust}");
        let ts = TYPESCRIPT[0].text;
        let json: serde_json::Value =
            serde_json::from_str(&render(ts, "_id", &package_name("_id", Lang::TypeScript)))
                .unwrap();
        assert_eq!(json["name"], "plugin-_id");
        assert_eq!(json["scripts"]["build"], "tsc");
        assert!(json.get("dependencies").is_none(), "{json}");
        assert_eq!(json["devDependencies"]["typescript"], TS_TYPESCRIPT_VERSION);
        assert_eq!(
            json["devDependencies"]["@types/node"],
            TS_TYPES_NODE_VERSION
        );
    }

    /// The copy of the plugin SDK that the Rust scaffold writes declares the SDK crate's name,
    /// version, rust-version and dependencies, at the workspace's version requirements, with no feature the
    /// workspace does not build them with.
    #[test]
    fn the_rust_scaffolds_sdk_manifest_matches_the_sdk_crate() {
        let read = |path: &str| -> toml::Table {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(path);
            toml::from_str(&fs::read_to_string(&path).expect("manifest readable")).unwrap()
        };
        let sdk = read("crates/sdk/Cargo.toml");
        let workspace = read("Cargo.toml");
        let template = RUST
            .iter()
            .find(|t| t.path == format!("{RUST_SDK_DIR}/Cargo.toml"))
            .expect("the SDK manifest template");
        let copy: toml::Table = toml::from_str(&render(template.text, "x", "x")).unwrap();
        assert_eq!(copy["package"]["name"], sdk["package"]["name"]);
        assert_eq!(
            copy["package"]["rust-version"],
            sdk["package"]["rust-version"]
        );
        assert_eq!(
            copy["package"]["version"].as_str(),
            Some(webcodex_plugin_sdk::source::VERSION)
        );
        let wanted = sdk["dependencies"].as_table().unwrap();
        let written = copy["dependencies"].as_table().unwrap();
        assert_eq!(
            written.keys().collect::<std::collections::BTreeSet<_>>(),
            wanted.keys().collect::<std::collections::BTreeSet<_>>()
        );
        let version = |dep: &toml::Value| match dep {
            toml::Value::String(v) => v.clone(),
            other => other["version"].as_str().unwrap().to_owned(),
        };
        let features = |dep: &toml::Value| -> Vec<String> {
            dep.get("features")
                .and_then(toml::Value::as_array)
                .map(|f| f.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default()
        };
        for (name, dep) in written {
            let pinned = &workspace["workspace"]["dependencies"][name];
            assert_eq!(version(dep), version(pinned), "{name}");
            let allowed = features(pinned);
            assert!(
                features(dep).iter().all(|f| allowed.contains(f)),
                "{name}: {dep}"
            );
        }
        // Every SDK source file is written, under the directory the manifest names.
        let scaffold: toml::Table = toml::from_str(&render(RUST[0].text, "x", "x")).unwrap();
        assert_eq!(
            scaffold["dependencies"]["webcodex-plugin-sdk"]["path"].as_str(),
            Some(RUST_SDK_DIR)
        );
        let files = verbatim_files(Lang::Rust);
        assert!(files
            .iter()
            .any(|(p, _)| p == "webcodex-plugin-sdk/src/lib.rs"));
        assert_eq!(files.len(), webcodex_plugin_sdk::source::FILES.len());
    }

    #[test]
    fn every_scaffold_has_a_readme_explaining_check() {
        for lang in Lang::ALL {
            let readme = templates(lang)
                .iter()
                .find(|t| t.path == "README.md")
                .unwrap();
            assert!(readme.text.contains("webcodex-plugin check"), "{lang}");
        }
    }
}
