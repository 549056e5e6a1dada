//! Markdown hone writes for people to read on GitHub (pr.md and the PR body, summary.md and the
//! step summary, the Action's `summary` output, the commit body): the model's markdown made inert
//! while it stays readable, and plain text (paths, names, commands, output) escaped so that it
//! stays text. GitHub renders GFM and raw HTML: an image (`![](url)`, `<img>`, `<picture>`) makes
//! it fetch the URL when someone opens the page, a way out of a run without network; a comment
//! (`<!-- … -->`) hides text from the reader.
//!
//! The model's markdown is parsed (pulldown-cmark, GFM), its images become links, raw HTML becomes
//! text (an HTML block a code block), reference links inline ones and diagram or math blocks plain
//! code, and it is written back (pulldown-cmark-to-cmark, which escapes text). The result is
//! parsed again: if it still held an image or HTML, the whole text is shown as a code block.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM
        | Options::ENABLE_MATH
}

/// Characters shown as escapes in markdown: controls (but tab and newline), line and paragraph
/// separators, and the bidirectional overrides that make text read other than it is.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c as u32, 0x061C | 0x200E | 0x200F | 0x2028..=0x202E | 0x2066..=0x2069)
}

/// `s` with the characters [`hidden`] names shown as escapes (`\\u{202e}`): for a line of plain
/// text outside markdown (a commit subject, a PR title).
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A code block's language, unless GitHub renders it (diagrams, maps, models, math).
fn language(info: &str) -> CowStr<'static> {
    let word = info.split_whitespace().next().unwrap_or("");
    let plain = word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '.' | '#'));
    let rendered = ["mermaid", "geojson", "topojson", "stl", "math"].iter().any(|r| word.eq_ignore_ascii_case(r));
    if plain && !rendered { word.to_string().into() } else { "text".into() }
}

/// What became of an open link: kept, dropped (inside an image's text), or shown as text with
/// its destination in a code span after it (a link to an issue, pull or merge request, which the
/// forge would take as a reference; an autolink's text is its URL already).
enum Open<'a> {
    Kept,
    Dropped,
    AsText(Option<CowStr<'a>>),
}

/// The model's events with images, raw HTML, reference links, rendered blocks and references to
/// people and issues made inert. Consecutive text is joined first, so that a mention the parser
/// split in two is still found.
fn rewrite(parser: Parser<'_>) -> Vec<Event<'_>> {
    let mut out = Vec::new();
    // Per open link, what became of it; per open image, whether it became a link (not inside a
    // link or another image).
    let mut links: Vec<Open> = Vec::new();
    let mut images: Vec<bool> = Vec::new();
    let (mut text, mut in_code) = (String::new(), false);
    for e in parser {
        if let Event::Text(t) = &e {
            text.push_str(&visible(t));
            continue;
        }
        flush(&mut out, &mut text, in_code);
        match e {
            Event::Start(Tag::Link { link_type, dest_url, title, .. }) => {
                let open = open_link(link_type, dest_url, title, images.is_empty());
                if let (Open::Kept, Some(start)) = open {
                    out.push(start);
                }
                links.push(open.0);
            }
            Event::End(TagEnd::Link) => match links.pop() {
                Some(Open::Kept) => out.push(Event::End(TagEnd::Link)),
                Some(Open::AsText(Some(url))) => {
                    out.extend([Event::Text(" (".into()), Event::Code(visible(&url).into()), Event::Text(")".into())])
                }
                _ => {}
            },
            Event::Start(Tag::Image { dest_url, title, .. }) => {
                let as_link = images.is_empty()
                    && !links.iter().any(|k| matches!(k, Open::Kept))
                    && !crate::references::is_issue_url(&dest_url);
                if as_link {
                    out.push(Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url, title, id: "".into() }));
                }
                images.push(as_link);
                out.push(Event::Text("image: ".into()));
            }
            Event::End(TagEnd::Image) => {
                if images.pop().unwrap_or(false) {
                    out.push(Event::End(TagEnd::Link));
                }
            }
            Event::Start(Tag::HtmlBlock) => {
                in_code = true;
                out.push(Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced("html".into()))))
            }
            Event::End(TagEnd::HtmlBlock) => {
                in_code = false;
                close_code(&mut out)
            }
            Event::Html(h) | Event::InlineHtml(h) if in_code => out.push(Event::Text(visible(&h).into())),
            Event::Html(h) | Event::InlineHtml(h) => {
                text.push_str(&visible(&h));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                in_code = true;
                let kind = match kind {
                    CodeBlockKind::Fenced(info) => CodeBlockKind::Fenced(language(&info)),
                    indented => indented,
                };
                out.push(Event::Start(Tag::CodeBlock(kind)))
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code = false;
                close_code(&mut out)
            }
            // One line, as a code span shows it: a span written across lines could start one
            // that opens a fence.
            Event::InlineMath(t) | Event::DisplayMath(t) | Event::Code(t) => {
                out.push(Event::Code(visible(&t).replace('\n', " ").into()))
            }
            other => out.push(other),
        }
    }
    flush(&mut out, &mut text, in_code);
    out
}

