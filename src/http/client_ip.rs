//! Who the client is, for rate limiting: an IP address, never header text a client chose.
//!
//! The peer (the TCP connection's remote address) is the client, unless it is one of the
//! trusted proxies (`TRUSTED_PROXIES`): then the client is the rightmost address of
//! `X-Forwarded-For` (every such header, in order) that is not a trusted proxy, since each
//! trusted proxy appends the address it received the request from and everything left of
//! that may be forged. Entries that are not IP addresses stop the walk (the address right
//! of them, or the peer, is the client): a client cannot get a fresh budget by varying the
//! header.
use ipnet::IpNet;
use poem::http::HeaderMap;
use std::net::IpAddr;

/// `X-Forwarded-For`.
const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The client address of a request from `peer` with `headers` (see the module docs).
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(&canonical(*ip)));
    if !is_trusted(&peer) {
        return canonical(peer);
    }
    let mut client = canonical(peer);
    let entries: Vec<&str> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for entry in entries.iter().rev() {
        let Some(ip) = parse_entry(entry) else {
            break;
        };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    client
}

/// An `X-Forwarded-For` entry: an IP, with a port (`1.2.3.4:5678`, `[::1]:5678`) allowed.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Ok(sock) = entry.parse::<std::net::SocketAddr>() {
        return Some(canonical(sock.ip()));
    }
    let (host, _port) = entry.rsplit_once(':')?;
    host.parse::<std::net::Ipv4Addr>()
        .ok()
        .map(|v4| canonical(IpAddr::V4(v4)))
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) as IPv4, so one client has one key.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem::http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(X_FORWARDED_FOR, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn without_trusted_proxies_the_peer_is_the_client() {
        let h = headers(&["203.0.113.7"]);
        assert_eq!(client_ip(ip("10.0.0.5"), &h, &[]), ip("10.0.0.5"));
    }

    #[test]
    fn an_untrusted_peer_cannot_choose_its_address() {
        let h = headers(&["203.0.113.7"]);
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(
            client_ip(ip("198.51.100.1"), &h, &trusted),
            ip("198.51.100.1")
        );
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        let trusted = nets(&["10.0.0.0/8", "192.168.1.10/32"]);
        // A client forging a left part: the proxy appended the real address last.
        let h = headers(&["1.1.1.1, 2.2.2.2, 203.0.113.7, 10.1.2.3"]);
        assert_eq!(
            client_ip(ip("192.168.1.10"), &h, &trusted),
            ip("203.0.113.7")
        );
        // Several headers are one list, in order.
        let h = headers(&["1.1.1.1", "203.0.113.8", "10.1.2.3"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("203.0.113.8"));
    }

    #[test]
    fn varying_the_forged_part_keeps_the_same_client() {
        let trusted = nets(&["10.0.0.0/8"]);
        let a = client_ip(
            ip("10.0.0.1"),
            &headers(&["9.9.9.9, 203.0.113.7"]),
            &trusted,
        );
        let b = client_ip(
            ip("10.0.0.1"),
            &headers(&["junk, 8.8.8.8, 203.0.113.7"]),
            &trusted,
        );
        assert_eq!(a, b);
        assert_eq!(a, ip("203.0.113.7"));
    }

    #[test]
    fn junk_stops_the_walk_at_the_last_address_a_trusted_proxy_wrote() {
        let trusted = nets(&["10.0.0.0/8"]);
        let h = headers(&["not-an-ip, 10.0.0.9"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.9"));
        let h = headers(&["<script>"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.1"));
        let h = headers(&[]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("10.0.0.1"));
    }

    #[test]
    fn ports_and_mapped_addresses_are_normalised() {
        let trusted = nets(&["10.0.0.0/8"]);
        let h = headers(&["203.0.113.7:5555"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("203.0.113.7"));
        let h = headers(&["[2001:db8::1]:443"]);
        assert_eq!(client_ip(ip("10.0.0.1"), &h, &trusted), ip("2001:db8::1"));
        assert_eq!(
            client_ip(ip("::ffff:10.0.0.1"), &headers(&["203.0.113.9"]), &trusted),
            ip("203.0.113.9")
        );
    }
}
