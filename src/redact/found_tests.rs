//! Tests of the credentials found among the files git does not track.
use super::*;

const KEY: &str = include_str!("../../tests/data/github_app/app-key.pem");

fn sa(key_id: &str) -> String {
    serde_json::json!({"type": "service_account", "private_key_id": key_id, "private_key": KEY}).to_string()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn untracked_and_ignored_credentials_are_found_and_nothing_else() {
    let (dir, ws, _) = crate::git::tests::fixture(|d| {
        std::fs::write(d.join(".gitignore"), "gha-creds-*.json\nnode_modules/\n").unwrap();
        std::fs::write(d.join("tracked.txt"), "plain\n").unwrap();
    });
    let root = dir.path();
    write(root, "gha-creds-aaaa.json", &sa("one"));
    write(root, "gha-creds-bbbb.json", r#"{"type": "external_account", "audience": "x"}"#);
    write(root, "deploy/id_key", KEY);
    write(root, "notes.txt", "the token is tok-Known-12345 here\n");
    write(root, "readme.md", "nothing here\n");
    write(root, "node_modules/.cache.json", r#"{"refresh_token": "rt-in-an-ignored-dir"}"#);
    write(root, "node_modules/pkg/test/key.pem", KEY);
    write(root, "big.json", &format!("{{\"private_key\": \"{}\", \"pad\": \"{}\"}}", "k", "x".repeat(70_000)));
    write(root, "tracked.txt", KEY);
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "creds.json", &sa("outside"));
    std::os::unix::fs::symlink(outside.path().join("creds.json"), root.join("linked.json")).unwrap();
    let (dirty, ignored) = ws.intake_status().unwrap();
    let redactor = Redactor::new();
    redactor.add("tok-Known-12345");
    let found = scan_paths(ws.root(), &untracked(&ws, &dirty), &ignored, &redactor);
    assert_eq!(
        found,
        ["deploy/id_key", "gha-creds-aaaa.json", "gha-creds-bbbb.json", "node_modules/.cache.json", "notes.txt"],
        "a big file, a link, a tracked file, a plain file and a file deep in an ignored directory are not"
    );
    let line = KEY.lines().nth(5).unwrap();
    for s in [line, "rt-in-an-ignored-dir"] {
        assert!(!redactor.apply(s).contains(s), "{s} is not registered");
    }
}

#[test]
fn a_file_holding_a_secret_of_another_found_file_is_found_too() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    write(root, "a-copy.txt", "refresh: 1//0gSharedRefresh\n");
    write(root, "z-creds.json", r#"{"refresh_token": "1//0gSharedRefresh"}"#);
    let untracked = ["a-copy.txt".to_string(), "z-creds.json".to_string()];
    let found = scan_paths(root, &untracked, &[], &Redactor::new());
    assert_eq!(found, ["a-copy.txt", "z-creds.json"]);
}

#[test]
fn the_budget_bounds_what_is_read() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let names: Vec<String> = (0..2100).map(|i| format!("f{i:04}.json")).collect();
    for n in &names {
        write(root, n, r#"{"client_secret": "cs-0123456789"}"#);
    }
    let found = scan_paths(root, &names, &[], &Redactor::new());
    assert_eq!(found.len(), 2048, "at most the budget's files are read");
}
