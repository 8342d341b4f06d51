//! Project-bound tools in process (docs/PROTOCOL.md, project-bound tools): a `describe` with a
//! `project` binds the tool to that project root, and a call re-resolves the root before
//! anything reaches the plugin. Real directories (a test's temp dir), the real fixture plugin
//! working in them, and its `FIXTURE_LOG` as the proof of what reached it. Each test that
//! calls runs twice: with stored bindings, and with a gateway that seals them (as a `connect`
//! runner's: the box holds the project, bound again when it opens).

use crate::common;
use crate::gateway_support::*;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use webcodex_plugin_host::Host;
use webcodex_plugin_host::{Caller, Gateway, Scope, Scopes};

/// A project root with one fixture provider (`fx`, working in it) and another (`other`,
/// working elsewhere), the plugins' log beside them.
struct Project {
    dir: common::tempdir::TempDir,
    root: PathBuf,
    log: PathBuf,
    host: Arc<Host>,
    gateway: Gateway,
}

/// A gateway that stores its bindings, or one that seals them.
#[derive(Clone, Copy, PartialEq)]
enum Bindings {
    Stored,
    Sealed,
}

/// `gateway`, sealing its bindings when `bindings` says so.
fn with(gateway: Gateway, bindings: Bindings) -> Gateway {
    if bindings == Bindings::Sealed {
        assert!(gateway.seal_bindings(Arc::new(crate::gateway_sealed::HexSealer)));
    }
    gateway
}

impl Project {
    fn new(tag: &str) -> Project {
        Project::with(tag, Bindings::Stored)
    }

    fn with(tag: &str, bindings: Bindings) -> Project {
        let dir = temp_dir(tag);
        let root = dir.subdir("app");
        let elsewhere = dir.subdir("elsewhere");
        let log = dir.path("plugin.log");
        let mut fx = provider("fx", &["normal"]);
        fx.cwd = Some(root.clone());
        let mut other = provider("other", &["normal"]);
        other.cwd = Some(elsewhere);
        let host = host(config(
            vec![fx, other, provider("nowhere", &["normal"])],
            &[("FIXTURE_LOG", &log.display().to_string())],
        ));
        let gateway = with(Gateway::single(host.clone()), bindings);
        Project {
            dir,
            root,
            log,
            host,
            gateway,
        }
    }

    fn describe(&self, plugin: &str, project: &Path) -> Value {
        run(
            &self.gateway,
            json!({"action": "describe", "runner": "local", "plugin": plugin, "tool": "echo",
                   "project": project.display().to_string()}),
        )
        .into_json()
    }

    /// Describes `fx`/echo bound to `project`: the binding.
    fn bind(&self, project: &Path) -> String {
        let out = self.describe("fx", project);
        let binding = out["binding"]
            .as_str()
            .unwrap_or_else(|| panic!("describe failed: {out}"));
        // The test sealer's form: `wc_pbind_T` and the contents in hex, far longer than the
        // 22 random characters of a stored binding (which may begin with `T` too).
        let sealed = binding
            .strip_prefix("wc_pbind_T")
            .is_some_and(|hex| hex.len() > 22 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(sealed, self.gateway.seals_bindings(), "{binding}");
        binding.to_string()
    }

    fn call(&self, binding: &str) -> Value {
        run(&self.gateway, call(binding)).into_json()
    }

    /// The tools/call requests the plugins read.
    fn calls(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["method"] == "tools/call")
            .count()
    }

    /// The fault left the provider alive (a project failure retires nothing) and no zombie.
    fn assert_provider_unharmed(&self) {
        let set = self.host.providers();
        let fx = set.entry("fx").and_then(|e| e.provider()).unwrap();
        assert!(!fx.is_retired(), "a project failure retired the provider");
        common::assert_no_zombie_children_of_self();
    }
}

fn call(binding: &str) -> Value {
    json!({"action": "call", "binding": binding, "arguments": {"text": "hi"}})
}

/// A failure not started, with its code and recovery; nothing of the path in its message.
fn assert_refused(out: &Value, code_wanted: &str, recovery: Option<&str>, root: &Path) {
    assert_eq!(code(out), code_wanted, "{out}");
    assert_eq!(out["dispatch"], "not_started", "{out}");
    assert_eq!(out["recovery"].as_str(), recovery, "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains(&*root.to_string_lossy()),
        "the root's path in {message}"
    );
}

#[test]
fn an_unchanged_root_calls_as_today_and_describe_names_its_project() {
    unchanged_root(Project::new("project-ok"));
}

