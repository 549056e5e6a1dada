use super::*;

#[test]
fn a_pull_request_reads_as_forgejo_describes_it() {
    let sha = "a".repeat(40);
    let b = json!({"html_url": "https://f/acme/app/pulls/3", "user": {"login": "hone", "id": 5}, "state": "open",
        "merged": false, "draft": false, "title": "WIP: hone: fix", "mergeable": true, "created_at": "2026-01-01T00:00:00Z",
        "head": {"ref": "hone/x", "sha": sha, "repo": {"full_name": "acme/app"}},
        "base": {"ref": "main", "sha": "b".repeat(40), "repo": {"full_name": "acme/app"}}});
    let r = reading(&b);
    assert_eq!((r.author.as_str(), r.author_id, r.draft, r.mergeable), ("hone", Some(5), true, Some(true)));
    assert_eq!((r.head_repo.as_deref(), r.head_sha.as_str()), (Some("acme/app"), sha.as_str()));
    let mut fork = b.clone();
    fork["head"]["repo"] = Value::Null;
    fork["head"]["sha"] = json!("HEAD");
    let r = reading(&fork);
    assert_eq!((r.head_repo, r.head_sha.as_str()), (None, ""), "a gone fork, a sha that is none");
    let mut merged = b;
    (merged["state"], merged["merged"]) = (json!("closed"), json!(true));
    assert!(reading(&merged).merged);
}
