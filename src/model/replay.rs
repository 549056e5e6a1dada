//! The provider behind `hone replay`: it answers each request with the answer a transcript
//! recorded, and checks that the run sends what the recorded run sent: the same tool results,
//! request by request. The first difference is the divergence.

use super::{ChatRequest, ModelError, ModelErrorKind};
use crate::error::{Code, HoneError};
use crate::protocol::transcript::Entry;
use crate::protocol::{Message, Reply, Role};
use std::sync::Mutex;

/// A request's tool results: (call id, content).
type Results = Vec<(String, String)>;

/// How the run differed from the recorded one (`hone replay`'s verdict when it did).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Divergence {
    /// The first request that carried other tool results than the recorded one.
    #[error("{0}")]
    Request(String),
    #[error("the run made {asked} request(s); the recorded run made {recorded}")]
    Count { asked: usize, recorded: usize },
    #[error("the replay's state is poisoned")]
    Poisoned,
}

impl Divergence {
    /// The run answered otherwise than the recorded model's answers allow (`E_MODEL`, as its
    /// requests fail); a poisoned state is a fault in hone.
    pub fn code(&self) -> Code {
        match self {
            Divergence::Request(_) | Divergence::Count { .. } => Code::Model,
            Divergence::Poisoned => Code::Internal,
        }
    }
}

impl From<Divergence> for HoneError {
    fn from(d: Divergence) -> Self {
        HoneError::new(d.code(), d.to_string())
    }
}

/// What a recorded request got.
#[derive(Clone)]
enum Answer {
    Reply(Reply),
    /// Its model stayed unavailable (this kind of failure): the run went on with the next.
    Unavailable(ModelErrorKind),
    /// None: refused (a context-length error, after which hone compacted and asked again), or
    /// the run ended there.
    Nothing,
}

pub struct Replay {
    /// The answer each recorded request got.
    answers: Vec<Answer>,
    /// Per recorded request: the tool results it carried, (call id, content).
    expected: Vec<Results>,
    /// The recorded run's repository path and this run's: paths in outputs differ by that.
    paths: (String, String),
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    asked: usize,
    previous: Vec<Message>,
    divergence: Option<String>,
}

impl Replay {
    /// From a transcript's entries; `repo` is where this run works.
    pub fn new(entries: &[Entry], repo: &str) -> Replay {
        // Requests and the answers they got, in order; a request with none was refused (a
        // context-length error, after which hone compacts and asks again) or ended the run.
        let mut pairs: Vec<(Results, Answer)> = Vec::new();
        let mut from = String::new();
        for e in entries {
            match e {
                Entry::Header { repo, work_tree, .. } => from = work_tree.clone().unwrap_or_else(|| repo.clone()),
                Entry::Request { messages, .. } => pairs.push((tool_results(messages), Answer::Nothing)),
                Entry::ModelSwitched { kind, .. } => {
                    let kind = ModelErrorKind::ALL.into_iter().find(|k| k.as_str() == kind);
                    if let (Some(last), Some(kind)) = (pairs.last_mut(), kind) {
                        last.1 = Answer::Unavailable(kind);
                    }
                }
                Entry::Response { message, finish_reason, usage, model, .. } => {
                    if let Some(last) = pairs.last_mut() {
                        last.1 = Answer::Reply(Reply {
                            message: message.clone(),
                            finish_reason: finish_reason.clone(),
                            usage: *usage,
                            model: model.clone(),
                        });
                    }
                }
                _ => {}
            }
        }
        let (expected, answers) = pairs.into_iter().unzip();
        Replay { answers, expected, paths: (from, repo.to_string()), state: Mutex::new(State::default()) }
    }