#[test]
fn an_unchanged_root_calls_as_today_and_describe_names_its_project_sealed() {
    unchanged_root(Project::with("project-ok-sealed", Bindings::Sealed));
}

fn unchanged_root(p: Project) {
    let out = p.describe("fx", &p.root);
    assert_eq!(
        keys(&out),
        [
            "binding",
            "plugin",
            "pluginName",
            "project",
            "projectTarget",
            "runner",
            "tool"
        ]
    );
    assert_eq!(out["project"], json!(p.root.display().to_string()));
    let target = out["projectTarget"].as_str().unwrap();
    assert!(
        target.starts_with("wc_proot_") && target.len() == 41,
        "{target}"
    );
    // Opaque: neither the path nor the numbers of the root in it.
    assert!(!target.contains("app"), "{target}");
    // One unchanged root, one target; a describe without a project has neither key.
    assert_eq!(p.describe("fx", &p.root)["projectTarget"], json!(target));
    let plain = ok(
        &p.gateway,
        json!({"action":"describe","runner":"local","plugin":"fx","tool":"echo"}),
    );
    assert_eq!(
        keys(&plain),
        ["binding", "plugin", "pluginName", "runner", "tool"]
    );

    let binding = out["binding"].as_str().unwrap();
    for n in 1..=3 {
        let result = ok(&p.gateway, call(binding));
        assert_eq!(result["structuredContent"]["text"], "hi", "{result}");
        assert_eq!(p.calls(), n);
    }
    // A call that names the target it was described with goes through too.
    let named = json!({"action": "call", "binding": binding, "arguments": {"text": "hi"},
                       "project_target": target});
    assert!(run(&p.gateway, named).is_success());
    assert_eq!(p.calls(), 4);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to rename a directory a plugin works in"
)]
fn a_renamed_root_is_changed_and_its_plugin_reads_nothing() {
    renamed_root(Project::new("project-renamed"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to rename a directory a plugin works in"
)]
fn a_renamed_root_is_changed_and_its_plugin_reads_nothing_sealed() {
    renamed_root(Project::with("project-renamed-sealed", Bindings::Sealed));
}

fn renamed_root(p: Project) {
    let binding = p.bind(&p.root);
    std::fs::rename(&p.root, p.dir.path("app-moved")).unwrap();
    let out = p.call(&binding);
    assert_refused(
        &out,
        "plugin_project_changed",
        Some("list_and_describe"),
        &p.root,
    );
    assert_eq!(
        out["error"]["message"],
        "the project root changed; the call was not dispatched (list and describe again)"
    );
    assert_eq!(p.calls(), 0, "the plugin read the call");
    // Described again: the project is not there any more.
    let out = p.describe("fx", &p.root);
    assert_refused(&out, "plugin_project_unavailable", None, &p.root);
    p.assert_provider_unharmed();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to remove a directory a plugin works in"
)]
fn a_replaced_root_is_changed_until_the_runner_reloads() {
    replaced_root(Project::new("project-replaced"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to remove a directory a plugin works in"
)]
fn a_replaced_root_is_changed_until_the_runner_reloads_sealed() {
    replaced_root(Project::with("project-replaced-sealed", Bindings::Sealed));
}

fn replaced_root(p: Project) {
    let binding = p.bind(&p.root);
    // Another directory of the same name (the old one moved away, then removed, so that a
    // file system that reuses inode numbers could give the new one the old number).
    std::fs::rename(&p.root, p.dir.path("app-old")).unwrap();
    std::fs::create_dir(&p.root).unwrap();
    std::fs::remove_dir(p.dir.path("app-old")).unwrap();
    let out = p.call(&binding);
    assert_refused(
        &out,
        "plugin_project_changed",
        Some("list_and_describe"),
        &p.root,
    );
    assert_eq!(p.calls(), 0, "the plugin read the call");
    // The plugin still works in the directory it was started in: not this project now.
    let out = p.describe("fx", &p.root);
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    assert!(
        out["error"]["message"].as_str().unwrap().contains("reload"),
        "{out}"
    );
    p.assert_provider_unharmed();
    // Reloaded, the plugin starts in the new root: bound and called again.
    ok(&p.gateway, json!({"action": "reload", "runner": "local"}));
    let binding = p.bind(&p.root);
    ok(&p.gateway, call(&binding));
    assert_eq!(p.calls(), 1);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to remove a directory a plugin works in"
)]
fn a_deleted_root_is_unavailable() {
    deleted_root(Project::new("project-deleted"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to remove a directory a plugin works in"
)]
fn a_deleted_root_is_unavailable_sealed() {
    deleted_root(Project::with("project-deleted-sealed", Bindings::Sealed));
}

fn deleted_root(p: Project) {
    let binding = p.bind(&p.root);
    std::fs::write(p.root.join("file.txt"), "x").unwrap();
    std::fs::remove_dir_all(&p.root).unwrap();
    let out = p.call(&binding);
    assert_refused(&out, "plugin_project_unavailable", None, &p.root);
    assert_eq!(p.calls(), 0, "the plugin read the call");
    p.assert_provider_unharmed();
}

#[cfg(unix)]
#[test]
fn a_symlink_root_that_points_elsewhere_is_changed() {
    symlink_root("project-symlink", Bindings::Stored);
}

#[cfg(unix)]
#[test]
fn a_symlink_root_that_points_elsewhere_is_changed_sealed() {
    symlink_root("project-symlink-sealed", Bindings::Sealed);
}

#[cfg(unix)]
fn symlink_root(tag: &str, bindings: Bindings) {
    let dir = temp_dir(tag);
    let (a, b) = (dir.subdir("a"), dir.subdir("b"));
    let link = dir.path("current");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let log = dir.path("plugin.log");
    let mut fx = provider("fx", &["normal"]);
    fx.cwd = Some(link.clone());
    let gw = with(
        Gateway::single(host(config(
            vec![fx],
            &[("FIXTURE_LOG", &log.display().to_string())],
        ))),
        bindings,
    );
    let describe = |project: &Path| {
        run(
            &gw,
            json!({"action": "describe", "runner": "local", "plugin": "fx", "tool": "echo",
                   "project": project.display().to_string()}),
        )
        .into_json()
    };
    // Through the link and through its target: one root, one target.
    let through_link = describe(&link);
    let through_target = describe(&a);
    assert_eq!(
        through_link["projectTarget"], through_target["projectTarget"],
        "{through_link} {through_target}"
    );
    let by_link = through_link["binding"].as_str().unwrap().to_string();
    let by_target = through_target["binding"].as_str().unwrap().to_string();
    ok(&gw, call(&by_link));

    // The link swapped to another directory (atomically, as a deploy does).
    let next = dir.path("current.next");
    std::os::unix::fs::symlink(&b, &next).unwrap();
    std::fs::rename(&next, &link).unwrap();
    let out = run(&gw, call(&by_link)).into_json();
    assert_refused(
        &out,
        "plugin_project_changed",
        Some("list_and_describe"),
        &a,
    );
    // The binding made through the target itself still reaches the directory it named.
    ok(&gw, call(&by_target));

    // The directory moved and the link follows it: the same directory under another path is
    // a moved root.
    std::fs::rename(&a, dir.path("a-moved")).unwrap();
    let next = dir.path("current.next");
    std::os::unix::fs::symlink(dir.path("a-moved"), &next).unwrap();
    std::fs::rename(&next, &link).unwrap();
    let out = run(&gw, call(&by_link)).into_json();
    assert_refused(
        &out,
        "plugin_project_changed",
        Some("list_and_describe"),
        &a,
    );
    let out = run(&gw, call(&by_target)).into_json();
    assert_refused(
        &out,
        "plugin_project_changed",
        Some("list_and_describe"),
        &a,
    );

    // A symbolic link put where the root was, to the moved directory: changed too.
    std::os::unix::fs::symlink(dir.path("a-moved"), &a).unwrap();
    let out = run(&gw, call(&by_target)).into_json();
    assert_refused(
        &out,
        "plugin_project_changed",
        Some("list_and_describe"),
        &a,
    );
    let calls = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("tools/call"))
        .count();
    assert_eq!(
        calls, 2,
        "only the two calls of unchanged roots reached the plugin"
    );
    common::assert_no_zombie_children_of_self();
}

