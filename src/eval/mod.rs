//! `hone eval` (issue 46, being built): which configuration fixes this repository's bugs, at
//! what cost, measured on its own history. So far: mining the history for candidate tasks
//! (`mine`), by how each changed path counts (`classify`); a task's repository, holding its start
//! and nothing later (`isolate`); tasks in SWE-bench's format (`task`); what a candidate's test runs make of it, and
//! whether a try resolved a task (`grade`); the four test runs of a candidate (`validate`).
//! `hone eval mine` (`mining`, with the job's check in the jail: `jailed`) writes the tasks;
//! `hone eval run` runs each task with each job and grades it (`running`), a few at once within a
//! total budget (`schedule`); its reports (`report`) and `--resume` (`journal`).

pub mod classify;
pub mod grade;
pub mod isolate;
pub mod jailed;
pub mod journal;
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