    pub fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        let Ok(mut s) = self.state.lock() else {
            return Err(ModelError::permanent(ModelErrorKind::BadRequest, "replay: the state is poisoned"));
        };
        let n = s.asked;
        s.asked += 1;
        let got = tool_results(crate::protocol::transcript::new_since(&s.previous, &req.messages).0);
        s.previous = req.messages.clone();
        let diverged = match self.expected.get(n) {
            None => Some(format!("request {}: the recorded run made only {n}", n + 1)),
            Some(want) => self.compare(n, want, &got),
        };
        if let Some(d) = diverged {
            s.divergence.get_or_insert(d.clone());
            return Err(ModelError::permanent(ModelErrorKind::BadRequest, format!("replay diverged: {d}")));
        }
        match self.answers.get(n).cloned().unwrap_or(Answer::Nothing) {
            Answer::Reply(reply) => Ok(reply),
            // As recorded: the model stayed unavailable, and the run goes on with the next.
            Answer::Unavailable(kind) => {
                Err(ModelError::permanent(kind, "replay: the recorded model stayed unavailable here"))
            }
            // Asked again: the provider said the context was too long; hone compacted.
            Answer::Nothing if n + 1 < self.expected.len() => {
                Err(ModelError::permanent(ModelErrorKind::ContextLength, "replay: the recorded request was too long"))
            }
            // The recorded run ended at this request (its model failed): so does this one.
            Answer::Nothing => {
                Err(ModelError::permanent(ModelErrorKind::BadRequest, "the recorded run got no answer to this request"))
            }
        }
    }

    fn compare(&self, n: usize, want: &[(String, String)], got: &[(String, String)]) -> Option<String> {
        if want.len() != got.len() {
            return Some(format!("request {}: {} tool result(s), recorded {}", n + 1, got.len(), want.len()));
        }
        for ((wid, wtext), (gid, gtext)) in want.iter().zip(got) {
            let wtext = normalize(&wtext.replace(&self.paths.0, &self.paths.1));
            if wid != gid || wtext != normalize(gtext) {
                let (w, g) = first_difference(&wtext, &normalize(gtext));
                return Some(format!(
                    "request {}: the result of call {gid} differs\n  recorded: {w}\n  now:      {g}",
                    n + 1
                ));
            }
        }
        None
    }

    /// How many requests the run has made.
    pub fn asked(&self) -> usize {
        self.state.lock().map(|s| s.asked).unwrap_or(0)
    }

    /// `Ok(requests)` when the run asked what the recorded one asked, and as often; else the
    /// first divergence.
    pub fn verdict(&self) -> Result<usize, Divergence> {
        let s = self.state.lock().map_err(|_| Divergence::Poisoned)?;
        if let Some(d) = &s.divergence {
            return Err(Divergence::Request(d.clone()));
        }
        if s.asked != self.expected.len() {
            return Err(Divergence::Count { asked: s.asked, recorded: self.expected.len() });
        }
        Ok(s.asked)
    }
}

fn tool_results(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap_or_default(), m.content.clone()))
        .collect()
}

