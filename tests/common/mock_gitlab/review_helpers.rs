//! The tests' handles on reviews: a merge request's discussions and pending drafts as GitLab
//! holds them, files GitLab leaves out of a diff, and applying the live suggestions to a file as
//! GitLab's "Apply suggestion" would.

use super::MockGitLab;
use super::mr_diff::{current_version, suggestion};
use super::state::Draft;
use serde_json::Value;

impl MockGitLab {
    /// The discussions of merge request `iid` of `project`, oldest first, as `GET …/discussions`.
    pub fn discussions(&self, project: &str, iid: u64) -> Vec<Value> {
        let st = self.state();
        let id = st.project(project).expect("no such project").id;
        let mut order: Vec<String> = Vec::new();
        for n in st.notes.iter().filter(|n| n.project == id && n.iid == iid) {
            if !order.contains(&n.discussion) {
                order.push(n.discussion.clone());
            }
        }
        order
            .iter()
            .map(|d| {
                let notes: Vec<Value> = st
                    .notes
                    .iter()
                    .filter(|n| &n.discussion == d)
                    .map(|n| super::entities::note(&st, n, &self.base))
                    .collect();
                serde_json::json!({"id": d, "notes": notes})
            })
            .collect()
    }

    /// The pending draft notes on merge request `iid` (of every user).
    pub fn drafts(&self, project: &str, iid: u64) -> Vec<Draft> {
        let st = self.state();
        let id = st.project(project).expect("no such project").id;
        st.drafts.iter().filter(|d| d.project == id && d.iid == iid).cloned().collect()
    }

    /// The caller writes a draft note `note` right after its next draft over the API.
    pub fn draft_meanwhile(&self, note: &str) {
        self.state().draft_meanwhile = Some(note.into());
    }

    /// A draft note by `author` (created when missing) on merge request `iid`.
    pub fn add_draft(&self, project: &str, iid: u64, author: &str, note: &str) -> u64 {
        let mut st = self.state();
        let project = st.project(project).expect("no such project").id;
        let author = st.ensure_user(author, false);
        let id = st.next_id();
        st.drafts.push(Draft { id, project, iid, author, note: note.into(), position: None });
        id
    }

    /// Answer `path`'s diff as too large (`too_large`, `collapsed`, no `diff`).
    pub fn too_large(&self, path: &str) {
        self.state().too_large.push(path.to_string());
    }

    /// The head of merge request `iid` (its latest version's), making the version as GitLab would.
    pub fn mr_head(&self, project: &str, iid: u64) -> String {
        let mut st = self.state();
        let id = st.project(project).expect("no such project").id;
        current_version(&mut st, id, iid).expect("a merge request with a head").head
    }

    /// `path` at merge request `iid`'s head with every live suggestion on it applied (unresolved
    /// `DiffNote`s on the latest version), as GitLab applies a batch; `None` when the file is not
    /// at the head. Panics on an outdated or overlapping suggestion (GitLab refuses to apply it).
    pub fn apply_suggestions(&self, project: &str, iid: u64, path: &str) -> Option<String> {
        let head = self.mr_head(project, iid);
        let bare = self.bare(project);
        let out = std::process::Command::new("git")
            .args(["show", &format!("{head}:{path}")])
            .current_dir(&bare)
            .output()
            .unwrap();
        let text = out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())?;
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut edits = Vec::new();
        for d in self.discussions(project, iid) {
            let n = &d["notes"][0];
            let p = &n["position"];
            if n["type"] != "DiffNote" || n["resolved"] == true || p["new_path"] != path {
                continue;
            }
            let Some((above, below, new)) = suggestion(n["body"].as_str().unwrap_or_default()) else { continue };
            assert_eq!(p["head_sha"], head.as_str(), "an outdated suggestion cannot be applied: {n}");
            let line = p["new_line"].as_u64().unwrap() as usize;
            edits.push((line - above as usize, line + below as usize, new));
        }
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for w in edits.windows(2) {
            assert!(w[1].1 < w[0].0, "overlapping suggestions cannot be applied together: {edits:?}");
        }
        for (start, end, new) in edits {
            assert!(end <= lines.len(), "a suggestion past the end of {path}");
            lines.splice(start - 1..end, new);
        }
        let mut out = lines.join("\n");
        if !lines.is_empty() {
            out.push('\n');
        }
        Some(out)
    }
}
