//! `hone memory list|show|forget|clear`: what the store holds, per repository, and removing it.
//! Each returns the text for stdout and the warnings for stderr; `commands` prints them.

use crate::cli::{MemoryAction, MemoryRepo};
use crate::env::RunEnv;
use crate::error::{Code, HoneError, Result};
use crate::memory::{RepoKey, Store, default_dir_checked};
use std::path::PathBuf;

/// What a `hone memory` command prints: its result (stdout) and warnings (stderr).
#[derive(Debug, Default)]
pub struct Out {
    pub stdout: String,
    pub warnings: Vec<String>,
}

/// Run `hone memory ACTION`.
pub fn run(action: MemoryAction, env: &RunEnv) -> Result<Out> {
    match action {
        MemoryAction::List { dir, json } => list(dir, json, env),
        MemoryAction::Show { at, json } => show(at, json, env),
        MemoryAction::Forget { ids, at } => forget(&ids, at, env),
        MemoryAction::Clear { at, all } => clear(at, all, env),
    }
}

/// The store `--dir` names, else the default one.
fn store_of(dir: Option<PathBuf>, env: &RunEnv, out: &mut Out) -> Result<Store> {
    if let Some(d) = dir {
        return Ok(Store::at(crate::safe_fs::lexical(&d)));
    }
    let (dir, warnings) = default_dir_checked(env);
    out.warnings.extend(warnings);
    dir.map(Store::at).ok_or_else(|| {
        HoneError::new(
            Code::NotFound,
            "there is no memory dir: neither HONE_MEMORY_DIR, XDG_STATE_HOME nor HOME is set",
        )
        .hint("pass `--dir DIR`, or set HONE_MEMORY_DIR to an absolute path")
    })
}

/// The key of the repository `--repo` names (default: the current directory's).
fn key_of(at: &MemoryRepo) -> Result<RepoKey> {
    let start = at.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let repo = git2::Repository::discover(&start).map_err(|_| {
        HoneError::new(Code::Git, format!("{} is not in a git repository", start.display()))
            .hint("run it in the repository, or name it with `--repo PATH`")
    })?;
    RepoKey::of(&repo, &at.remote).ok_or_else(|| {
        HoneError::new(Code::Git, format!("{} has no remote `{}` and no commit", start.display(), at.remote))
            .hint("name the remote that identifies it with `--remote NAME`")
    })
}

fn list(dir: Option<PathBuf>, json: bool, env: &RunEnv) -> Result<Out> {
    let mut out = Out::default();
    let store = store_of(dir, env, &mut out)?;
    let (repos, warnings) = store.list()?;
    out.warnings.extend(warnings);
    out.stdout = if json {
        // One line of JSON whose every character the runner could read as markup is a `\u` escape.
        crate::ci_text::json(&serde_json::to_string(&repos).unwrap_or_default())
    } else if repos.is_empty() {
        format!("hone: no memories in {}", store.dir().display())
    } else {
        let lines: Vec<String> = repos
            .iter()
            .map(|r| {
                let last = r.last_seen.as_deref().unwrap_or("never");
                format!("{}  {} entries  last seen {last}  {}", r.key, r.entries, r.file.display())
            })
            .collect();
        lines.join("\n")
    };
    Ok(out)
}

fn show(at: MemoryRepo, json: bool, env: &RunEnv) -> Result<Out> {
    let mut out = Out::default();
    let store = store_of(at.dir.clone(), env, &mut out)?;
    let key = key_of(&at)?;
    let (m, warnings) = store.load(&key);
    out.warnings.extend(warnings);
    let file = store.path_of(&key);
    out.stdout = if json {
        let v = serde_json::json!({ "key": m.key, "file": file, "entries": m.entries });
        crate::ci_text::json(&serde_json::to_string(&v).unwrap_or_default())
    } else if m.entries.is_empty() {
        format!("hone: no memory of {key} ({})", file.display())
    } else {
        let mut lines = vec![format!("memory of {key} ({}): {} entries", file.display(), m.entries.len())];
        lines.extend(m.entries.iter().map(|e| e.line()));
        lines.join("\n")
    };
    Ok(out)
}

fn forget(ids: &[String], at: MemoryRepo, env: &RunEnv) -> Result<Out> {
    let mut out = Out::default();
    let store = store_of(at.dir.clone(), env, &mut out)?;
    let key = key_of(&at)?;
    let forget_in = |m: &mut crate::memory::Memory| {
        let before = m.entries.len();
        let unknown = m.forget(ids);
        if !unknown.is_empty() {
            let list = unknown.iter().map(|s| crate::markdown::code(s)).collect::<Vec<_>>().join(", ");
            return Err(HoneError::new(
                Code::NotFound,
                format!("the memory of {key} has no entry {list}; nothing removed"),
            )
            .hint("`hone memory show` lists the entries with their ids"));
        }
        Ok(before - m.entries.len())
    };
    // No store yet: nothing to forget, and no directory made to say so.
    let (n, warnings) = if std::fs::symlink_metadata(store.dir()).is_ok() {
        store.update(&key, forget_in)?
    } else {
        (forget_in(&mut crate::memory::Memory::new(&key))?, vec![])
    };
    out.warnings.extend(warnings);
    out.stdout = format!("hone: forgot {n} entr{} of {key}", if n == 1 { "y" } else { "ies" });
    Ok(out)
}

fn clear(at: MemoryRepo, all: bool, env: &RunEnv) -> Result<Out> {
    let mut out = Out::default();
    let store = store_of(at.dir.clone(), env, &mut out)?;
    if all {
        let n = store.clear_all()?;
        out.stdout = format!("hone: removed {n} memory file(s) from {}", store.dir().display());
        return Ok(out);
    }
    let key = key_of(&at)?;
    let file = store.path_of(&key);
    out.stdout = if store.remove(&key)? {
        format!("hone: cleared the memory of {key} ({})", file.display())
    } else {
        format!("hone: no memory of {key} to clear")
    };
    Ok(out)
}
