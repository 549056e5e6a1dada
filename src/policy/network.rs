//! Where commands, setup and MCP servers may connect (`network:` in the policy): nowhere, anywhere,
//! or only to the hosts an allow-list names. The decisions are pure: which rule names a host,
//! and which addresses a name may resolve to (never loopback, private, link-local or metadata
//! ones unless the list names that address). The parsers (`Rule::parse`, `name`,
//! `Target::parse`) say what is wrong with a `RuleError`: a policy diagnostic's message, or why
//! the proxy refuses a request.

use super::rule_error::RuleError;
use crate::spec::{Diagnostic, yaml};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What one jail may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Egress {
    /// A network namespace with loopback only.
    #[default]
    Off,
    /// The host's network.
    Open,
    /// Only hone's proxy, which connects only where a rule allows.
    Allow(Vec<Rule>),
}

impl Egress {
    pub fn is_open(&self) -> bool {
        matches!(self, Egress::Open)
    }
    /// The rules, when this is an allow-list.
    pub fn rules(&self) -> Option<&[Rule]> {
        match self {
            Egress::Allow(r) => Some(r),
            _ => None,
        }
    }
    /// What a jail gets that has both `self` and `more`: the whole network if either has it,
    /// else both lists.
    pub fn with(&self, more: &Egress) -> Egress {
        match (self, more) {
            (Egress::Open, _) | (_, Egress::Open) => Egress::Open,
            (Egress::Off, o) | (o, Egress::Off) => o.clone(),
            (Egress::Allow(a), Egress::Allow(b)) => Egress::Allow(a.iter().chain(b).cloned().collect()),
        }
    }
    /// For reports: `off`, `open` or `allow-list`.
    pub fn mode(&self) -> &'static str {
        match self {
            Egress::Off => "off",
            Egress::Open => "open",
            Egress::Allow(_) => "allow-list",
        }
    }
}

/// The host part of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    /// A name, lower case, no trailing dot: `pypi.org`.
    Name(String),
    /// `*.example.com`: any name under `example.com` (not `example.com` itself).
    Under(String),
    /// An address, allowed only when asked for by that address (or a name that resolves to it).
    Addr(IpAddr),
}

/// One entry of an allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Where it came from, e.g. `setup.network.allow[1]`.
    pub key: String,
    /// As written.
    pub text: String,
    pub host: HostRule,
    /// `None`: any port.
    pub port: Option<u16>,
}

impl Rule {
    /// Parse `host`, `*.domain`, `host:port`, an IPv4 address, or an IPv6 one (in brackets to
    /// give a port).
    pub fn parse(key: &str, text: &str) -> Result<Rule, RuleError> {
        let t = text.trim();
        let (host, port) = split_port(t)?;
        let host = if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            HostRule::Addr(ip)
        } else if let Some(rest) = host.strip_prefix("*.") {
            HostRule::Under(name(rest)?)
        } else if host == "*" || host.contains('*') {
            return Err(RuleError::Wildcard);
        } else {
            HostRule::Name(name(host)?)
        };
        Ok(Rule { key: key.into(), text: t.into(), host, port })
    }

    /// How the rule reads in messages: ``network.allow[0] `pypi.org` ``.
    pub fn cite(&self) -> String {
        format!("{} `{}`", self.key, self.text)
    }

    fn port_ok(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }
}

/// `host[:port]` or `[v6]:port`; a bare IPv6 address has no port.
fn split_port(t: &str) -> Result<(&str, Option<u16>), RuleError> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| RuleError::NotAPort(p.into()));
    if let Some(rest) = t.strip_prefix('[') {
        let (addr, after) = rest.split_once(']').ok_or(RuleError::UnclosedBracket)?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((&t[..addr.len() + 2], Some(port(p)?))),
            None if after.is_empty() => Ok((t, None)),
            None => Err(RuleError::AfterAddress(after.into())),
        };
    }
    if t.parse::<Ipv6Addr>().is_ok() {
        return Ok((t, None));
    }
    match t.rsplit_once(':') {
        Some((h, p)) => Ok((h, Some(port(p)?))),
        None => Ok((t, None)),
    }
}

/// A host name as hone compares it: lower case, no trailing dot; letters, digits, `-`, `_` and
/// dots between non-empty labels.
pub fn name(raw: &str) -> Result<String, RuleError> {
    let n = raw.strip_suffix('.').unwrap_or(raw).to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if n.is_empty() || n.len() > 253 || !n.split('.').all(label_ok) {
        return Err(RuleError::NotAHostName(raw.into()));
    }
    // `127.1`, `0x7f.1`, `2130706433`: the system's resolver reads these as IPv4 addresses (and
    // no top-level domain is a number), so they are not names a rule could name.
    let last = n.rsplit('.').next().unwrap_or_default();
    let hex = last.strip_prefix("0x").is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(RuleError::OddIpv4(raw.into()));
    }
    Ok(n)
}

/// What a client asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Name(String),
    Addr(IpAddr),
}

