use super::*;
use proptest::prelude::*;

fn try_(number: u32, accepted: bool, new_failures: usize, lines: u64, cost_usd: f64) -> Candidate {
    Candidate { number, refused: false, empty: false, accepted, verified: true, new_failures, lines, cost_usd }
}

#[test]
fn the_small_passing_change_beats_the_large_one_and_the_broken_one() {
    let tries = [try_(1, false, 1, 12, 0.02), try_(2, true, 0, 240, 0.05), try_(3, true, 0, 9, 0.04)];
    assert_eq!(choose(&tries), Some(Choice { number: 3, why: Why::Lines }));
}

#[test]
fn a_refused_or_empty_try_never_wins_however_well_it_checks() {
    let mut best = try_(1, true, 0, 3, 0.01);
    best.refused = true;
    let mut empty = try_(2, true, 0, 0, 0.0);
    empty.empty = true;
    let worse = try_(3, false, 2, 50, 0.2);
    assert_eq!(choose(&[best.clone(), empty.clone(), worse]), Some(Choice { number: 3, why: Why::OnlyOne }));
    assert_eq!(choose(&[best, empty]), None, "no try may win");
    assert_eq!(choose(&[]), None);
}

#[test]
fn each_rung_decides_when_those_above_it_are_equal() {
    let cases = [
        (try_(2, true, 3, 90, 0.9), try_(1, false, 0, 1, 0.0), Why::Checks),
        (try_(2, false, 1, 90, 0.9), try_(1, false, 2, 1, 0.0), Why::NewFailures),
        // A try that never verified knows no count of new failures: it ranks below one that did.
        (try_(2, false, 1, 90, 0.9), Candidate { verified: false, ..try_(1, false, 0, 1, 0.0) }, Why::NewFailures),
        (try_(2, true, 0, 10, 0.9), try_(1, true, 0, 11, 0.0), Why::Lines),
        (try_(2, true, 0, 10, 0.1), try_(1, true, 0, 10, 0.2), Why::Cost),
        (try_(1, true, 0, 10, 0.1), try_(2, true, 0, 10, 0.1), Why::Earlier),
    ];
    for (winner, other, why) in cases {
        let got = choose(&[other.clone(), winner.clone()]);
        assert_eq!(got, Some(Choice { number: winner.number, why }), "{winner:?} over {other:?}");
    }
}

fn arb_try() -> impl Strategy<Value = Candidate> {
    (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), 0usize..4, 0u64..50, 0u32..4).prop_map(
        |(refused, empty, accepted, verified, new_failures, lines, cents)| Candidate {
            number: 0,
            refused,
            empty,
            accepted: accepted && verified,
            verified,
            new_failures,
            lines,
            cost_usd: f64::from(cents) / 100.0,
        },
    )
}

proptest! {
    /// The winner may win, is at least as good as every other try that may, and does not depend
    /// on the order the tries are given in.
    #[test]
    fn the_winner_is_the_best_that_may_win_in_any_order(mut tries in prop::collection::vec(arb_try(), 0..6), seed in any::<u64>()) {
        for (i, t) in tries.iter_mut().enumerate() {
            t.number = i as u32 + 1;
        }
        let got = choose(&tries);
        let able: Vec<&Candidate> = tries.iter().filter(|t| !t.refused && !t.empty).collect();
        prop_assert_eq!(got.is_none(), able.is_empty());
        if let Some(c) = got {
            let w = tries.iter().find(|t| t.number == c.number).unwrap();
            prop_assert!(!w.refused && !w.empty);
            for t in &able {
                prop_assert!(rank(w, t).0.is_le(), "{:?} beat {:?}", t, w);
            }
        }
        let mut shuffled = tries.clone();
        let n = shuffled.len().max(1);
        shuffled.rotate_left((seed as usize) % n);
        prop_assert_eq!(choose(&shuffled), got);
    }
}
