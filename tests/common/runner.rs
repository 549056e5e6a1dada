//! What the GitHub Actions runner reads as workflow commands in a step's output, emulated after
//! actions/runner: `src/Runner.Sdk/ProcessInvoker.cs` reads the output a line at a time
//! (`StreamReader.ReadLine`: a line ends at LF, CR or CRLF), and `src/Runner.Common/ActionCommand.cs`
//! parses each line: `TryParseV2` trims the leading white space and wants `::name props::data`;
//! `TryParse` finds `##[name props]data` anywhere in the line. Both compare with the current
//! culture, which skips ignorable code points (`"#\u{200B}#["` matches `"##["`), so this reader
//! drops every control and format character first: it is stricter than the runner, never laxer.
//! Every command name counts (after `stop-commands`, any token is one).

/// One workflow command found in the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    /// The properties as written (`file=a.py,line=3`), escapes not undone.
    pub props: String,
    /// The data, with the runner's escapes (`%25`, `%0D`, `%0A`) undone.
    pub data: String,
    /// The line it was found in, for messages.
    pub line: String,
}

impl Found {
    /// A property's value, with the runner's property escapes undone.
    pub fn prop(&self, key: &str) -> Option<String> {
        self.props.split([',', ';']).find_map(|p| {
            let (k, v) = p.trim().split_once('=')?;
            (k == key).then(|| unescape(v).replace("%3A", ":").replace("%2C", ","))
        })
    }
}

/// Characters the culture-aware comparison may skip: C0 and C1 controls other than the line
/// ends, format characters and the other default-ignorable code points.
fn ignorable(c: char) -> bool {
    let u = c as u32;
    (c.is_control() && c != '\n' && c != '\r')
        || matches!(u,
            0x00AD | 0x034F | 0x061C | 0x115F..=0x1160 | 0x17B4..=0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
            | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF | 0x0600..=0x0605 | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2
            | 0x110BD | 0x110CD | 0x13430..=0x1343F)
}

fn unescape(s: &str) -> String {
    s.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
}

/// Every workflow command the runner would find in `output`.
pub fn commands(output: &str) -> Vec<Found> {
    let mut found = Vec::new();
    for raw in output.split(['\n', '\r']) {
        let line: String = raw.chars().filter(|c| !ignorable(*c)).collect();
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("::")
            && let Some(end) = rest.find("::")
        {
            let (name, props) = rest[..end].split_once(' ').unwrap_or((&rest[..end], ""));
            let data = unescape(&rest[end + 2..]);
            found.push(Found { name: name.into(), props: props.into(), data, line: raw.into() });
        }
        let mut from = 0;
        while let Some(at) = line[from..].find("##[").map(|i| from + i) {
            let info = &line[at + 3..];
            let Some(rb) = info.find(']') else { break };
            let (name, props) = info[..rb].split_once(' ').unwrap_or((&info[..rb], ""));
            let data = unescape(&info[rb + 1..]);
            found.push(Found { name: name.into(), props: props.into(), data, line: raw.into() });
            from = at + 3;
        }
    }
    found
}

/// The commands in `output` that hone did not mean: anything but its groups, its own `::error`
/// annotations (title `hone…`) and `::add-mask::` of a value for which `is_secret` says yes.
pub fn unintended(output: &str, is_secret: &dyn Fn(&str) -> bool) -> Vec<Found> {
    commands(output)
        .into_iter()
        .filter(|c| match c.name.as_str() {
            "group" => !c.data.starts_with("hone ") || !c.line.starts_with("::group::hone "),
            "endgroup" => c.line != "::endgroup::",
            "error" => !c.line.starts_with("::error ") || !c.prop("title").is_some_and(|t| t.starts_with("hone")),
            "add-mask" => !c.line.starts_with("::add-mask::") || !is_secret(&c.data),
            _ => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_forms_as_the_runner_does() {
        let out = "a ##[error file=x;line=1]boo\r  ::warning::w%0Ax\nplain :: text\n#\u{200B}#[debug]z";
        let names: Vec<String> = commands(out).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["error", "warning", "debug"]);
        assert_eq!(commands("  ::warning::w%0Ax")[0].data, "w\nx");
    }
}
