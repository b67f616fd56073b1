//! The SOCKS5 proxy: CONNECT only; no authentication, or username/password
//! (RFC 1929) with the session's credentials where they are required.

use crate::client::ClientStream;
use crate::egress::Denial;
use crate::events::Protocol;
use crate::session::{Route, Shared, printable};
use crate::socks_wire::{
    Greeting, Methods, Reply, SocksError, parse_greeting, parse_request, parse_userpass,
};
use crate::tunnel::relay;
use net_vocab::Target;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A greeting is at most 257 bytes and a request at most 262; anything
/// beyond them in this buffer is early tunnel data.
const HANDSHAKE_BUFFER: usize = 1024;

/// Serves one client connection.
pub(crate) async fn serve(mut client: ClientStream, shared: Arc<Shared>) {
    let limits = shared.limits;
    let handshake =
        tokio::time::timeout(limits.header_timeout, handshake(&mut client, &shared)).await;
    let (target, rest) = match handshake {
        Ok(Ok(Some(done))) => done,
        Ok(Ok(None)) | Err(_) => return,
        Ok(Err(e)) => {
            if let SocksError::BadDomain(raw) = &e {
                let d = Denial::Malformed("domain outside the host grammar".to_owned());
                let _ = shared.refuse(Protocol::Socks5, printable(raw), d);
            }
            if let Some(reply) = e.reply() {
                let _ = client.write_all(&reply.bytes()).await;
            }
            return;
        }
    };
    match Box::pin(shared.open(Protocol::Socks5, &target)).await {
        Err(d) => {
            let _ = client.write_all(&reply_for(&d).bytes()).await;
        }
        Ok(Route::Intercept(hook, addrs)) => {
            if client.write_all(&Reply::Succeeded.bytes()).await.is_ok() {
                shared
                    .hand_over(hook, Protocol::Socks5, target, addrs, client, rest)
                    .await;
            }
        }
        Ok(Route::Upstream(mut upstream)) => {
            if client.write_all(&Reply::Succeeded.bytes()).await.is_err() {
                return;
            }
            if !rest.is_empty() && upstream.write_all(&rest).await.is_err() {
                return;
            }
            let _ = Box::pin(relay(&mut client, &mut upstream, shared.copying())).await;
        }
    }
}

/// Runs the greeting, the username/password exchange where the session's
/// credentials are required, and the request. `Ok(None)`: the client went
/// away, or offered no acceptable method or wrong credentials (already
/// answered and reported).
async fn handshake(
    client: &mut ClientStream,
    shared: &Shared,
) -> Result<Option<(Target, Vec<u8>)>, SocksError> {
    let methods = match shared.credentials {
        Some(_) => Methods::UserPassOnly,
        None => Methods::NoAuth,
    };
    let mut buf = [0u8; HANDSHAKE_BUFFER];
    let mut len = 0;
    let (greeting, used) = loop {
        if let Some(done) = parse_greeting(&buf[..len], methods)? {
            break done;
        }
        if !fill(client, &mut buf, &mut len).await {
            return Ok(None);
        }
    };
    let unauthenticated = |why: &str| {
        let d = Denial::Unauthenticated(why.to_owned());
        let _ = shared.refuse(Protocol::Socks5, "socks5-auth".to_owned(), d);
    };
    match greeting {
        Greeting::NoAcceptableMethod => {
            if methods == Methods::UserPassOnly {
                unauthenticated("the client offered no username/password authentication");
            }
            let _ = client.write_all(&[0x05, 0xFF]).await;
            return Ok(None);
        }
        Greeting::NoAuth => {
            if client.write_all(&[0x05, 0x00]).await.is_err() {
                return Ok(None);
            }
        }
        // Answered together with the authentication result when the
        // client sent both at once (one write instead of two).
        Greeting::UserPass => {}
    }
    buf.copy_within(used..len, 0);
    len -= used;
    if greeting == Greeting::UserPass {
        let mut method_sent = false;
        let (accepted, used) = loop {
            match parse_userpass(&buf[..len]) {
                Ok(Some((user, pass, used))) => {
                    let ok = shared
                        .credentials
                        .as_ref()
                        .is_some_and(|c| c.accepts_userpass(user, pass));
                    break (ok, used);
                }
                Ok(None) => {}
                Err(_) => break (false, len),
            }
            // The client waits for the method choice before it sends more.
            if !method_sent {
                if client.write_all(&[0x05, 0x02]).await.is_err() {
                    return Ok(None);
                }
                method_sent = true;
            }
            if !fill(client, &mut buf, &mut len).await {
                return Ok(None);
            }
        };
        let status = if accepted { 0x00 } else { 0x01 };
        let reply: &[u8] = if method_sent {
            &[0x01, status]
        } else {
            &[0x05, 0x02, 0x01, status]
        };
        if !accepted {
            unauthenticated("wrong username or password");
            let _ = client.write_all(reply).await;
            return Ok(None);
        }
        if client.write_all(reply).await.is_err() {
            return Ok(None);
        }
        buf.copy_within(used..len, 0);
        len -= used;
    }
    loop {
        if let Some((target, used)) = parse_request(&buf[..len])? {
            return Ok(Some((target, buf[used..len].to_vec())));
        }
        if !fill(client, &mut buf, &mut len).await {
            return Ok(None);
        }
    }
}

/// Reads more bytes; false on end-of-stream, error or a full buffer.
async fn fill(client: &mut ClientStream, buf: &mut [u8], len: &mut usize) -> bool {
    let Some(free) = buf.get_mut(*len..) else {
        return false;
    };
    if free.is_empty() {
        return false;
    }
    match client.read(free).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            *len += n;
            true
        }
    }
}

fn reply_for(d: &Denial) -> Reply {
    match d {
        Denial::Policy(_)
        | Denial::Address { .. }
        | Denial::DenylistedAddress(_)
        | Denial::Malformed(_)
        | Denial::Unauthenticated(_) => Reply::NotAllowed,
        Denial::NotFound | Denial::DnsTimeout | Denial::ConnectTimeout => Reply::HostUnreachable,
        Denial::Refused => Reply::Refused,
        Denial::Unreachable(_) => Reply::NetworkUnreachable,
    }
}
