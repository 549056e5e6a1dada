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

/// A digest of a test case's whole id: ids are compared whole, however long or many.
pub type Key = [u8; 16];

fn key(id: &str) -> Key {
    use sha2::Digest;
    let d = sha2::Sha256::digest(id.as_bytes());
    let mut k = [0; 16];
    k.copy_from_slice(&d[..16]);
    k
}

/// The test cases a JUnit file says failed or errored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failing {
    /// Their ids (`classname::name`, or `name`) as hone shows them, sorted: the first
    /// `MAX_CASES`.
    pub shown: Vec<String>,
    /// The key of each shown id's whole id, in the same order.
    shown_keys: Vec<Key>,
    /// The key of every failing case's whole id.
    all: std::collections::HashSet<Key>,
}

impl Failing {
    /// How many cases failed, shown or not.
    pub fn count(&self) -> usize {
        self.all.len()
    }

    /// The cases failing here that did not fail in `before`, as shown (a note of how many more
    /// when some are past the shown ones): judged on whole ids, so the caps on what is shown
    /// cannot hide one.
    pub fn new_since(&self, before: &Failing) -> Vec<String> {
        let mut out: Vec<String> = (self.shown.iter().zip(&self.shown_keys))
            .filter(|(_, k)| !before.all.contains(*k))
            .map(|(s, _)| s.clone())
            .collect();
        let new = self.all.iter().filter(|k| !before.all.contains(*k)).count();
        if new > out.len() {
            out.push(format!("(and {} more not shown)", new - out.len()));
        }
        out
    }
}

/// A JUnit file that is not XML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not valid XML: {0}")]
pub struct InvalidXml(roxmltree::Error);

/// The failing cases of a JUnit report.
pub fn failing_cases(xml: &str) -> Result<Failing, InvalidXml> {
    let doc = roxmltree::Document::parse(xml).map_err(InvalidXml)?;
    let mut ids: Vec<String> = doc
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
    ids.sort();
    ids.dedup();
    let all = ids.iter().map(|i| key(i)).collect();
    ids.truncate(MAX_CASES);
    Ok(Failing { shown: ids.iter().map(|i| shown(i)).collect(), shown_keys: ids.iter().map(|i| key(i)).collect(), all })
}

/// Every test case of a JUnit report that ran, by its whole id: those that passed and those that
/// failed or errored (skipped cases are neither).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub passed: std::collections::BTreeSet<String>,
    pub failed: std::collections::BTreeSet<String>,
}

/// The outcome of every case in a JUnit report (`hone eval` grades with it; issue 46).
pub fn outcomes(xml: &str) -> Result<Outcomes, InvalidXml> {
    let doc = roxmltree::Document::parse(xml).map_err(InvalidXml)?;
    let mut out = Outcomes::default();
    for n in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        let name = n.attribute("name").unwrap_or("?");
        let id = match n.attribute("classname").filter(|c| !c.is_empty()) {
            Some(c) => format!("{c}::{name}"),
            None => name.to_string(),
        };
        let has = |tag: &str| n.children().any(|c| c.has_tag_name(tag));
        if has("failure") || has("error") {
            out.failed.insert(id);
        } else if !has("skipped") {
            out.passed.insert(id);
        }
    }
    // A case reported twice, once failing, failed.
    let failed = out.failed.clone();
    out.passed.retain(|id| !failed.contains(id));
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
        let failing = failing_cases(&xml).unwrap();
        assert_eq!(failing.count(), 1502);
        let cases = failing.shown;
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
        assert_eq!(failing_cases(xml).unwrap().shown, ["tests.test_a::test_bad", "tests.test_b::test_boom"]);
        let o = outcomes(xml).unwrap();
        assert_eq!(o.passed.iter().collect::<Vec<_>>(), ["tests.test_a::test_ok"], "skipped is neither");
        assert_eq!(o.failed.len(), 2);
        let e = failing_cases("<unclosed").unwrap_err();
        assert!(e.to_string().starts_with("not valid XML: "), "{e}");
    }

    #[test]
    fn new_failures_are_judged_on_whole_ids_past_the_caps() {
        let xml = |names: &[String]| {
            let cases: String = names.iter().map(|n| format!("<testcase name=\"{n}\"><failure/></testcase>")).collect();
            format!("<testsuite>{cases}</testsuite>")
        };
        let many: Vec<String> = (0..1200).map(|i| format!("t{i:04}")).collect();
        let long = "p".repeat(400);
        let mut before_names = many.clone();
        before_names.push(format!("{long}a"));
        let before = failing_cases(&xml(&before_names)).unwrap();
        assert!(failing_cases(&xml(&before_names)).unwrap().new_since(&before).is_empty());
        let mut past_count = before_names.clone();
        past_count.push("zz".into());
        assert_eq!(failing_cases(&xml(&past_count)).unwrap().new_since(&before), ["(and 1 more not shown)"]);
        let mut past_length = before_names.clone();
        past_length.push(format!("{long}b"));
        let new = failing_cases(&xml(&past_length)).unwrap().new_since(&before);
        assert_eq!(new.len(), 1, "{new:?}");
    }
}