/// The end of a code block, its text ended with a line end first: the writer closes a fence only
/// after one, and a fence left open would take in everything hone writes after the model's text.
fn close_code(out: &mut Vec<Event<'_>>) {
    if matches!(out.last(), Some(Event::Text(t)) if !t.ends_with('\n')) {
        out.push(Event::Text("\n".into()));
    }
    out.push(Event::End(TagEnd::CodeBlock))
}

/// What becomes of a link that opens (inside an image's text or not): and, when it is kept, its
/// start as an inline link (an autolink or e-mail stays one).
fn open_link<'a>(
    link_type: LinkType,
    dest_url: CowStr<'a>,
    title: CowStr<'a>,
    outside_images: bool,
) -> (Open<'a>, Option<Event<'a>>) {
    if !outside_images {
        return (Open::Dropped, None);
    }
    if crate::references::is_issue_url(&dest_url) {
        return (Open::AsText((link_type != LinkType::Autolink).then_some(dest_url)), None);
    }
    let link_type = match link_type {
        LinkType::Autolink | LinkType::Email => link_type,
        _ => LinkType::Inline,
    };
    (Open::Kept, Some(Event::Start(Tag::Link { link_type, dest_url, title, id: "".into() })))
}

/// The text gathered so far as events: in a code block as it is, elsewhere with each mention
/// and reference as a code span.
fn flush<'a>(out: &mut Vec<Event<'a>>, text: &mut String, in_code: bool) {
    if text.is_empty() {
        return;
    }
    let t = std::mem::take(text);
    if in_code {
        return out.push(Event::Text(t.into()));
    }
    for (reference, part) in crate::references::split(&t) {
        let part = part.to_string().into();
        out.push(if reference { Event::Code(part) } else { Event::Text(part) });
    }
}

/// Whether `md` renders no image, no raw HTML and no mention or reference (outside code).
pub fn is_inert(md: &str) -> bool {
    let (mut text, mut in_code) = (String::new(), false);
    for e in Parser::new_ext(md, options()) {
        match e {
            Event::Start(Tag::Image { .. }) | Event::Html(_) | Event::InlineHtml(_) => return false,
            Event::Start(Tag::Link { dest_url, .. }) if crate::references::is_issue_url(&dest_url) => return false,
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Text(t) if !in_code => {
                text.push_str(&t);
                continue;
            }
            _ => {}
        }
        if crate::references::any(&std::mem::take(&mut text)) {
            return false;
        }
    }
    !crate::references::any(&text)
}

/// The model's markdown, readable and inert: no image (each is a link to its URL, or text), no
/// raw HTML and no hidden comment (shown as text), no diagram or math block.
pub fn inert(md: &str) -> String {
    let events = rewrite(Parser::new_ext(md, options()));
    let style = pulldown_cmark_to_cmark::Options { list_token: '-', code_block_token_count: 3, ..Default::default() };
    let mut out = String::with_capacity(md.len() + md.len() / 8);
    match pulldown_cmark_to_cmark::cmark_with_options(events.iter(), &mut out, options(), style) {
        Ok(_) if is_inert(&out) => out,
        _ => code_block(md),
    }
}

