//! What the turn loop does when the model has gone wrong (`watch.rs` detects it): go on after an
//! answer cut at the output limit, warn or stop on degenerate answers and on tool-call loops.

use super::super::state::State;
use super::turns::{Loop, Next};
use crate::error::Code;
use crate::protocol::{Event, FaultKind, Message};
use crate::record::Status;

impl Loop<'_> {
    /// An answer cut at the output limit: ask the model to go on, unless it has been cut
    /// before saying anything `CUT_FAIL` times in a row.
    pub(super) fn cut_off(&mut self) -> Next {
        if self.watch.cut >= super::watch::CUT_FAIL {
            let limit = self.spec().max_output_tokens;
            self.fail(
                Code::Model,
                format!(
                    "the model's answers were cut at the output limit {} times in a row before any text or tool call (`model.max_output_tokens` is {limit}): raise it, reasoning models need room for their reasoning",
                    self.watch.cut
                ),
            );
            self.enter(State::Summarizing, "answers cut at the output limit");
            return Next::End(Status::Failed);
        }
        self.messages.push(Message::user(super::prompt::CONTINUE_AFTER_LENGTH));
        Next::Continue
    }

    pub(super) fn degenerate(&mut self, turn: u32, why: String) -> Next {
        self.fault(FaultKind::Repetition);
        self.watch.degenerate += 1;
        self.lane.events.emit(Event::ModelRetry {
            turn,
            attempt: self.watch.degenerate,
            class: "retryable".into(),
            reason: format!("degenerate answer: {why}"),
            delay_ms: 0,
        });
        if self.watch.degenerate >= 3 {
            self.fail(Code::Model, format!("the model kept producing degenerate answers ({why})"));
            self.enter(State::Summarizing, "degenerate answers");
            return Next::End(Status::Failed);
        }
        self.messages.push(Message::user(format!(
            "Your last answer was discarded: it degenerated into repetition ({why}). Answer again, briefly."
        )));
        Next::Continue
    }

    pub(super) fn watch_loops(&mut self, streak: usize) -> Next {
        if streak >= super::watch::LOOP_FAIL {
            self.fault(FaultKind::Loop);
            self.fail(
                Code::Model,
                format!("the model repeated the same tool call with the same result {streak} times in a row"),
            );
            self.enter(State::Summarizing, "the model is stuck in a loop");
            return Next::End(Status::Failed);
        }
        if streak >= super::watch::LOOP_WARN {
            self.fault(FaultKind::LoopWarning);
            self.messages.push(Message::user(format!(
                "You have made the same tool call {streak} times in a row and got the same result each time. It will not change: try a different approach."
            )));
        }
        Next::Continue
    }
}