impl Target {
    /// A request's host: an address (IPv6 in brackets or not) or a host name.
    pub fn parse(host: &str) -> Result<Target, RuleError> {
        let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => Ok(Target::Addr(canonical(ip))),
            Err(_) => name(host).map(Target::Name),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Addr(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Target::Addr(a) => write!(f, "{a}"),
        }
    }
}

/// The rule that allows `target:port`, if any. Pure.
pub fn allowing<'a>(rules: &'a [Rule], target: &Target, port: u16) -> Option<&'a Rule> {
    rules.iter().find(|r| {
        r.port_ok(port)
            && match (&r.host, target) {
                (HostRule::Name(n), Target::Name(t)) => n == t,
                (HostRule::Under(d), Target::Name(t)) => t.strip_suffix(d.as_str()).is_some_and(|s| s.ends_with('.')),
                (HostRule::Addr(a), Target::Addr(t)) => canonical(*a) == *t,
                _ => false,
            }
    })
}

/// Why an address may not be reached by name: loopback, private, link-local (the cloud
/// metadata service among them), and the like. `None` for a public address. Pure.
pub fn special(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(a) => special_v4(a),
        IpAddr::V6(a) => special_v6(a),
    }
}

fn special_v4(a: Ipv4Addr) -> Option<&'static str> {
    let o = a.octets();
    Some(match o {
        [169, 254, 169, 254] => "the cloud metadata service",
        _ if a.is_loopback() => "loopback",
        _ if a.is_private() => "a private network",
        _ if a.is_link_local() => "link-local",
        [100, b, ..] if (64..128).contains(&b) => "shared address space (carrier NAT)",
        [0, ..] => "this network (0.0.0.0/8)",
        _ if a.is_broadcast() || a.is_multicast() => "broadcast or multicast",
        [192, 0, 0, _] => "IETF protocol assignments",
        [198, 18..=19, ..] => "benchmarking networks",
        [240..=255, ..] => "reserved",
        _ => return None,
    })
}

fn special_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    Some(match s {
        _ if a.is_loopback() => "loopback",
        _ if a.is_unspecified() => "unspecified",
        [0xfd00, 0x0ec2, ..] => "the cloud metadata service",
        [x, ..] if x & 0xfe00 == 0xfc00 => "a private network (unique local)",
        [x, ..] if x & 0xffc0 == 0xfe80 => "link-local",
        [x, ..] if x & 0xffc0 == 0xfec0 => "site-local",
        [x, ..] if x & 0xff00 == 0xff00 => "multicast",
        // NAT64 and 6to4 carry an IPv4 address that may be private.
        // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48), 6to4 and IPv4-translated
        // (SIIT) addresses carry an IPv4 address that may be private.
        [0x64, 0xff9b, ..] | [0x2002, ..] | [0, 0, 0, 0, 0xffff, 0, ..] => {
            "an address carrying an IPv4 one (NAT64, 6to4)"
        }
        _ => return None,
    })
}

/// IPv4-mapped and IPv4-compatible IPv6 addresses as the IPv4 address they carry.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None if a.segments()[..6] == [0; 6] && !a.is_loopback() && !a.is_unspecified() => {
                IpAddr::V4(Ipv4Addr::from_bits(a.to_bits() as u32))
            }
            None => ip,
        },
        v4 => v4,
    }
}

/// Whether a name's answer `ip` may be connected to at `port`: a public address, or one a rule
/// names for that port (an address listed as `10.0.0.5:8080` is reached by name on 8080 only).
/// Pure.
pub fn address_allowed(rules: &[Rule], ip: IpAddr, port: u16) -> Result<(), &'static str> {
    let listed =
        rules.iter().any(|r| r.port_ok(port) && matches!(r.host, HostRule::Addr(a) if canonical(a) == canonical(ip)));
    match special(ip) {
        Some(why) if !listed => Err(why),
        _ => Ok(()),
    }
}

/// `KEY: true | false | { allow: [...] }` from the policy, each rule checked at its position.
pub(super) fn load(
    raw: Option<super::raw::RawNetwork>,
    key: &str,
    map: &yaml::SourceMap,
    errors: &mut Vec<Diagnostic>,
) -> Option<Egress> {
    Some(match raw? {
        super::raw::RawNetwork::Switch(true) => Egress::Open,
        super::raw::RawNetwork::Switch(false) => Egress::Off,
        super::raw::RawNetwork::List(l) => {
            let mut rules = Vec::new();
            for (i, text) in l.allow.iter().enumerate() {
                let k = format!("{key}.allow[{i}]");
                match Rule::parse(&k, text) {
                    Ok(r) => rules.push(r),
                    Err(e) => errors.push(map.at_value(
                        &k,
                        format!("bad network rule: {e}"),
                        Some("a host name (`pypi.org`), `*.` and a domain (`*.pythonhosted.org`), or an address; `:PORT` limits it to one port".into()),
                    )),
                }
            }
            Egress::Allow(rules)
        }
    })
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
