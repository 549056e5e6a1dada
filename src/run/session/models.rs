//! Which model the session asks: the job's own, until it stays unavailable after its retries,
//! then each fallback in turn, with the same history; the record says who answered and why.

use super::turns::Loop;
use crate::model::ModelError;
use crate::model::chain::Link;
use crate::protocol::Event;
use crate::record::ModelUse;

/// `provider/name`, as reports and events name a model.
pub(super) fn label(link: &Link) -> String {
    format!("{}/{}", link.spec.provider.as_str(), link.spec.name)
}

impl<'a> Loop<'a> {
    fn models(&self) -> &'a crate::model::chain::Models {
        self.model
    }

    /// The index of the model asked now: the last one the record lists (0 before any request).
    pub(super) fn model_on(&self) -> usize {
        self.run.record.models.len().saturating_sub(1)
    }

    /// The model to ask at `turn`, listed in the record once it is first asked.
    pub(super) fn link(&mut self, turn: u32) -> &'a Link {
        let models = self.models();
        if self.run.record.models.is_empty() {
            let first = models.first();
            let spec = &first.spec;
            self.run.record.models.push(ModelUse::new(spec.provider.as_str(), &spec.name, turn, spec.pricing));
        }
        if let Some(m) = self.run.record.models.last_mut().filter(|m| m.from_turn == 0) {
            m.from_turn = turn;
        }
        models.get(self.model_on()).unwrap_or(models.first())
    }

    /// The current model's spec (its context window, prices and output limit).
    pub(super) fn spec(&self) -> &'a crate::spec::ModelSpec {
        let models = self.models();
        &models.get(self.model_on()).unwrap_or(models.first()).spec
    }

    /// Move on to the next model after `e`, which outlasted the current one's retries.
    pub(super) fn fall_back(&mut self, turn: u32, e: &ModelError) {
        let models = self.models();
        let on = self.model_on();
        let (Some(from), Some(to)) = (models.get(on), models.get(on + 1)) else { return };
        let reason = self.tools.redactor.apply(&format!("{} {}: {e}", label(from), e.kind()));
        let (from, to_label) = (label(from), label(to));
        tracing::warn!("{from} is unavailable; going on with {to_label}: {reason}");
        self.lane.events.emit(Event::ModelSwitched {
            turn,
            from: from.clone(),
            to: to_label.clone(),
            reason: reason.clone(),
        });
        self.run.transcript.switched(turn, &from, &to_label, e.kind());
        self.run
            .record
            .warnings
            .push(format!("turn {turn}: {from} stayed unavailable ({}); went on with {to_label}", e.kind()));
        // Its first turn is set when it is first asked (`link`).
        let mut next = ModelUse::new(to.spec.provider.as_str(), &to.spec.name, 0, to.spec.pricing);
        next.switched_because = Some(reason);
        self.run.record.models.push(next);
        self.watch.cut = 0;
        // Reasoning is the old model's, encrypted for its provider alone: another cannot read it
        // (and refuses the request). An answer that was only reasoning is then nothing at all.
        for m in &mut self.messages {
            m.reasoning.clear();
        }
        self.messages.retain(|m| {
            m.role != crate::protocol::Role::Assistant || !m.content.trim().is_empty() || !m.tool_calls.is_empty()
        });
    }

    /// Count an answered turn for the current model.
    pub(super) fn answered(&mut self, model_id: Option<&str>) {
        if let Some(m) = self.run.record.models.last_mut() {
            m.turns += 1;
            if let Some(id) = model_id {
                m.model_id = Some(id.to_string());
            }
        }
    }
}