/// Durations (`0.05s`, `12ms`, `1.2 s`) read as `<t>`: they differ from run to run.
fn normalize(s: &str) -> String {
    let b = s.as_bytes();
    let (mut out, mut i) = (String::with_capacity(s.len()), 0);
    while i < b.len() {
        let start_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.');
        if start_ok && b[i].is_ascii_digit() {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            let k = if b.get(j) == Some(&b' ') { j + 1 } else { j };
            let unit = if s[k..].starts_with("ms") {
                2
            } else if s[k..].starts_with('s') {
                1
            } else {
                0
            };
            let end = k + unit;
            if unit > 0 && !b.get(end).is_some_and(|c| c.is_ascii_alphanumeric()) {
                out.push_str("<t>");
                i = end;
                continue;
            }
            out.push_str(&s[i..j]);
            i = j;
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The first line where `a` and `b` differ, from each.
fn first_difference(a: &str, b: &str) -> (String, String) {
    let (mut la, mut lb) = (a.lines(), b.lines());
    loop {
        match (la.next(), lb.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (x, y) => {
                let show = |l: Option<&str>| l.map_or("(nothing)".to_string(), |l| l.chars().take(200).collect());
                return (show(x), show(y));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{FinishReason, ToolCall};

    #[test]
    fn too_few_requests_diverge_and_a_poisoned_state_is_a_fault() {
        let r = Replay::new(&[Entry::Request { turn: 1, reset: false, messages: vec![], tools: vec![] }], "/r");
        let d = r.verdict().unwrap_err();
        assert_eq!(d, Divergence::Count { asked: 0, recorded: 1 });
        assert_eq!(
            (d.code(), d.to_string().as_str()),
            (Code::Model, "the run made 0 request(s); the recorded run made 1")
        );
        let poison = std::thread::scope(|s| {
            s.spawn(|| {
                let _held = r.state.lock();
                panic!("poisoned on purpose");
            })
            .join()
        });
        assert!(poison.is_err() && r.state.is_poisoned());
        let d = r.verdict().unwrap_err();
        assert_eq!((d.code(), d.to_string().as_str()), (Code::Internal, "the replay's state is poisoned"));
        assert_eq!(HoneError::from(d).code, Code::Internal);
    }

    #[test]
    fn durations_do_not_count_as_differences() {
        assert_eq!(normalize("Ran 2 tests in 0.001s\nok (12ms) 3 files"), "Ran 2 tests in <t>\nok (<t>) 3 files");
        assert_eq!(normalize("v1.2s exit 1 3sx"), "v1.2s exit 1 3sx");
    }

    #[test]
    fn the_same_results_replay_and_the_first_difference_is_named() {
        let call = ToolCall { id: "c1".into(), name: "run_cmd".into(), arguments: "{}".into() };
        let entries = vec![
            Entry::Request { turn: 1, reset: false, messages: vec![Message::user("go")], tools: vec![] },
            Entry::Response {
                turn: 1,
                message: Message::assistant("", vec![call]),
                finish_reason: FinishReason::ToolCalls,
                usage: None,
                model: None,
            },
            Entry::Request {
                turn: 2,
                reset: false,
                messages: vec![Message::tool("c1", "in /old/repo: ok 0.2s")],
                tools: vec![],
            },
            Entry::Response {
                turn: 2,
                message: Message::assistant("done", vec![]),
                finish_reason: FinishReason::Stop,
                usage: None,
                model: None,
            },
        ];
        let mut with_header = vec![Entry::Header {
            version: 1,
            hone_version: "x".into(),
            job: "j".into(),
            task: "t".into(),
            run_id: "r".into(),
            spec: "s".into(),
            repo: "/old/repo".into(),
            base_sha: "b".into(),
            provider: "p".into(),
            model: "m".into(),
            continued_from: None,
            spec_sha256: None,
            policy_sha256: None,
            instructions_commit: None,
            work_tree: None,
            try_no: None,
        }];
        with_header.extend(entries);
        let ask = |r: &Replay, msgs: Vec<Message>| r.complete(&ChatRequest { messages: msgs, tools: vec![] });
        let r = Replay::new(&with_header, "/new/repo");
        let first = ask(&r, vec![Message::user("go")]).unwrap();
        let mut history = vec![Message::user("go"), first.message];
        history.push(Message::tool("c1", "in /new/repo: ok 0.5s"));
        assert_eq!(ask(&r, history.clone()).unwrap().message.content, "done");
        assert_eq!(r.verdict(), Ok(2));
        let r = Replay::new(&with_header, "/new/repo");
        ask(&r, vec![Message::user("go")]).unwrap();
        history[2] = Message::tool("c1", "in /new/repo: FAILED");
        assert!(ask(&r, history).is_err());
        let d = r.verdict().unwrap_err();
        assert_eq!(d.code(), Code::Model);
        let d = d.to_string();
        assert!(
            d.starts_with("request 2: the result of call c1 differs") && d.contains("now:      in /new/repo: FAILED"),
            "{d}"
        );
    }
}
