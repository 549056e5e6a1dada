//! A second attempt (`hone run --continue REF`): after the baseline, the work a failed run saved
//! is applied to the work tree, counted as this run's change, and told to the model.

use super::turns::Loop;
use crate::error::HoneError;
use crate::git::Saved;

/// What the model reads of the saved commit's message (the failed run's summary).
const MAX_NOTE: usize = 4000;

impl Loop<'_> {
    /// Apply `saved`; the note for the model's first message.
    pub(super) async fn take_up(&mut self, saved: &Saved) -> Result<String, HoneError> {
        let oid = saved.commit;
        let paths = self.ws.blocking(move |ws| ws.apply_saved(oid)).await?;
        for rel in &paths {
            self.ws.claim(rel);
        }
        self.touched = !paths.is_empty();
        let short = &oid.to_string()[..12];
        self.run.continued_from = Some(format!("{} ({short})", saved.refname));
        let said: String = saved.message.chars().take(MAX_NOTE).collect();
        let files = paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
        Ok(self.tools.redactor.apply(&format!(
            "This run continues an earlier attempt that did not pass its checks. Its work is already in the work tree \
             ({} file(s): {files}). The earlier attempt's own account:\n\n{said}\n\nReview that work: keep what is right, fix \
             what is not, and make the checks pass. Do not start over unless the work is wrong.",
            paths.len()
        )))
    }
}
