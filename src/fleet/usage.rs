//! What the fleet's process holds, read from `/proc/self`: threads, open descriptors, child
//! processes and resident memory. Sampled before the pool, after each repository and after the
//! pool, and logged at debug level (`-v`), so that a person or a test can see they are bounded
//! by the concurrency and that nothing a repository used is left when it is done.

use std::path::Path;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub threads: usize,
    pub fds: usize,
    /// Child processes not yet reaped or still running (zombies included).
    pub children: usize,
    pub rss_kib: u64,
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// The process's usage now (zeros where `/proc` cannot say).
pub fn now() -> Usage {
    let me = Path::new("/proc/self");
    let tasks = me.join("task");
    // Each thread's children (`CONFIG_PROC_CHILDREN`): the process's children are their union.
    let children = std::fs::read_dir(&tasks).map_or(0, |d| {
        d.flatten()
            .map(|t| std::fs::read_to_string(t.path().join("children")).map_or(0, |c| c.split_whitespace().count()))
            .sum()
    });
    let rss_kib = std::fs::read_to_string(me.join("status")).ok().and_then(|s| rss(&s)).unwrap_or(0);
    // `read_dir` of `fd` holds a descriptor of its own while it counts.
    Usage { threads: entries(&tasks), fds: entries(&me.join("fd")).saturating_sub(1), children, rss_kib }
}

/// `VmRSS` of a `/proc/PID/status`, in KiB.
fn rss(status: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok())
}

impl Usage {
    /// The larger of each.
    pub fn max(self, o: Usage) -> Usage {
        Usage {
            threads: self.threads.max(o.threads),
            fds: self.fds.max(o.fds),
            children: self.children.max(o.children),
            rss_kib: self.rss_kib.max(o.rss_kib),
        }
    }
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "threads={} fds={} children={} rss_kib={}", self.threads, self.fds, self.children, self.rss_kib)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_is_read_from_proc() {
        let u = now();
        assert!(u.threads >= 1 && u.fds >= 3 && u.rss_kib > 0, "{u}");
        assert_eq!(rss("Name:\thone\nVmRSS:\t  15360 kB\n"), Some(15360));
        let a = Usage { threads: 3, fds: 9, children: 0, rss_kib: 10 };
        let b = Usage { threads: 2, fds: 12, children: 1, rss_kib: 5 };
        assert_eq!(a.max(b), Usage { threads: 3, fds: 12, children: 1, rss_kib: 10 });
        assert_eq!(a.to_string(), "threads=3 fds=9 children=0 rss_kib=10");
    }
}
