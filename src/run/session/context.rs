//! Context management: estimate request size, compact the history before it nears the model's
//! context window, and measure how much of each request's prefix the previous request shared
//! (what provider prompt caching can reuse). Pure functions over messages.

use crate::protocol::{Message, Role};

/// Compact when the estimate passes this share of the window.
pub const COMPACT_AT: f64 = 0.75;
/// After compaction, the verbatim recent turns take at most this share of the window.
const KEEP_RECENT: f64 = 0.35;

/// Rough token count of a message (4 characters per token, plus framing).
pub fn tokens(m: &Message) -> u64 {
    let chars = m.content.len() + m.tool_calls.iter().map(|c| c.name.len() + c.arguments.len() + 16).sum::<usize>();
    (chars / 4 + 8) as u64
}

pub fn estimate(messages: &[Message]) -> u64 {
    messages.iter().map(tokens).sum()
}

/// What the loop knows of its requests' size: the last request (to measure how much of the
/// next one's prefix it shares), the provider's tokens per estimated token, and the reuse so far.
pub struct Sizing {
    last_request: Vec<Message>,
    /// Provider tokens per estimated token, from the last usage report.
    calibration: f64,
    reuse_sum: f64,
}

impl Default for Sizing {
    fn default() -> Self {
        Sizing { last_request: Vec::new(), calibration: 1.0, reuse_sum: 0.0 }
    }
}

impl Sizing {
    /// `messages` in provider tokens, as far as the last usage report calibrated the estimate.
    pub fn tokens(&self, messages: &[Message]) -> u64 {
        (estimate(messages) as f64 * self.calibration) as u64
    }

    /// Provider tokens back in estimated ones.
    pub fn uncalibrated(&self, tokens: u64) -> u64 {
        (tokens as f64 / self.calibration) as u64
    }

    /// Note the request of turn `turn`: how much of its prefix the last one shared, the average
    /// so far, and the last request's messages.
    pub fn request(&mut self, turn: u32, messages: &[Message]) -> (f64, f64, Vec<Message>) {
        let reuse = prefix_reuse(&self.last_request, messages);
        self.reuse_sum += reuse;
        let previous = std::mem::replace(&mut self.last_request, messages.to_vec());
        (reuse, self.reuse_sum / f64::from(turn.max(1)), previous)
    }

    /// The provider counted `prompt_tokens` for the last request. Only ever raises the estimate:
    /// underestimating overflows the window, overestimating merely compacts a little early.
    pub fn calibrate(&mut self, prompt_tokens: u64) {
        if prompt_tokens > 0 {
            let est = estimate(&self.last_request).max(1) as f64;
            self.calibration = (prompt_tokens as f64 / est).clamp(1.0, 4.0);
        }
    }
}

/// The share of `now`'s serialized prefix that `before` had too (0.0 to 1.0).
pub fn prefix_reuse(before: &[Message], now: &[Message]) -> f64 {
    let total: usize =
        now.iter().map(|m| m.content.len() + m.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>()).sum();
    if total == 0 {
        return 0.0;
    }
    let mut shared = 0usize;
    for (a, b) in before.iter().zip(now) {
        if a != b {
            break;
        }
        shared += b.content.len() + b.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    }
    shared as f64 / total as f64
}

/// Where the recent part may start: at a user or assistant message, never between a tool call
/// and its results.
fn boundary(messages: &[Message], from: usize) -> usize {
    (from..messages.len()).find(|&i| messages[i].role != Role::Tool).unwrap_or(messages.len())
}

/// Compact `messages` (system prompt first, task message second) to fit `window` tokens: keep
/// those two and the most recent turns verbatim, and replace the turns between with one summary.
/// `plan` (rendered) is restated in the summary. Returns `None` when nothing can be removed.
pub fn compact(messages: &[Message], window: u64, plan: Option<&str>) -> Option<Vec<Message>> {
    if messages.len() <= 4 {
        return None;
    }
    let budget = (window as f64 * KEEP_RECENT) as u64;
    // Walk back from the end while the recent part fits the budget.
    let mut start = messages.len();
    let mut used = 0;
    while start > 2 {
        let t = tokens(&messages[start - 1]);
        if used + t > budget && start < messages.len() {
            break;
        }
        used += t;
        start -= 1;
    }
    let start = boundary(messages, start.max(2));
    if start <= 2 {
        return None;
    }
    let older = &messages[2..start];
    let mut out = vec![messages[0].clone(), messages[1].clone(), Message::user(summary(older, plan))];
    out.extend_from_slice(&messages[start..]);
    Some(out)
}

