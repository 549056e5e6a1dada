//! Tests of the credentials read from a repository's git config.
use super::*;
use base64::Engine;

const CHECKOUT_TOKEN: &str = "ghs_CheckoutPersisted0123";
const JOB_TOKEN: &str = "glcbt-64_RunnerJobToken";

fn header() -> String {
    let pair = format!("x-access-token:{CHECKOUT_TOKEN}");
    format!("AUTHORIZATION: basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
}

fn masked(r: &Redactor, s: &str) -> bool {
    !r.apply(s).contains(s)
}

#[test]
fn checkout_headers_and_runner_urls_in_the_config_are_registered() {
    let (dir, ws, _) = crate::git::tests::fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let config = dir.path().join(".git/config");
    let orig = std::fs::read_to_string(&config).unwrap();
    let added = format!(
        "[remote \"origin\"]\n\turl = https://gitlab-ci-token:{JOB_TOKEN}@gitlab.example.com/g/p.git\n\
         [http \"https://github.com/\"]\n\textraheader = \"{}\"\n",
        header()
    );
    std::fs::write(&config, format!("{orig}{added}")).unwrap();
    // A submodule's git dir, under a name with a slash, with its own nested submodule.
    let nested = dir.path().join(".git/modules/lib/one/modules/two");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::write(
        dir.path().join(".git/modules/lib/one/config"),
        "[remote \"origin\"]\n\turl = https://sub:subPassword1@h/x\n",
    )
    .unwrap();
    std::fs::write(nested.join("config"), "[http]\n\textraHeader = Authorization: Bearer nestedBearer99\n").unwrap();
    let r = Redactor::new();
    register(&r, &ws);
    let encoded = header()["AUTHORIZATION: basic ".len()..].to_string();
    let pair = format!("x-access-token:{CHECKOUT_TOKEN}");
    for s in [
        header().as_str(),
        encoded.as_str(),
        pair.as_str(),
        CHECKOUT_TOKEN,
        JOB_TOKEN,
        "subPassword1",
        "nestedBearer99",
    ] {
        assert!(masked(&r, s), "{s} is not registered");
    }
    assert!(!masked(&r, "x-access-token"), "the fixed user name is no secret");
}

#[test]
fn the_configs_of_a_linked_worktree_and_its_common_dir_are_read() {
    let (dir, ws, _) = crate::git::tests::fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let wt = tempfile::tempdir().unwrap();
    let path = wt.path().join("wt");
    ws.repository().worktree("wt", &path, None).unwrap();
    let common = dir.path().join(".git/config");
    let text = std::fs::read_to_string(&common).unwrap();
    std::fs::write(&common, format!("{text}[remote \"o\"]\n\tpushurl = https://commonToken77@h/x\n")).unwrap();
    std::fs::write(
        dir.path().join(".git/worktrees/wt/config.worktree"),
        "[url \"https://u:wtPassword8@h/\"]\n\tinsteadOf = https://h/\n",
    )
    .unwrap();
    let linked = crate::git::Workspace::open(&path, vec![]).unwrap();
    let r = Redactor::new();
    register(&r, &linked);
    assert!(masked(&r, "commonToken77") && masked(&r, "wtPassword8"));
}

#[test]
fn a_config_line_is_read_as_git_reads_it() {
    assert_eq!(config_value(r#" "AUTHORIZATION: basic abc" # persisted"#), "AUTHORIZATION: basic abc");
    assert_eq!(config_value(r#"a\"b ; c"#), "a\"b");
    let one_line = "[http \"https://github.com/\"] extraheader = Authorization: bearer oneLineToken5";
    assert!(secrets_in_config(one_line).iter().any(|s| s == "oneLineToken5"));
    assert!(secrets_in_config("[core]\n\tbare = false\n[remote \"o\"]\n\turl = https://h/x\n").is_empty());
}
