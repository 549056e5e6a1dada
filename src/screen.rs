//! Where a live status (a fleet's progress) is written on stderr: on a terminal, one status line redrawn in place, which
//! every other line (a failure, a log line) clears first and draws again after; in a log, plain
//! lines only, never a carriage return or an escape code. Every line's text is made neutral for
//! the CI runner (`ci_text::line`), so no repository's text can be a workflow command or drive
//! the terminal.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

/// Back to the start of the line, and erase it.
const CLEAR: &str = "\r\x1b[2K";
/// No wrapping while the status line is drawn (a line wider than the terminal is cut at its
/// edge, so `CLEAR` always erases all of it), and wrapping again after.
const NOWRAP: &str = "\x1b[?7l";
const WRAP: &str = "\x1b[?7h";

pub struct Screen {
    w: Box<dyn Write + Send>,
    tty: bool,
    /// The status line on the terminal now, if one is.
    shown: Option<String>,
}

impl Screen {
    pub fn new(w: Box<dyn Write + Send>, tty: bool) -> Self {
        Screen { w, tty, shown: None }
    }

    /// One write (so that concurrent writers never split it), errors ignored: progress must
    /// never fail a fleet.
    fn put(&mut self, s: &str) {
        let _ = self.w.write_all(s.as_bytes()).and_then(|()| self.w.flush());
    }

    fn drawn(status: &str) -> String {
        format!("{CLEAR}{NOWRAP}{}{WRAP}", crate::ci_text::line(status))
    }

    /// A line of its own, above the status line on a terminal.
    pub fn line(&mut self, text: &str) {
        let mut out = if self.shown.is_some() { CLEAR.to_string() } else { String::new() };
        out.push_str(&crate::ci_text::line(text));
        out.push('\n');
        if let Some(s) = &self.shown {
            out.push_str(&Self::drawn(s));
        }
        self.put(&out);
    }

    /// The status line: drawn in place on a terminal, a line of its own in a log.
    pub fn status(&mut self, text: &str) {
        if self.tty {
            self.put(&Self::drawn(text));
            self.shown = Some(text.to_string());
        } else {
            self.line(text);
        }
    }

    /// The last status line, left as an ordinary line; nothing is drawn after it.
    pub fn finish(&mut self, text: &str) {
        self.shown = None;
        let clear = if self.tty { CLEAR } else { "" };
        self.put(&format!("{clear}{}\n", crate::ci_text::line(text)));
    }

    /// Someone else's write to the same terminal (`write`, already neutral): the status line is
    /// cleared before it and drawn again after.
    fn around(&mut self, write: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
        if self.shown.is_some() {
            self.put(CLEAR);
        }
        let r = write();
        if let Some(s) = self.shown.clone() {
            self.put(&Self::drawn(&s));
        }
        r
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The screen whose status line is on the terminal now, if any (a fleet's).
static ACTIVE: Mutex<Option<Arc<Mutex<Screen>>>> = Mutex::new(None);

/// The screen is the terminal's: other writers to stderr go through [`above_status`].
pub fn install(screen: &Arc<Mutex<Screen>>) {
    *lock(&ACTIVE) = Some(screen.clone());
}

/// The screen is no longer the terminal's (when it still was).
pub fn uninstall_if(screen: &Arc<Mutex<Screen>>) {
    let mut active = lock(&ACTIVE);
    if active.as_ref().is_some_and(|a| Arc::ptr_eq(a, screen)) {
        *active = None;
    }
}

/// Write to stderr with `write` (a log line), above the fleet's status line when one is drawn.
pub fn above_status(write: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
    let active = lock(&ACTIVE).clone();
    match active {
        Some(screen) => lock(&screen).around(write),
        None => write(),
    }
}

/// Lock a screen (whatever a panicking writer left).
pub fn locked(screen: &Mutex<Screen>) -> MutexGuard<'_, Screen> {
    lock(screen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Mem;

    fn screen(tty: bool) -> (Screen, Mem) {
        let mem = Mem::default();
        (Screen::new(Box::new(mem.clone()), tty), mem)
    }

    fn text(m: &Mem) -> String {
        String::from_utf8(m.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_terminal_redraws_one_line_and_clears_it_for_every_other_line() {
        let (mut s, mem) = screen(true);
        s.status("1/3 done");
        s.status("2/3 done");
        s.line("r1 failed");
        s.around(|| mem.clone().write_all(b"a log line\n")).unwrap();
        s.finish("3/3 done");
        s.line("after");
        let d = |t: &str| format!("\r\x1b[2K\x1b[?7l{t}\x1b[?7h");
        let want = [
            d("1/3 done"),
            d("2/3 done"),
            "\r\x1b[2Kr1 failed\n".into(),
            d("2/3 done"),
            "\r\x1b[2Ka log line\n".into(),
            d("2/3 done"),
            "\r\x1b[2K3/3 done\n".into(),
            "after\n".into(),
        ];
        assert_eq!(text(&mem), want.concat());
    }

    #[test]
    fn a_log_gets_plain_lines_only() {
        let (mut s, mem) = screen(false);
        s.status("1/3 done");
        s.line("r1 failed");
        s.around(|| mem.clone().write_all(b"log\n")).unwrap();
        s.finish("3/3 done");
        assert_eq!(text(&mem), "1/3 done\nr1 failed\nlog\n3/3 done\n");
    }

    #[test]
    fn no_line_can_carry_a_command_or_an_escape_code_on_either() {
        for tty in [true, false] {
            let (mut s, mem) = screen(tty);
            s.status("x");
            s.line("  ::stop-commands::t\r::error::forged \x1b[2J ##[warning]w");
            s.finish("::add-mask::y");
            let out = text(&mem);
            let own = ["\r\x1b[2K", "\x1b[?7l", "\x1b[?7h"];
            let rest = own.iter().fold(out.clone(), |o, c| o.replace(c, ""));
            assert!(!rest.contains('\r') && !rest.contains('\x1b'), "{out:?}");
            for l in rest.lines() {
                assert!(!l.trim_start().starts_with("::") && !l.contains("##["), "{l:?} in {out:?}");
            }
        }
    }
}
