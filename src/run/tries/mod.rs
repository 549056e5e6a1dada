//! A job's tries (`attempts:` in the job spec, issue 45): several independent tries of the task,
//! each in its own worktree and jail, from one baseline, and the repository's own checks
//! choosing the one that lands. Built in slices; so far: the choice ([`choose`]), the spend the
//! tries share ([`meter`]), and the worktrees (`git::worktree`). Nothing calls them yet.

pub mod choose;
pub mod meter;
