//! A merge request's diff as GitLab computes it, for real from the bare repositories: the target
//! project's `refs/merge-requests/<iid>/head` kept at the source branch's head (a fork's too),
//! a new version each time that head moved (merge base, target head, source head), and the
//! version's diff file by file with each line's old and new number.

use super::entities::branch_head;
use super::state::{Mr, State, Version};
use std::path::Path;

/// One file of a diff, as `GET …/diffs` describes it, and its lines.
pub struct FileDiff {
    pub old_path: String,
    pub new_path: String,
    pub a_mode: String,
    pub b_mode: String,
    pub new_file: bool,
    pub renamed_file: bool,
    pub deleted_file: bool,
    /// The hunks (no file headers); empty for a binary file.
    pub diff: String,
    /// Every line of the hunks: (old line, new line); `None` on the side it is not on.
    pub lines: Vec<(Option<u32>, Option<u32>)>,
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git").args(args).current_dir(dir).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Bring the target's `refs/merge-requests/<iid>/head` to the source branch's head (fetching a
/// fork's objects, as GitLab does on every push); that head.
pub fn sync_ref(st: &State, m: &Mr) -> Option<String> {
    let (target, source) = (st.project_by_id(m.project)?, st.project_by_id(m.source_project)?);
    let head = branch_head(source, &m.source_branch)?;
    let r = format!("refs/merge-requests/{}/head", m.iid);
    if source.id == target.id {
        git(&target.bare, &["update-ref", &r, &head])?;
    } else {
        let from = source.bare.to_str()?;
        git(&target.bare, &["fetch", "-q", "--no-tags", from, &format!("+refs/heads/{}:{r}", m.source_branch)])?;
    }
    Some(head)
}

/// Sync the merge-request refs of every open merge request into `project`.
pub fn sync_all(st: &State, project: u64) {
    for m in st.mrs.iter().filter(|m| m.project == project && m.state == "opened") {
        sync_ref(st, m);
    }
}

/// The latest version of merge request `iid`, made anew when its source branch moved.
pub fn current_version(st: &mut State, project: u64, iid: u64) -> Option<Version> {
    let m = st.mr(project, iid)?;
    let head = sync_ref(st, m)?;
    if let Some(v) = m.versions.last().filter(|v| v.head == head) {
        return Some(v.clone());
    }
    let target = st.project_by_id(project)?;
    let start = branch_head(target, &m.target_branch)?;
    let base = git(&target.bare, &["merge-base", &start, &head])?;
    let (id, created_at) = (st.next_id(), st.now());
    let v = Version { id, base, start, head, created_at };
    st.mr_mut(project, iid)?.versions.push(v.clone());
    Some(v)
}

fn mode(m: git2::FileMode) -> String {
    format!("{:o}", u32::from(m))
}

/// The diff from `base` to `head` in `bare`, file by file (renames found), three lines of
/// context as GitLab shows it; `None` when either is not a commit there.
pub fn files(bare: &Path, base: &str, head: &str) -> Option<Vec<FileDiff>> {
    let repo = git2::Repository::open_bare(bare).ok()?;
    let tree = |sha: &str| git2::Oid::from_str(sha).ok().and_then(|o| repo.find_commit(o).ok()).map(|c| c.tree());
    let (old, new) = (tree(base)?.ok()?, tree(head)?.ok()?);
    let mut opts = git2::DiffOptions::new();
    opts.context_lines(3);
    let mut diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts)).ok()?;
    diff.find_similar(Some(git2::DiffFindOptions::new().renames(true))).ok()?;
    let mut out = Vec::new();
    for i in 0..diff.deltas().len() {
        let delta = diff.get_delta(i)?;
        let path = |f: git2::DiffFile| f.path().map(|p| p.to_string_lossy().into_owned());
        let new_path = path(delta.new_file()).or_else(|| path(delta.old_file()))?;
        let old_path = path(delta.old_file()).unwrap_or_else(|| new_path.clone());
        let mut file = FileDiff {
            a_mode: mode(delta.old_file().mode()),
            b_mode: mode(delta.new_file().mode()),
            new_file: delta.status() == git2::Delta::Added,
            renamed_file: delta.status() == git2::Delta::Renamed,
            deleted_file: delta.status() == git2::Delta::Deleted,
            old_path,
            new_path,
            diff: String::new(),
            lines: Vec::new(),
        };
        if let Some(patch) = git2::Patch::from_diff(&diff, i).ok().flatten() {
            hunks(&patch, &mut file);
        }
        out.push(file);
    }
    Some(out)
}

fn hunks(patch: &git2::Patch, file: &mut FileDiff) {
    for h in 0..patch.num_hunks() {
        let Ok((hunk, n)) = patch.hunk(h) else { return };
        file.diff.push_str(&String::from_utf8_lossy(hunk.header()));
        if !file.diff.ends_with('\n') {
            file.diff.push('\n');
        }
        for l in 0..n {
            let Ok(line) = patch.line_in_hunk(h, l) else { return };
            let origin = line.origin();
            if matches!(origin, ' ' | '+' | '-') {
                file.lines.push((line.old_lineno(), line.new_lineno()));
            }
            let text = match origin {
                ' ' | '+' | '-' => format!("{origin}{}", String::from_utf8_lossy(line.content())),
                _ => "\\ No newline at end of file\n".to_string(),
            };
            file.diff.push_str(&text);
            if !text.ends_with('\n') {
                file.diff.push('\n');
            }
        }
    }
}

/// A suggestion block in a note's body: `(above, below, lines)` of the first
/// ```` ```suggestion:-A+B ```` block (`suggestion` alone is `-0+0`), as GitLab's parser reads it.
pub fn suggestion(body: &str) -> Option<(u32, u32, Vec<String>)> {
    let mut lines = body.lines();
    let (fence, above, below) = lines.by_ref().find_map(|l| {
        let ticks = l.len() - l.trim_start_matches('`').len();
        let rest = l[ticks..].trim_end().strip_prefix("suggestion")?;
        let (above, below) = match rest.strip_prefix(":-") {
            Some(r) => {
                let (a, b) = r.split_once('+')?;
                (a.parse().ok()?, b.parse().ok()?)
            }
            None if rest.is_empty() => (0, 0),
            None => return None,
        };
        (ticks >= 3).then_some((ticks, above, below))
    })?;
    let mut content = Vec::new();
    for l in lines {
        let t = l.trim_end();
        if t.len() >= fence && t.bytes().all(|b| b == b'`') {
            return Some((above, below, content));
        }
        content.push(l.to_string());
    }
    None
}
