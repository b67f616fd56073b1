//! The listening TCP sockets of the network namespace, read from
//! `/proc/net/tcp` and `/proc/net/tcp6`.
//!
//! On the host the supervisor lets the guarded tree connect to a loopback
//! port only when every listening socket that could take the connection is
//! one the tree bound itself (by socket inode). The tables are the
//! kernel's text, but their size depends on every process of the host, so
//! they are read with limits: at most [`MAX_TABLE_BYTES`] per table and
//! [`MAX_LINE`] bytes per line. A line that is not in the kernel's form
//! makes the whole table unreadable (the caller then refuses: a socket it
//! cannot see could be the one that answers).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The most of one table read; a larger one is unreadable.
pub(crate) const MAX_TABLE_BYTES: usize = 32 << 20;

/// The longest line taken (the kernel pads each to 150 bytes).
pub(crate) const MAX_LINE: usize = 512;

/// `TCP_LISTEN` as the tables print it.
const LISTEN: &[u8] = b"0A";

/// One listening socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Listener {
    /// The address it is bound to (unspecified for a wildcard).
    pub(crate) addr: IpAddr,
    pub(crate) port: u16,
    /// Its socket inode (what `fstat` of a descriptor of it gives).
    pub(crate) inode: u64,
}

/// Why a table could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableError {
    TooLarge,
    LineTooLong,
    Malformed,
}

fn hex_u32(h: &[u8]) -> Option<u32> {
    if h.len() != 8 || !h.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
}

/// An address as the tables print it: each 32-bit word of the address in
/// network order, printed as the number this machine reads from it.
fn address(h: &[u8]) -> Option<IpAddr> {
    match h.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(hex_u32(h)?.to_ne_bytes()))),
        32 => {
            let mut b = [0u8; 16];
            for (i, word) in h.chunks(8).enumerate() {
                b[i * 4..i * 4 + 4].copy_from_slice(&hex_u32(word)?.to_ne_bytes());
            }
            Some(IpAddr::V6(Ipv6Addr::from(b)))
        }
        _ => None,
    }
}

/// `ADDRESS:PORT`, the port in hexadecimal.
fn endpoint(f: &[u8]) -> Option<(IpAddr, u16)> {
    let colon = f.iter().position(|&c| c == b':')?;
    let (a, p) = (&f[..colon], &f[colon + 1..]);
    if p.len() != 4 || !p.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let port = u16::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok()?;
    Some((address(a)?, port))
}

/// One line after the header: `sl local remote st queues timer retransmits
/// uid timeout inode ...`. `Ok(None)` for a socket that is not listening.
fn line(l: &[u8]) -> Result<Option<Listener>, TableError> {
    let mut fields = l
        .split(|c| c.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let mut next = || fields.next().ok_or(TableError::Malformed);
    let slot = next()?;
    if slot.last() != Some(&b':') {
        return Err(TableError::Malformed);
    }
    let local = next()?;
    let _remote = next()?;
    let state = next()?;
    for _ in 0..5 {
        next()?;
    }
    let inode = next()?;
    if state != LISTEN {
        return Ok(None);
    }
    let (addr, port) = endpoint(local).ok_or(TableError::Malformed)?;
    let inode = std::str::from_utf8(inode)
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
        .ok_or(TableError::Malformed)?;
    Ok(Some(Listener { addr, port, inode }))
}

/// The listening sockets of one table's text (its header line first).
pub(crate) fn listeners(table: &[u8]) -> Result<Vec<Listener>, TableError> {
    if table.len() > MAX_TABLE_BYTES {
        return Err(TableError::TooLarge);
    }
    let mut out = Vec::new();
    let mut lines = table.split(|&c| c == b'\n');
    // The header names the columns.
    let header = lines.next().unwrap_or_default();
    if header.len() > MAX_LINE || !header.windows(5).any(|w| w == b"inode") {
        return Err(TableError::Malformed);
    }
    for l in lines {
        if l.len() > MAX_LINE {
            return Err(TableError::LineTooLong);
        }
        if l.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(listener) = line(l)? {
            out.push(listener);
        }
    }
    Ok(out)
}

/// The listening sockets of this process's network namespace, from both
/// tables (reading the ambient machine).
pub(crate) fn listeners_ambient() -> Result<Vec<Listener>, TableError> {
    let mut out = Vec::new();
    for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let table = match read_limited(path) {
            Ok(t) => t,
            // No IPv6 in this kernel: no table, no socket in it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.ends_with('6') => continue,
            Err(_) => return Err(TableError::Malformed),
        };
        out.extend(listeners(&table)?);
    }
    Ok(out)
}

