//! Reads JUnit XML written by test runners (pytest `--junitxml`, cargo nextest, jest, go-junit-report)
//! to list failing test cases by name.

/// The most failing cases kept from one report, and the most characters of each id: test code
/// writes these names, and they travel into every report and the model's context.
const MAX_CASES: usize = 1000;
const MAX_ID: usize = 300;

/// A test id as hone shows it: control characters as visible escapes, at most `MAX_ID`
/// characters (then `…`).
fn shown(id: &str) -> String {
    let mut out = String::new();
    for (i, c) in id.chars().enumerate() {
        if i == MAX_ID {
            out.push('…');
            break;
        }
        if c.is_control() { out.extend(c.escape_default()) } else { out.push(c) }
    }
    out
}

/// Ids (`classname::name`, or `name`) of the test cases that failed or errored, sorted, at most
/// `MAX_CASES` of them (the first in order).
pub fn failing_cases(xml: &str) -> Result<Vec<String>, String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not valid XML: {e}"))?;
    let mut out: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter(|n| n.children().any(|c| c.has_tag_name("failure") || c.has_tag_name("error")))
        .map(|n| {
            let name = n.attribute("name").unwrap_or("?");
            shown(&match n.attribute("classname").filter(|c| !c.is_empty()) {
                Some(c) => format!("{c}::{name}"),
                None => name.to_string(),
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out.truncate(MAX_CASES);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_shown_bounded_and_escaped() {
        let mut xml = String::from("<testsuite>");
        xml.push_str("<testcase name=\"a&#13;::error::x&#10;b\"><failure/></testcase>");
        xml.push_str(&format!("<testcase name=\"{}\"><failure/></testcase>", "n".repeat(5000)));
        for i in 0..1500 {
            xml.push_str(&format!("<testcase name=\"t{i:04}\"><error/></testcase>"));
        }
        xml.push_str("</testsuite>");
        let cases = failing_cases(&xml).unwrap();
        assert_eq!(cases.len(), MAX_CASES);
        assert!(cases.contains(&"a\\r::error::x\\nb".to_string()), "{:?}", &cases[..3]);
        assert!(cases.iter().all(|c| c.chars().count() <= MAX_ID + 1 && !c.contains(['\r', '\n'])));
    }

    #[test]
    fn reads_pytest_style_reports() {
        let xml = r#"<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="3">
            <testcase classname="tests.test_a" name="test_ok" time="0.1"/>
            <testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2">trace</failure></testcase>
            <testcase classname="tests.test_b" name="test_boom"><error message="boom"/></testcase>
            <testcase classname="tests.test_b" name="test_skip"><skipped/></testcase>
        </testsuite></testsuites>"#;
        assert_eq!(failing_cases(xml).unwrap(), ["tests.test_a::test_bad", "tests.test_b::test_boom"]);
        assert!(failing_cases("<unclosed").is_err());
    }
}
