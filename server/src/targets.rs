//! Which addresses a webhook may be delivered to. A plain helper: no I/O
//! but the name lookups it is asked for.
//!
//! An endpoint URL is whatever an operator (or whoever can run `idem
//! webhook add`) typed, and the relay posts signed bodies to it from inside
//! the network idem runs in. Left open, that reaches what only idem's host
//! can reach: the loopback services, the private network, and the cloud
//! metadata address (169.254.169.254), which hands out credentials. So the
//! relay refuses those addresses twice: when the endpoint is added, and at
//! every delivery, after the name is resolved (a name may be re-pointed
//! after it was checked). `--allow-private-webhooks` turns the rule off for
//! tests and the embedded demo, whose receivers listen on 127.0.0.1.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why an address may not receive webhooks, or `None` when it may.
pub fn refused(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => {
            // ::ffff:a.b.c.d is the IPv4 address a.b.c.d on the wire.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return refused_v4(v4);
            }
            refused_v6(v6)
        }
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private-network address")
    } else if ip.is_link_local() {
        Some("a link-local address (the cloud metadata service lives there)")
    } else if ip.is_multicast() || ip.is_broadcast() {
        Some("a multicast or broadcast address")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("an unspecified address")
    } else if o[0] == 100 && (64..128).contains(&o[1]) {
        Some("a shared (carrier-grade NAT) address")
    } else if o[0] >= 240 {
        Some("a reserved address")
    } else if ip.is_documentation() || (o[0] == 198 && (o[1] == 18 || o[1] == 19)) {
        Some("a documentation or benchmarking address")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if s[0] & 0xfe00 == 0xfc00 {
        Some("a unique-local (private) address")
    } else if s[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if s[0] == 0x64 && s[1] == 0xff9b {
        // NAT64 carries an IPv4 address in its last 32 bits.
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        refused_v4(v4)
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        Some("a documentation address")
    } else {
        None
    }
}

/// Resolves `url`'s host and refuses it when any address it names is one
/// [`refused`] rules out; the message names the host, the address and why.
/// A name that does not resolve now passes (`Ok(false)`): the relay
/// resolves it again at every delivery and refuses it then if it must.
pub async fn check_url_target(url: &reqwest::Url) -> Result<bool, String> {
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(443);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => match tokio::net::lookup_host((bare, port)).await {
            Ok(a) => a.collect(),
            Err(_) => return Ok(false),
        },
    };
    for a in &addrs {
        if let Some(why) = refused(a.ip()) {
            return Err(format!(
                "{host:?} points at {} ({why}): webhooks go to public addresses only \
                 (--allow-private-webhooks is for tests and the embedded demo)",
                a.ip()
            ));
        }
    }
    Ok(!addrs.is_empty())
}

/// The relay's resolver: the system's, with every refused address removed
/// (a name that resolves to nothing else fails the attempt), so a name
/// re-pointed at a private address after `webhook add` is caught at the
/// connection itself.
#[derive(Debug, Default)]
pub struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| refused(a.ip()).is_none())
                .collect();
            if public.is_empty() {
                let why = all
                    .first()
                    .and_then(|a| refused(a.ip()))
                    .unwrap_or("no address");
                return Err(format!(
                    "{host} resolves only to addresses webhooks may not reach ({why})"
                )
                .into());
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_refused() {
        for a in [
            "127.0.0.1",
            "127.1.2.3",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            let ip: IpAddr = a.parse().unwrap_or_else(|_| panic!("{a}"));
            assert!(refused(ip).is_some(), "{a} must be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for a in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            let ip: IpAddr = a.parse().unwrap_or_else(|_| panic!("{a}"));
            assert_eq!(refused(ip), None, "{a}");
        }
    }

    #[tokio::test]
    async fn a_literal_or_a_name_that_points_inside_is_refused() {
        for u in [
            "http://127.0.0.1:8080/hook",
            "http://[::ffff:7f00:1]/hook",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:9/hook",
        ] {
            let url = reqwest::Url::parse(u).unwrap_or_else(|_| panic!("{u}"));
            let e = check_url_target(&url).await.unwrap_err();
            assert!(
                e.contains("webhooks go to public addresses only"),
                "{u}: {e}"
            );
        }
    }
}