fn read_limited(path: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_TABLE_BYTES as u64 + 1)
        .read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HEADER: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

    fn v4_hex(ip: Ipv4Addr) -> String {
        format!("{:08X}", u32::from_ne_bytes(ip.octets()))
    }

    #[test]
    fn listening_sockets_are_read_with_address_port_and_inode() {
        let table = format!(
            "{HEADER}   0: {}:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n   1: {}:8CB2 {}:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 99 1 0000000000000000 20 4 30 10 -1\n",
            v4_hex(Ipv4Addr::LOCALHOST),
            v4_hex(Ipv4Addr::LOCALHOST),
            v4_hex(Ipv4Addr::LOCALHOST)
        );
        let got = listeners(table.as_bytes()).unwrap();
        assert_eq!(
            got,
            vec![Listener {
                addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
                port: 8080,
                inode: 4242
            }]
        );
        let v6 = format!(
            "{HEADER}   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0000000000000000 100 0 0 10 0\n"
        );
        let got = listeners(v6.as_bytes()).unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(got[0].addr, IpAddr::V6(Ipv6Addr::LOCALHOST));
        }
        assert_eq!((got[0].port, got[0].inode), (80, 77));
    }

    #[test]
    fn the_real_tables_show_a_listener_made_here() {
        use std::os::unix::fs::MetadataExt;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let fd = std::os::fd::AsFd::as_fd(&l).try_clone_to_owned().unwrap();
        let inode = std::fs::File::from(fd).metadata().unwrap().ino();
        let all = listeners_ambient().unwrap();
        assert!(
            all.contains(&Listener {
                addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
                port,
                inode
            }),
            "{all:?}"
        );
    }

    #[test]
    fn text_not_in_the_kernels_form_is_refused_whole() {
        for bad in [
            "no header\n",
            &format!("{HEADER}garbage\n"),
            &format!("{HEADER}   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0\n"),
            &format!("{HEADER}   0: 0100007F:1F9 00000000:0000 0A 0 0 0 0 0 12\n"),
            &format!("{HEADER}   0: 0100007:1F90 00000000:0000 0A 0 0 0 0 0 12\n"),
            &format!("{HEADER}   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0 -1\n"),
            &format!(
                "{HEADER}   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0 1{}\n",
                "0".repeat(600)
            ),
        ] {
            assert!(listeners(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(listeners(HEADER.as_bytes()), Ok(vec![]));
    }

    proptest! {
        #[test]
        fn any_bytes_are_read_or_refused_without_panic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = listeners(&data);
            let mut with_header = HEADER.as_bytes().to_vec();
            with_header.extend_from_slice(&data);
            let _ = listeners(&with_header);
        }

        #[test]
        fn a_printed_listener_reads_back(a in any::<[u8; 4]>(), port in any::<u16>(), inode in any::<u64>()) {
            let ip = Ipv4Addr::from(a);
            let table = format!(
                "{HEADER}   0: {}:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 {inode} 1\n",
                v4_hex(ip)
            );
            prop_assert_eq!(listeners(table.as_bytes()), Ok(vec![Listener { addr: IpAddr::V4(ip), port, inode }]));
        }
    }
}
