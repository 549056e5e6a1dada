//! Mermaid charts in the Markdown hone writes (GitHub renders a ```` ```mermaid ```` block as a
//! picture): a pie, a bar chart, labelled points and a gantt, each a whole fenced block that is valid Mermaid
//! whatever its labels say.
//!
//! Every label can come from data a repository or the model controls (a repository's id, a
//! check's name, a status). [`label`] keeps only letters, digits, spaces and `-_./+@()`, so no
//! label can end its quotes, its line or the fence, open a comment or a directive (`%%{init}`),
//! a link or HTML; a label never starts a line (a keyword there, `click`, would be a command), and
//! is cut at [`LABEL_CHARS`]. Charts stay readable at any size: a pie keeps its [`MAX_SLICES`]
//! largest slices and sums the rest; callers pick the top of a bar chart (`top`). A chart with
//! nothing to show is `None`, and is left out.

#[path = "chart_gantt.rs"]
mod gantt;
#[cfg(test)]
#[path = "chart_tests.rs"]
mod tests;

pub use gantt::{Gantt, Mark, Task};

/// The longest label, in characters (longer ones end in `…`).
pub const LABEL_CHARS: usize = 32;
/// The most slices in a pie: beyond them, the smallest are summed as `other`.
pub const MAX_SLICES: usize = 10;

/// `s` as a chart label: letters, digits, spaces and `-_./+@()`; anything else is `_`, runs of
/// spaces are one, and a long label is cut at [`LABEL_CHARS`] characters. Never empty.
pub fn label(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(LABEL_CHARS * 4));
    let mut chars = 0;
    for c in s.chars() {
        let c = if c.is_alphanumeric() || "-_./+@()".contains(c) {
            c
        } else if c.is_whitespace() {
            ' '
        } else {
            '_'
        };
        if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
            continue;
        }
        if chars == LABEL_CHARS {
            out.truncate(out.trim_end().len());
            out.push('…');
            return out;
        }
        out.push(c);
        chars += 1;
    }
    out.truncate(out.trim_end().len());
    if out.is_empty() { "_".into() } else { out }
}

/// Labels for `names`, each made with [`label`] and kept apart: Mermaid keeps only the first
/// slice of a pie with a given label, so a repeated one gets ` (2)`, ` (3)`, ….
pub fn labels<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let base = label(name);
        let mut l = base.clone();
        let mut n = 1;
        while out.contains(&l) {
            n += 1;
            l = format!("{base} ({n})");
        }
        out.push(l);
    }
    out
}

/// A Mermaid diagram's text as a fenced block, with a blank line after it.
fn fence(body: &str) -> String {
    format!("```mermaid\n{body}```\n\n")
}

/// A number as Mermaid reads it: finite, at least 0, at most four decimals (a cost in cents),
/// no exponent.
fn number(v: f64) -> String {
    let v = if v.is_finite() && v > 0.0 { v.min(1e15) } else { 0.0 };
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A pie of `slices` (label → count) titled `title`, with the counts shown; empty slices are
/// left out, and beyond [`MAX_SLICES`] the smallest are one `other` slice. `None` when nothing
/// is left.
pub fn pie(title: &str, slices: &[(&str, usize)]) -> Option<String> {
    let mut kept: Vec<(String, usize)> =
        slices.iter().filter(|(_, n)| *n > 0).map(|(l, n)| (l.to_string(), *n)).collect();
    if kept.is_empty() {
        return None;
    }
    if kept.len() > MAX_SLICES {
        kept.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let rest = kept.split_off(MAX_SLICES - 1);
        kept.push((format!("{} others", rest.len()), rest.iter().map(|(_, n)| n).sum()));
    }
    let mut body = format!("pie showData\n    title {}\n", label(title));
    for (l, (_, n)) in labels(kept.iter().map(|(l, _)| l.as_str())).iter().zip(&kept) {
        body.push_str(&format!("    \"{l}\" : {n}\n"));
    }
    Some(fence(&body))
}

/// A bar chart of `bars` (category → value) titled `title`, its value axis named `unit` and
/// starting at 0, in the given order. `None` when there are no bars.
pub fn bars(title: &str, unit: &str, bars: &[(&str, f64)]) -> Option<String> {
    if bars.is_empty() {
        return None;
    }
    let names: Vec<String> = labels(bars.iter().map(|(l, _)| *l)).iter().map(|l| format!("\"{l}\"")).collect();
    let values: Vec<String> = bars.iter().map(|(_, v)| number(*v)).collect();
    let max = bars.iter().map(|(_, v)| if v.is_finite() { *v } else { 0.0 }).fold(0.0f64, f64::max);
    // A range from 0 (Mermaid's own starts at the smallest bar, which misleads); never empty.
    let top = number(if max > 0.0 { max * 1.05 } else { 1.0 });
    Some(fence(&format!(
        "xychart-beta\n    title \"{}\"\n    x-axis [{}]\n    y-axis \"{}\" 0 --> {top}\n    bar [{}]\n",
        label(title),
        names.join(", "),
        label(unit),
        values.join(", ")
    )))
}

/// Labelled points on two axes (a Mermaid quadrant chart, the one that plots named points): `x`
/// from 0 to the largest x, in `x_unit`; `y` a share from 0 to 1, shown in percent of `y_name`.
/// `None` when there are no points or no x is above 0.
pub fn points(title: &str, x_unit: &str, y_name: &str, points: &[(&str, f64, f64)]) -> Option<String> {
    let finite = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let max = points.iter().map(|(_, x, _)| finite(*x)).fold(0.0f64, f64::max);
    if points.is_empty() || max <= 0.0 {
        return None;
    }
    let (unit, name) = (label(x_unit), label(y_name));
    let mut body = format!(
        "quadrantChart\n    title {}\n    x-axis \"{unit} 0\" --> \"{unit} {}\"\n    y-axis \"0% {name}\" --> \"100% {name}\"\n",
        label(title),
        number(max)
    );
    for (l, (_, x, y)) in labels(points.iter().map(|(l, ..)| *l)).iter().zip(points) {
        let (x, y) = (finite(*x) / max, finite(*y).min(1.0));
        body.push_str(&format!("    \"{l}\": [{}, {}]\n", number(x), number(y)));
    }
    Some(fence(&body))
}

/// The `n` largest of `items` by value (largest first, ties by label), and what the rest add up
/// to: how many, and their sum.
pub fn top<'a>(items: &[(&'a str, f64)], n: usize) -> (Vec<(&'a str, f64)>, usize, f64) {
    let mut sorted = items.to_vec();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let rest = sorted.split_off(n.min(sorted.len()));
    let sum = rest.iter().map(|(_, v)| v).sum();
    (sorted, rest.len(), sum)
}

/// For the PR status report: a pie of the PRs' states (`open`, `draft`, `merged`, `closed`, …)
/// from their counts. `None` when there are none.
pub fn pr_states(counts: &[(&str, usize)]) -> Option<String> {
    pie("PR states", counts)
}

/// For the PR status report: a pie of the state of the open PRs' checks (`passing`, `failing`,
/// `pending`, …) from their counts. `None` when there are none.
pub fn pr_checks(counts: &[(&str, usize)]) -> Option<String> {
    pie("Checks of the open PRs", counts)
}
