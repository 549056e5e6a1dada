//! `hone eval`: which configuration fixes this repository's bugs, at what cost, measured on its
//! own history. Mining the history for candidate tasks (`mine`), by how each changed path counts
//! (`classify`); a task's repository, holding its start and nothing later, and a candidate's tree
//! (`isolate`); tasks in SWE-bench's format (`task`); what a candidate's test runs make of it, and
//! whether a try resolved a task (`grade`); the four test runs of a candidate (`validate`), with
//! the job's check in the jail (`jailed`), the tests it runs (`select`); `hone eval mine`
//! (`mining`); `hone eval run`: each task with each job, graded (`running`), a few at once within
//! a total budget (`schedule`), the repositories and their settings (`repos`, `source`), its
//! reports (`report`) and `--resume` (`journal`).

pub mod classify;
pub mod grade;
pub mod graded;
pub mod isolate;
pub mod issues;
pub mod jailed;
pub mod journal;
pub mod linked;
pub mod mine;
pub mod mining;
pub mod report;
pub mod repos;
pub mod running;
pub mod schedule;
pub mod select;
pub mod source;
pub mod task;
pub mod validate;
