//! GitLab's dotenv report (`artifacts: reports: dotenv:`): what a run or a fleet did and spent as
//! `HONE_*` variables that later jobs of the pipeline read. One line per variable; a value is
//! kept to one line of plain characters, so nothing a run quotes can add a variable.

/// The variable for an output's name: `input-tokens` is `HONE_INPUT_TOKENS`.
pub fn var(name: &str) -> String {
    format!("HONE_{}", name.to_ascii_uppercase().replace('-', "_"))
}

/// `pairs` as a dotenv file. A value loses what GitLab's reader would not keep on one line
/// (line ends, other control characters), and is cut at 1 KiB.
pub fn render(pairs: &[(&str, String)]) -> String {
    let mut out = String::new();
    for (name, value) in pairs {
        let clean: String = value.chars().filter(|c| !c.is_control()).take(1024).collect();
        out.push_str(&format!("{}={}\n", var(name), clean.trim()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_variable_per_line_whatever_the_values_hold() {
        let text = render(&[("input-tokens", "300".into()), ("status", "failed\nHONE_COST_USD=0".into())]);
        assert_eq!(text, "HONE_INPUT_TOKENS=300\nHONE_STATUS=failedHONE_COST_USD=0\n");
        assert_eq!(text.lines().count(), 2, "a line end in a value adds no variable");
    }
}
