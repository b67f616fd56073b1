//! The channel to a warm session's init: frames written with the descriptors
//! they carry, and the init's replies read and dispatched.

use super::*;

/// Sends each frame with its descriptors, in order.
pub(super) async fn write_frames(
    stream: Arc<tokio::net::UnixStream>,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    channel: Arc<Channel>,
) {
    while let Some((frame, fds)) = rx.recv().await {
        let mut sent = 0;
        let mut fds = Some(fds);
        while sent < frame.len() {
            let rest = frame.get(sent..).unwrap_or_default();
            let r = stream
                .async_io(tokio::io::Interest::WRITABLE, || {
                    send_with_fds(&stream, rest, fds.as_deref().unwrap_or_default())
                })
                .await;
            match r {
                Ok(n) => {
                    // The descriptors went with the first bytes; ours close.
                    fds = None;
                    sent += n;
                }
                Err(e) => {
                    channel.end(format!("writing to its init: {e}"));
                    return;
                }
            }
        }
    }
}

/// One `sendmsg` of `bytes` with `fds` as `SCM_RIGHTS`.
pub(super) fn send_with_fds(
    stream: &tokio::net::UnixStream,
    bytes: &[u8],
    fds: &[OwnedFd],
) -> std::io::Result<usize> {
    let borrowed: Vec<_> = fds.iter().map(AsFd::as_fd).collect();
    let mut space = vec![
        std::mem::MaybeUninit::uninit();
        rustix::cmsg_space!(ScmRights(borrowed.len().max(1)))
    ];
    let mut cmsg = rustix::net::SendAncillaryBuffer::new(&mut space);
    if !borrowed.is_empty() && !cmsg.push(rustix::net::SendAncillaryMessage::ScmRights(&borrowed)) {
        return Err(std::io::Error::other(
            "too many descriptors for one message",
        ));
    }
    let iov = [std::io::IoSlice::new(bytes)];
    rustix::net::sendmsg(stream, &iov, &mut cmsg, rustix::net::SendFlags::NOSIGNAL)
        .map_err(Into::into)
}

/// Reads the init's replies and hands each to its command.
pub(super) async fn read_replies(stream: Arc<tokio::net::UnixStream>, channel: Arc<Channel>) {
    let mut frames = FrameReader::new(MAX_REPLY_LEN);
    let mut buf = [0u8; 4096];
    loop {
        if stream.readable().await.is_err() {
            break;
        }
        let n = match stream.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => break,
        };
        frames.push(buf.get(..n).unwrap_or_default());
        loop {
            let reply = match frames.next_body() {
                Ok(Some(body)) => Reply::decode(&body),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            let reply = match reply {
                Ok(r) => r,
                Err(e) => {
                    // Not our init's bytes: nothing it says is believed.
                    channel.end(format!("its init sent an unreadable reply: {e}"));
                    return;
                }
            };
            let (id, last) = match reply {
                Reply::Started { id, .. } => (id, false),
                Reply::Failed { id, .. } | Reply::Ended { id, .. } => (id, true),
            };
            if let Ok(mut w) = channel.waiters.lock() {
                let to = if last {
                    w.remove(&id)
                } else {
                    w.get(&id).cloned()
                };
                if let Some(to) = to {
                    let _ = to.send(reply);
                }
            }
        }
    }
    channel.end("its init's socket closed".into());
}
