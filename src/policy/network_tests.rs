use super::*;

fn rules(texts: &[&str]) -> Vec<Rule> {
    texts.iter().enumerate().map(|(i, t)| Rule::parse(&format!("network.allow[{i}]"), t).unwrap()).collect()
}

fn allowed(list: &[&str], host: &str, port: u16) -> Option<String> {
    let r = rules(list);
    allowing(&r, &Target::parse(host).unwrap(), port).map(|r| r.text.clone())
}

#[test]
fn names_match_exactly_and_wildcards_only_below_their_domain() {
    assert_eq!(allowed(&["pypi.org"], "pypi.org", 443).as_deref(), Some("pypi.org"));
    assert_eq!(allowed(&["pypi.org"], "PyPI.org.", 80).as_deref(), Some("pypi.org"));
    assert_eq!(allowed(&["pypi.org"], "evilpypi.org", 443), None);
    assert_eq!(allowed(&["pypi.org"], "pypi.org.evil.com", 443), None);
    assert_eq!(allowed(&["pypi.org"], "files.pypi.org", 443), None);
    assert_eq!(allowed(&["*.pythonhosted.org"], "files.pythonhosted.org", 443).as_deref(), Some("*.pythonhosted.org"));
    assert_eq!(allowed(&["*.pythonhosted.org"], "a.b.pythonhosted.org", 443).as_deref(), Some("*.pythonhosted.org"));
    assert_eq!(allowed(&["*.pythonhosted.org"], "pythonhosted.org", 443), None);
    assert_eq!(allowed(&["*.pythonhosted.org"], "evilpythonhosted.org", 443), None);
}

#[test]
fn a_port_limits_a_rule_and_no_port_allows_any() {
    assert_eq!(allowed(&["example.com:8443"], "example.com", 8443).as_deref(), Some("example.com:8443"));
    assert_eq!(allowed(&["example.com:8443"], "example.com", 443), None);
    assert_eq!(allowed(&["example.com"], "example.com", 22).as_deref(), Some("example.com"));
}

#[test]
fn addresses_are_reached_only_when_listed_as_addresses() {
    assert_eq!(allowed(&["example.com"], "93.184.216.34", 443), None);
    assert_eq!(allowed(&["10.0.0.5:8080"], "10.0.0.5", 8080).as_deref(), Some("10.0.0.5:8080"));
    assert_eq!(allowed(&["10.0.0.5:8080"], "10.0.0.6", 8080), None);
    assert_eq!(allowed(&["[::1]:8080"], "[::1]", 8080).as_deref(), Some("[::1]:8080"));
    assert_eq!(allowed(&["::1"], "::1", 1).as_deref(), Some("::1"));
    // The IPv4-mapped form of a listed address is that address, and no name matches an address.
    assert_eq!(allowed(&["10.0.0.5"], "[::ffff:10.0.0.5]", 80).as_deref(), Some("10.0.0.5"));
    assert_eq!(allowed(&["localhost"], "127.0.0.1", 80), None);
}

#[test]
fn bad_rules_are_refused_with_a_reason() {
    for (text, why) in [
        ("*", "`*` may only start"),
        ("foo.*.com", "`*` may only start"),
        ("pypi.org:0", "not a port"),
        ("pypi.org:99999", "not a port"),
        ("pypi.org:https", "not a port"),
        ("exa mple.com", "not a host name"),
        ("a..b", "not a host name"),
        ("", "not a host name"),
        ("[::1", "lacks its `]`"),
        ("http://pypi.org", "not a port"),
    ] {
        let e = Rule::parse("k", text).unwrap_err().to_string();
        assert!(e.contains(why), "{text}: {e}");
    }
    assert_eq!(Rule::parse("k", "pypi.org:0"), Err(RuleError::NotAPort("0".into())));
    assert_eq!(Target::parse("127.1"), Err(RuleError::OddIpv4("127.1".into())));
    assert_eq!(RuleError::Wildcard.code(), crate::error::Code::Policy);
}

#[test]
fn names_resolving_to_special_addresses_are_refused_unless_the_address_is_listed() {
    let list = rules(&["pypi.org", "10.0.0.5"]);
    for (ip, why) in [
        ("127.0.0.1", Some("loopback")),
        ("127.8.9.1", Some("loopback")),
        ("::1", Some("loopback")),
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::127.0.0.1", Some("loopback")),
        ("169.254.169.254", Some("the cloud metadata service")),
        ("fd00:ec2::254", Some("the cloud metadata service")),
        ("169.254.1.1", Some("link-local")),
        ("fe80::1", Some("link-local")),
        ("10.1.2.3", Some("a private network")),
        ("172.16.0.1", Some("a private network")),
        ("192.168.1.1", Some("a private network")),
        ("fc00::1", Some("a private network (unique local)")),
        ("100.64.0.1", Some("shared address space (carrier NAT)")),
        ("0.0.0.0", Some("this network (0.0.0.0/8)")),
        ("::", Some("unspecified")),
        ("64:ff9b::7f00:1", Some("an address carrying an IPv4 one (NAT64, 6to4)")),
        ("224.0.0.1", Some("broadcast or multicast")),
        ("151.101.0.223", None),
        ("2a04:4e42::223", None),
        ("10.0.0.5", None),
        ("::ffff:10.0.0.5", None),
    ] {
        let ip: IpAddr = ip.parse().unwrap();
        assert_eq!(address_allowed(&list, ip, 443).err(), why, "{ip}");
    }
}

#[test]
fn jails_that_get_two_settings_get_the_wider() {
    let a = Egress::Allow(rules(&["a.org"]));
    let b = Egress::Allow(rules(&["b.org"]));
    assert_eq!(Egress::Off.with(&Egress::Off), Egress::Off);
    assert_eq!(Egress::Off.with(&a), a);
    assert_eq!(a.with(&Egress::Off), a);
    assert_eq!(a.with(&Egress::Open), Egress::Open);
    assert_eq!(Egress::Open.with(&Egress::Off), Egress::Open);
    assert_eq!(a.with(&b).rules().unwrap().len(), 2);
}

#[test]
fn targets_are_names_or_addresses() {
    assert_eq!(Target::parse("Example.COM").unwrap(), Target::Name("example.com".into()));
    assert_eq!(Target::parse("[2001:db8::1]").unwrap().to_string(), "[2001:db8::1]");
    assert_eq!(Target::parse("::ffff:1.2.3.4").unwrap().to_string(), "1.2.3.4");
    assert!(Target::parse("a b").is_err());
    assert!(Target::parse("evil.com\r\nX: y").is_err());
}