/// A deterministic summary of older turns: what was called, with what outcome, and what was said.
fn summary(older: &[Message], plan: Option<&str>) -> String {
    let mut s =
        format!("[hone compacted {} earlier messages to stay within the context window. Summary:]\n", older.len());
    let mut results = older.iter().filter(|m| m.role == Role::Tool);
    for m in older {
        match m.role {
            Role::Assistant => {
                let said: String = m.content.chars().take(200).collect();
                if !said.trim().is_empty() {
                    s.push_str(&format!("- you said: {}\n", said.replace('\n', " ")));
                }
                for c in &m.tool_calls {
                    let outcome = results.next().map_or("no result".to_string(), |r| {
                        let first = r.content.lines().next().unwrap_or("").chars().take(120).collect::<String>();
                        if r.content.starts_with("error ") { first } else { format!("ok: {first}") }
                    });
                    let args: String = c.arguments.chars().take(120).collect();
                    s.push_str(&format!("- {}({args}) -> {outcome}\n", c.name));
                }
            }
            Role::User => {
                let first: String = m.content.lines().next().unwrap_or("").chars().take(200).collect();
                s.push_str(&format!("- hone said: {first}\n"));
            }
            _ => {}
        }
    }
    if let Some(p) = plan {
        s.push_str(&format!("Current plan:\n{p}"));
    }
    s.push_str("Re-read files you need: their earlier contents are no longer in view.\n");
    // The summary itself is bounded.
    if s.len() > 16_000 {
        let head: String = s.chars().take(12_000).collect();
        let tail: String = s.chars().rev().take(3_000).collect::<Vec<_>>().into_iter().rev().collect();
        s = format!("{head}\n[... summary cut ...]\n{tail}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::history::is_valid;
    use super::*;
    use crate::protocol::ToolCall;

    fn history(turns: usize, big: usize) -> Vec<Message> {
        let mut h = vec![Message::system("sys"), Message::user("task")];
        for i in 0..turns {
            let id = format!("c{i}");
            h.push(Message::assistant(
                format!("step {i}"),
                vec![ToolCall {
                    id: id.clone(),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\":\"f{i}\"}}"),
                }],
            ));
            h.push(Message::tool(id, "x".repeat(big)));
        }
        h
    }

    #[test]
    fn compaction_fits_the_window_and_keeps_pairing() {
        let h = history(60, 4000);
        let window = 20_000;
        assert!(estimate(&h) > window);
        let c = compact(&h, window, Some("1. [ ] a\n")).unwrap();
        assert!(estimate(&c) < (window as f64 * COMPACT_AT) as u64, "{}", estimate(&c));
        assert!(is_valid(&c));
        assert_eq!(c[0], h[0]);
        assert_eq!(c[1], h[1]);
        assert!(c[2].content.starts_with("[hone compacted") && c[2].content.contains("Current plan:\n1. [ ] a"));
        assert_eq!(c.last(), h.last());
        assert!(c[2].content.contains("read_file({\"path\":\"f0\"}) -> ok:"));
    }

    #[test]
    fn prefix_reuse_measures_the_shared_start() {
        let a = history(2, 100);
        let mut b = a.clone();
        b.push(Message::user("more"));
        let r = prefix_reuse(&a, &b);
        assert!(r > 0.9 && r < 1.0, "{r}");
        let c = compact(&history(30, 4000), 8_000, None).unwrap();
        assert!(prefix_reuse(&history(30, 4000), &c) < 0.1);
        assert_eq!(prefix_reuse(&[], &[]), 0.0);
    }

    #[test]
    fn the_estimate_is_calibrated_up_by_usage_and_reuse_is_averaged_over_turns() {
        let mut z = Sizing::default();
        let first = history(2, 400);
        let raw = estimate(&first);
        assert_eq!(z.tokens(&first), raw, "uncalibrated at first");
        let (reuse, average, previous) = z.request(1, &first);
        assert_eq!((reuse, average), (0.0, 0.0));
        assert!(previous.is_empty());
        // The provider counted twice the estimate: the estimate doubles, and back again.
        z.calibrate(raw * 2);
        assert_eq!(z.tokens(&first), raw * 2);
        assert_eq!(z.uncalibrated(raw * 2), raw);
        // Fewer tokens than estimated never lowers it below the raw estimate; no count changes nothing.
        z.calibrate(raw / 2);
        assert_eq!(z.tokens(&first), raw);
        z.calibrate(raw * 3);
        z.calibrate(0);
        assert_eq!(z.tokens(&first), raw * 3);
        // The same request again shares its whole prefix: the average over two turns is a half.
        let (reuse, average, previous) = z.request(2, &first);
        assert_eq!((reuse, average), (1.0, 0.5));
        assert_eq!(previous.len(), first.len());
    }
}