/// Plain text as one line of markdown text: what could be markup is backslash-escaped (the
/// characters that open inline markup anywhere, and those that open a block at the start), a
/// line end is shown as `⏎`, controls as escapes, and each mention or reference is a code span.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let (mut start, mut digits) = (true, true);
    for (reference, part) in crate::references::split(s) {
        if reference {
            out.push_str(&code(part));
            (start, digits) = (false, false);
            continue;
        }
        for c in part.chars() {
            let escape = match c {
                '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '&' | '|' | '~' | '$' => true,
                '-' | '+' | '=' | '#' | '>' => start,
                // `1.` or `1)` at the start would be a list.
                '.' | ')' => digits && !start,
                _ => false,
            };
            match c {
                '\n' => out.push_str(" ⏎ "),
                c if hidden(c) => out.extend(c.escape_default()),
                c if escape => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
            digits = (digits || start) && c.is_ascii_digit();
            start = start && c.is_whitespace();
        }
    }
    out
}

/// One line of markdown (hone's own message around untrusted words, a question, a plan step),
/// made inert like [`inert`] with its inline markup (code spans, emphasis, links) kept; when it
/// would not stay one line of inline text, it is escaped with [`text`].
pub fn inline(s: &str) -> String {
    if s.contains(['\n', '\r']) {
        return text(s);
    }
    let out = inert(s);
    let out = out.trim_end_matches('\n');
    let mut events = Parser::new_ext(out, options());
    let one_paragraph = matches!(events.next(), Some(Event::Start(Tag::Paragraph)))
        && events.all(|e| match e {
            Event::Start(t) => !matches!(t, Tag::Paragraph),
            Event::End(TagEnd::Paragraph) => true,
            Event::SoftBreak | Event::HardBreak => false,
            _ => true,
        });
    if one_paragraph && !out.contains('\n') && !out.is_empty() { out.to_string() } else { text(s) }
}

/// The longest run of `ch` in `s`.
fn longest_run(s: &str, ch: char) -> usize {
    s.split(|c| c != ch).map(str::len).max().unwrap_or(0)
}

/// Plain text as an inline code span that nothing in it can close (one line: a line end is `⏎`).
pub fn code(s: &str) -> String {
    let one: String = visible(&s.replace("\r\n", "\n")).replace('\n', "⏎");
    if one.is_empty() {
        return "` `".into();
    }
    let fence = "`".repeat(longest_run(&one, '`') + 1);
    let pad = one.starts_with('`') || one.ends_with('`') || (one.starts_with(' ') && one.ends_with(' '));
    if pad { format!("{fence} {one} {fence}") } else { format!("{fence}{one}{fence}") }
}

/// [`code`] for a table cell: a `|` would end the cell, even inside the code span.
pub fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// Plain text (a command's output) as a fenced code block that no line of it can close: the
/// fence is longer than any run of backticks in it. Ends with a newline.
pub fn code_block(s: &str) -> String {
    let body = visible(&s.replace("\r\n", "\n"));
    let body = body.trim_end_matches('\n');
    let fence = "`".repeat(3.max(longest_run(body, '`') + 1));
    format!("{fence}text\n{body}\n{fence}\n")
}

/// A message whose first line is hone's and whose next lines may be a command's output (an
/// error): the first line as [`inline`] markdown, the rest, if any, as a code block after it.
pub fn message(s: &str) -> String {
    let (first, rest) = s.split_once('\n').unwrap_or((s, ""));
    if rest.trim().is_empty() { inline(first) } else { format!("{}\n\n{}", inline(first), code_block(rest)) }
}

/// Every line of `block` after the first with `prefix` in front (a list item's indent), or every
/// line with `first` (a block quote's `> `), so that a code block stays inside its container.
pub fn nest(block: &str, first: &str, rest: &str) -> String {
    let mut out = String::with_capacity(block.len() + 16);
    for (i, l) in block.trim_end_matches('\n').split('\n').enumerate() {
        out.push_str(if i == 0 { first } else { rest });
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