#[test]
fn a_describe_for_a_root_that_is_not_the_providers_cwd_is_refused() {
    mismatched_root(Project::new("project-mismatch"));
}

#[test]
fn a_describe_for_a_root_that_is_not_the_providers_cwd_is_refused_sealed() {
    mismatched_root(Project::with("project-mismatch-sealed", Bindings::Sealed));
}

fn mismatched_root(p: Project) {
    // Another existing directory: the plugin does not work there.
    let out = p.describe("other", &p.root);
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    let out = p.describe("nowhere", &p.root);
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    let out = p.describe("fx", &p.dir.path("elsewhere"));
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    // A subdirectory of the root is another root.
    let sub = p.root.join("src");
    std::fs::create_dir(&sub).unwrap();
    let out = p.describe("fx", &sub);
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    // Nothing there, or not a directory: unavailable.
    let out = p.describe("fx", &p.dir.path("absent"));
    assert_refused(&out, "plugin_project_unavailable", None, &p.root);
    let file = p.dir.write("file.txt", "x");
    let out = p.describe("fx", &file);
    assert_refused(&out, "plugin_project_unavailable", None, &p.root);
    // Relative: the parameters are wrong.
    let out = run(
        &p.gateway,
        json!({"action":"describe","runner":"local","plugin":"fx","tool":"echo",
               "project":"app"}),
    )
    .into_json();
    assert_eq!(code(&out), "invalid_arguments", "{out}");
    // The project as named with `..` and a trailing separator is the same root.
    let roundabout = p.root.join("..").join("app").join("");
    let out = p.describe("fx", &roundabout);
    assert!(out["binding"].is_string(), "{out}");
    ok(&p.gateway, call(out["binding"].as_str().unwrap()));
    assert_eq!(p.calls(), 1);
}

