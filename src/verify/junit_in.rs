//! Reads JUnit XML written by test runners (pytest `--junitxml`, cargo nextest, jest, go-junit-report)
//! to list failing test cases by name.

/// Ids (`classname::name`, or `name`) of the test cases that failed or errored, sorted.
pub fn failing_cases(xml: &str) -> Result<Vec<String>, String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not valid XML: {e}"))?;
    let mut out: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter(|n| n.children().any(|c| c.has_tag_name("failure") || c.has_tag_name("error")))
        .map(|n| {
            let name = n.attribute("name").unwrap_or("?");
            match n.attribute("classname").filter(|c| !c.is_empty()) {
                Some(c) => format!("{c}::{name}"),
                None => name.to_string(),
            }
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