#[test]
fn project_scopes_are_checked_and_an_unbound_binding_needs_none_of_them() {
    project_scopes(Project::new("project-scopes"));
}

#[test]
fn project_scopes_are_checked_and_an_unbound_binding_needs_none_of_them_sealed() {
    project_scopes(Project::with("project-scopes-sealed", Bindings::Sealed));
}

fn project_scopes(p: Project) {
    let caller = |scopes: &str| Caller::new(Scopes::parse(scopes).unwrap());
    let describe = json!({"action": "describe", "runner": "local", "plugin": "fx",
                          "tool": "echo", "project": p.root.display().to_string()});
    let out = p
        .gateway
        .plugin_tool(&caller("plugin:inspect"), &describe)
        .into_json();
    assert_eq!(code(&out), "insufficient_scope", "{out}");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("project:read"));
    // project:read alone is not plugin:inspect.
    let out = p
        .gateway
        .plugin_tool(&caller("project:read,project:write"), &describe)
        .into_json();
    assert_eq!(code(&out), "insufficient_scope", "{out}");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("plugin:inspect"));
    let out = p
        .gateway
        .plugin_tool(&caller("plugin:inspect,project:read"), &describe);
    assert!(out.is_success(), "{}", out.to_json());
    let bound = out.into_json()["binding"].as_str().unwrap().to_string();

    let out = p
        .gateway
        .plugin_tool(&caller("plugin:invoke,project:read"), &call(&bound))
        .into_json();
    assert_eq!(code(&out), "insufficient_scope", "{out}");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("project:write"));
    let out = p
        .gateway
        .plugin_tool(&caller("project:write"), &call(&bound))
        .into_json();
    assert_eq!(code(&out), "insufficient_scope", "{out}");
    assert_eq!(p.calls(), 0);
    assert!(p
        .gateway
        .plugin_tool(&caller("plugin:invoke,project:write"), &call(&bound))
        .is_success());
    assert_eq!(p.calls(), 1);

    // Without a project: today's scopes, and nothing else.
    let plain = json!({"action":"describe","runner":"local","plugin":"fx","tool":"echo"});
    let out = p.gateway.plugin_tool(&caller("plugin:inspect"), &plain);
    let unbound = out.into_json()["binding"].as_str().unwrap().to_string();
    let invoker = Caller::new(Scopes::none().with(Scope::Invoke));
    assert!(p
        .gateway
        .plugin_tool(&invoker, &call(&unbound))
        .is_success());
    assert_eq!(p.calls(), 2);
    // A call that names a project target goes only through a binding bound to it.
    let target = p.describe("fx", &p.root)["projectTarget"].clone();
    let named = json!({"action": "call", "binding": unbound, "arguments": {"text": "hi"},
                       "project_target": target});
    let out = run(&p.gateway, named).into_json();
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    let other = "wc_proot_ffffffffffffffffffffffffffffffff";
    let named = json!({"action": "call", "binding": bound, "arguments": {"text": "hi"},
                       "project_target": other});
    let out = run(&p.gateway, named).into_json();
    assert_refused(&out, "plugin_project_mismatch", None, &p.root);
    assert_eq!(p.calls(), 2);
}
